#include "backend/cpu/drivers/float_strip_panel.h"

#include <algorithm>

#include "core/check.h"

namespace folio::cpu {

namespace {

// Activation rows go in blocks of about kXBlockBytes (L2), at most
// kMaxBlockCols (the accumulator scratch). Chunks of 256 or 1024 and blocks
// of 256 KiB - 2 MiB measured no better on AVX-512.
constexpr size_t kXBlockBytes = 1 << 20;
constexpr int64_t kMaxBlockCols = 128;

}  // namespace

void run_float_strips(const StripShape& shape, size_t elem_bytes, int64_t k, const void* w,
                      size_t w_stride, int64_t nr, const void* x, size_t x_stride, int64_t nc,
                      float* out, size_t out_stride) {
  FOLIO_CHECK(shape.rows >= 1 && shape.rows <= kMaxStripRows && shape.cols >= 1 &&
              shape.lanes >= 1 && shape.lanes <= kMaxStripLanes);
  auto* out_bytes = reinterpret_cast<unsigned char*>(out);
  if (k == 0) {
    for (int64_t c = 0; c < nc; ++c) {
      float* o = reinterpret_cast<float*>(out_bytes + c * out_stride);
      for (int64_t r = 0; r < nr; ++r) o[r] = 0.0f;
    }
    return;
  }
  alignas(64) float wbuf[kMaxStripRows * kStripPitch];  // one strip chunk, widened
  alignas(64) float acc_buf[kMaxBlockCols * kMaxStripRows * kMaxStripLanes];
  const int cols = shape.cols;
  const int64_t max_block = kMaxBlockCols / cols * cols;
  const int64_t block = std::clamp<int64_t>(
      static_cast<int64_t>(kXBlockBytes / (static_cast<size_t>(k) * 4)) / cols * cols, cols,
      max_block);
  const auto* wp = static_cast<const unsigned char*>(w);
  const auto* xp = static_cast<const unsigned char*>(x);
  StripArgs a;
  a.w_stride = w_stride;
  a.wb = wbuf;
  a.x_stride = x_stride;
  a.out_stride = out_stride;
  for (int64_t cb = 0; cb < nc; cb += block) {
    const int64_t ce = std::min(nc, cb + block);
    for (int64_t r0 = 0; r0 < nr; r0 += shape.rows) {
      const int rr = static_cast<int>(std::min<int64_t>(shape.rows, nr - r0));
      const unsigned char* strip = wp + r0 * w_stride;
      for (int64_t k0 = 0; k0 < k; k0 += kStripChunk) {
        a.kk = std::min<int64_t>(kStripChunk, k - k0);
        a.first = k0 == 0;
        a.last = k0 + a.kk == k;
        a.w = strip + k0 * elem_bytes;
        a.pf = a.last ? strip + shape.rows * w_stride : a.w + kStripChunk * elem_bytes;
        for (int64_t c0 = cb; c0 < ce; c0 += cols) {
          const int cc = static_cast<int>(std::min<int64_t>(cols, ce - c0));
          a.x = reinterpret_cast<const float*>(xp + c0 * x_stride) + k0;
          a.acc = acc_buf + (c0 - cb) * shape.rows * shape.lanes;
          a.out = reinterpret_cast<float*>(out_bytes + c0 * out_stride) + r0;
          // The first tile widens the chunk, the second prefetches the next.
          StripMode mode = StripMode::kRead;
          if (c0 == cb) {
            mode = ce - cb > cols ? StripMode::kWiden : StripMode::kWidenPrefetch;
          } else if (c0 == cb + cols) {
            mode = StripMode::kReadPrefetch;
          }
          shape.tile(rr, mode, cc)(a);
        }
      }
    }
  }
}

}  // namespace folio::cpu
