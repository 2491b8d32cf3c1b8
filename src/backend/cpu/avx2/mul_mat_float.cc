// AVX2 mul_mat for float weights (F32, F16, BF16) x F32 activations.
//
// Layout: W rows [K] contiguous (f32, f16 or bf16), X rows [K] f32.
// Tile: up to 4 weight rows x 2 activation rows; each step of 8 elements
// loads (and widens) 4 W vectors and 2 X vectors and issues 8 FMAs into 8
// independent ymm accumulators (11 of the 16 registers, no spills). F16
// widens with vcvtph2ps, BF16 by a 16-bit shift; activations stay f32. The
// K tail (< 8 elements) is summed in scalar code and added after the lanes.
// Each output is one accumulator, so its value does not depend on the tile
// shape or the thread count.
#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "core/check.h"
#include "core/fp16.h"

namespace folio::cpu {

namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 2;

template <DType WT>
FOLIO_INLINE_AVX2 __m256 load_w(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + i);
  } else {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
    if constexpr (WT == DType::F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <DType WT>
FOLIO_INLINE_AVX2 float w_scalar(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (WT == DType::F16) {
    return _cvtsh_ss(static_cast<const uint16_t*>(row)[i]);
  } else {
    return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX2 void float_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                  size_t x_stride, float* out, size_t out_stride) {
  const unsigned char* wr[R];
  const float* xr[C];
  for (int r = 0; r < R; ++r) wr[r] = static_cast<const unsigned char*>(w) + r * w_stride;
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  constexpr size_t kElem = WT == DType::F32 ? 4 : 2;
  const size_t pf = R * w_stride;  // the next tile's rows
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm256_loadu_ps(xr[c] + i);
    for (int r = 0; r < R; ++r) {
      avx2::prefetch_span<8 * kElem>(wr[r] + i * kElem + pf);
      const __m256 wv = load_w<WT>(wr[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) {
      float tail = 0.0f;
      for (int64_t j = i; j < k; ++j) tail += w_scalar<WT>(wr[r], j) * xr[c][j];
      o[r] = avx2::hsum(acc[r][c]) + tail;
    }
  }
}

template <DType WT>
FOLIO_TARGET_AVX2 void float_tile_any(int64_t k, const void* w, size_t w_stride, int nr,
                                      const void* x, size_t x_stride, int nc, float* out,
                                      size_t out_stride) {
  using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);
  static constexpr Fn kTable[kTileRows][kTileCols] = {
      {float_tile<WT, 1, 1>, float_tile<WT, 1, 2>},
      {float_tile<WT, 2, 1>, float_tile<WT, 2, 2>},
      {float_tile<WT, 3, 1>, float_tile<WT, 3, 2>},
      {float_tile<WT, 4, 1>, float_tile<WT, 4, 2>},
  };
  kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

}  // namespace

MatMulSpec float_mul_mat_spec_avx2(DType w) {
  switch (w) {
    case DType::F32:
      return {ActFormat::kF32, kTileRows, kTileCols, &float_tile_any<DType::F32>};
    case DType::F16:
      return {ActFormat::kF32, kTileRows, kTileCols, &float_tile_any<DType::F16>};
    case DType::BF16:
      return {ActFormat::kF32, kTileRows, kTileCols, &float_tile_any<DType::BF16>};
    default:
      break;
  }
  FOLIO_CHECK_MSG(false, "no avx2 float mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace folio::cpu
