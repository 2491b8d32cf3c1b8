// Portable tier of the tiled flash attention (tier kScalar): the primitives
// of flash_attn_tiled.h in plain C++, the structure reference for the SIMD
// tiers. Its canonical arithmetic: q.k as one sequential f32 sum over the
// zero-padded head dimension; std::exp and std::tanh; the tile's sum of p in
// ascending j; acc = acc * ms, then acc += p_j * v_j in ascending j. Packed
// rows are converted exactly as convert_rows does, so both paths agree.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/drivers/flash_attn_tiled.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace folio::cpu {

namespace {

void convert_rows_scalar(DType dtype, const void* const* src, int n, int64_t d, float* dst,
                         int64_t ld) {
  for (int i = 0; i < n; ++i) {
    float* out = dst + i * ld;
    if (dtype == DType::F32) {
      std::memcpy(out, src[i], sizeof(float) * static_cast<size_t>(d));
    } else if (dtype == DType::F16) {
      const auto* h = static_cast<const uint16_t*>(src[i]);
      for (int64_t c = 0; c < d; ++c) {
        uint16_t bits;
        std::memcpy(&bits, h + c, sizeof(bits));
        out[c] = f16_to_f32(bits);
      }
    } else {
      quant::dequantize_row_ref(dtype, src[i], out, d);
    }
    for (int64_t c = d; c < ld; ++c) out[c] = 0.0f;
  }
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

void scores_scalar(const float* q, int n_rows, const float* k, int64_t ld, const int* lo,
                   const int* hi, float* s, int lds) {
  for (int r = 0; r < n_rows; ++r) {
    for (int j = lo[r]; j < hi[r]; ++j) s[r * lds + j] = dot(q + r * ld, k + j * ld, ld);
  }
}

void scores_packed_scalar(const float* q, int n_rows, int64_t ld, DType dtype, const void* const* k,
                          int64_t d, int jb, int je, float* s, int lds) {
  std::vector<float> kf(static_cast<size_t>(ld));
  for (int j = jb; j < je; ++j) {
    convert_rows_scalar(dtype, &k[j], 1, d, kf.data(), ld);
    for (int r = 0; r < n_rows; ++r) s[r * lds + j] = dot(q + r * ld, kf.data(), ld);
  }
}

float softmax_scalar(const float* s, int jb, int je, const FlashScoreParams& p, float* m_io,
                     float* l_io, float* pr) {
  const float tmax = flash_logits(s, jb, je, p, pr);
  float m = *m_io, l = *l_io;
  const float ms = flash_raise_max(tmax, m, l, [](float x) { return std::exp(x); });
  float sum = 0.0f;
  for (int j = jb; j < je; ++j) {
    pr[j] = std::exp(pr[j] - m);
    sum += pr[j];
  }
  *m_io = m;
  *l_io = l + sum;
  return ms;
}

void pv_scalar(const float* p, int ldp, const float* ms, int n_rows, int jb, int je, float* acc,
               int64_t lda, DType dtype, const void* const* v, int64_t dv, int64_t ldv) {
  std::vector<float> vf(static_cast<size_t>(ldv));
  for (int r = 0; r < n_rows; ++r) {
    float* a = acc + r * lda;
    for (int64_t c = 0; c < ldv; ++c) a[c] *= ms[r];
  }
  for (int j = jb; j < je; ++j) {
    convert_rows_scalar(dtype, &v[j], 1, dv, vf.data(), ldv);
    for (int r = 0; r < n_rows; ++r) {
      float* a = acc + r * lda;
      const float pj = p[r * ldp + j];
      for (int64_t c = 0; c < ldv; ++c) a[c] += pj * vf[static_cast<size_t>(c)];
    }
  }
}

}  // namespace

FOLIO_FLASH_ATTN_KERNEL(scalar)

}  // namespace folio::cpu
