// NEON mul_mat tiles for F32, F16 and BF16 weights x F32 activations, and
// for the quantized types without an integer tile (dequantized per block).
// A tile is 4 weight rows x 2 activation rows; each (row, column) pair owns
// one 4-lane f32 accumulator, fed by FMA 4 elements at a time (F16 widened
// by FCVTL, BF16 by a 16-bit shift), summed across lanes at the end, then
// the K tail (k % 4 elements) is added one FMA at a time in ascending order.
// An output's arithmetic depends only on K, never on the tile shape, so a
// row computed alone or in a batch gives the same bits.
#include <cmath>
#include <cstring>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "core/check.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace folio::cpu {

namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 2;

template <DType WT>
FOLIO_INLINE_NEON float32x4_t load4(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return vld1q_f32(static_cast<const float*>(row) + i);
  } else if constexpr (WT == DType::F16) {
    return neon::load_f16x4(static_cast<const uint16_t*>(row) + i);
  } else {
    return neon::load_bf16x4(static_cast<const uint16_t*>(row) + i);
  }
}

template <DType WT>
FOLIO_INLINE_NEON float load1(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return static_cast<const float*>(row)[i];
  } else {
    uint16_t h;
    std::memcpy(&h, static_cast<const uint16_t*>(row) + i, 2);
    return WT == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
}

template <DType WT, int R, int C>
void float_tile(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                float* out, size_t out_stride) {
  const void* wr[R];
  const float* xr[C];
  for (int r = 0; r < R; ++r) wr[r] = static_cast<const unsigned char*>(w) + r * w_stride;
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  float32x4_t acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = vdupq_n_f32(0.0f);
  }
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) {
    float32x4_t xv[C];
    for (int c = 0; c < C; ++c) xv[c] = vld1q_f32(xr[c] + i);
    for (int r = 0; r < R; ++r) {
      const float32x4_t wv = load4<WT>(wr[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = vfmaq_f32(acc[r][c], wv, xv[c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) {
      float s = neon::hsum(acc[r][c]);
      for (int64_t t = i; t < k; ++t) s = std::fma(load1<WT>(wr[r], t), xr[c][t], s);
      o[r] = s;
    }
  }
}

// Quantized weights without an integer tile (Q2_K, Q3_K, IQ4_XS): each
// block of a weight row is dequantized by the reference (into a buffer of
// the tile's rows), then meets the F32 activations as in float_tile.
template <DType WT, int R, int C>
void dequant_tile(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                  float* out, size_t out_stride) {
  constexpr int64_t kB = 256;  // elements per block of every type here
  static_assert(kB % 4 == 0);
  const float* xr[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  const size_t block_bytes = row_size(WT, kB);
  float32x4_t acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = vdupq_n_f32(0.0f);
  }
  alignas(16) float wf[R][kB];
  for (int64_t b = 0; b < k / kB; ++b) {
    for (int r = 0; r < R; ++r) {
      const auto* row = static_cast<const unsigned char*>(w) + r * w_stride;
      quant::dequantize_row_ref(WT, row + b * block_bytes, wf[r], kB);
    }
    for (int64_t i = 0; i < kB; i += 4) {
      float32x4_t xv[C];
      for (int c = 0; c < C; ++c) xv[c] = vld1q_f32(xr[c] + b * kB + i);
      for (int r = 0; r < R; ++r) {
        const float32x4_t wv = vld1q_f32(wf[r] + i);
        for (int c = 0; c < C; ++c) acc[r][c] = vfmaq_f32(acc[r][c], wv, xv[c]);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = neon::hsum(acc[r][c]);
  }
}

using TileFn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);

// A DotTileFn over Tile<WT, R, C> (R <= 4, C <= 2): float_tile or dequant_tile.
template <DType WT, template <DType, int, int> class Tile>
void tile_any(int64_t k, const void* w, size_t w_stride, int nr, const void* x, size_t x_stride,
              int nc, float* out, size_t out_stride) {
  static constexpr TileFn kTable[4][2] = {{Tile<WT, 1, 1>::run, Tile<WT, 1, 2>::run},
                                          {Tile<WT, 2, 1>::run, Tile<WT, 2, 2>::run},
                                          {Tile<WT, 3, 1>::run, Tile<WT, 3, 2>::run},
                                          {Tile<WT, 4, 1>::run, Tile<WT, 4, 2>::run}};
  kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

template <DType WT, int R, int C>
struct FloatTile {
  static constexpr TileFn run = float_tile<WT, R, C>;
};
template <DType WT, int R, int C>
struct DequantTile {
  static constexpr TileFn run = dequant_tile<WT, R, C>;
};

template <DType WT, template <DType, int, int> class Tile>
MatMulSpec spec() {
  return {ActFormat::kF32, kTileRows, kTileCols, &tile_any<WT, Tile>};
}

}  // namespace

MatMulSpec float_mul_mat_spec_neon(DType w) {
  switch (w) {
    case DType::F32: return spec<DType::F32, FloatTile>();
    case DType::F16: return spec<DType::F16, FloatTile>();
    case DType::BF16: return spec<DType::BF16, FloatTile>();
    case DType::Q2_K: return spec<DType::Q2_K, DequantTile>();
    case DType::Q3_K: return spec<DType::Q3_K, DequantTile>();
    case DType::IQ4_XS: return spec<DType::IQ4_XS, DequantTile>();
    default:
      break;
  }
  FOLIO_CHECK_MSG(false, "no neon float mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace folio::cpu
