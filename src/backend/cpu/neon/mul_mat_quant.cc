// NEON mul_mat tiles for quantized weights x F32 activations quantized once
// per op (mul_mat_tiled): Q8_0 rows (Q8Row32) for the 32-element blocks
// (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, and the FP4 formats MXFP4 and NVFP4),
// Q8_K super-blocks for the K-quants
// (Q4_K, Q5_K, Q6_K), activations quantized by neon/quantize_act.cc.
//
// Every weight code becomes a signed byte before it meets the activation
// quants, so one signed byte dot product serves all formats:
//   Q4_0 nibble - 8, Q5_0 (nibble | fifth bit << 4) - 16, Q8_0 as stored,
//   IQ4_NL levels and FP4 levels (kFP4Values, twice the E2M1 values) by a
//   table lookup (TBL), Q4_1 / Q5_1 / Q4_K / Q5_K codes
//   as they are (0..31), Q6_K code - 32 (so no offset term is needed).
// The byte dot product is SDOT on the neon_dotprod tier and SMULL + SADALP
// on the neon tier (neon/simd.h); the integer result of every block (or
// sub-block group) is the exact dot product either way, so both tiers give
// the same bits. Per block, one f32 multiply-add applies the scales:
//   32-element blocks: acc += isum * (dw * dx)   [+ mw * (dx * sum(x))]
//   MXFP4: dw = kE8M0Half[e]; NVFP4, per 16-element sub-block of the 32
//   activation elements: acc += isum_s * (kUE4M3Half[d[s]] * dx)
//   K-quants, per super-block: acc += isum * (d * dx)   [- msum * (dmin * dx)]
// where isum / msum are exact integer sums of scale * sub-block dot and of
// min * (activation sums of the sub-block). Tile: 2 weight rows x 2
// activation rows; each output's f32 order depends only on K. On the
// neon_i8mm tier a full 2 x 2 tile gets its four integer dot products from
// SMMLA (MmlaI8::dot2x2): the same integers, so the same bits.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using neon::half_to_float;
using quant::kQK;
using quant::kQKK;

constexpr int kTileRows = 2;
constexpr int kTileCols = 2;

template <int R, int C>
void store(const float (&acc)[R][C], float* out, size_t out_stride) {
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = acc[r][c];
  }
}

// Exact dot product of 32 signed bytes (a0 a1) with (b0 b1).
template <class D>
FOLIO_INLINE_NEON int32_t dot32(int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1) {
  return vaddvq_s32(D::dot(D::dot(vdupq_n_s32(0), a0, b0), a1, b1));
}
template <class D>
FOLIO_INLINE_NEON int32_t dot16(int8x16_t a, int8x16_t b) {
  return vaddvq_s32(D::dot(vdupq_n_s32(0), a, b));
}

// A 2 x 2 tile through D::dot2x2 (the neon_i8mm tier): the weight rows'
// and activation rows' n x 16 bytes, summed into isum[r][c] (+=).
template <class D, int N>
FOLIO_INLINE_NEON void dot_tile2x2(const int8x16_t (&w0)[N], const int8x16_t (&w1)[N],
                                   const int8x16_t (&x0)[N], const int8x16_t (&x1)[N],
                                   int32_t (&isum)[2][2]) {
  int32x4_t s = vdupq_n_s32(0);
  for (int i = 0; i < N; ++i) s = D::dot2x2(s, w0[i], w1[i], x0[i], x1[i]);
  isum[0][0] += vgetq_lane_s32(s, 0);
  isum[0][1] += vgetq_lane_s32(s, 1);
  isum[1][0] += vgetq_lane_s32(s, 2);
  isum[1][1] += vgetq_lane_s32(s, 3);
}

// Whether a tile of this shape takes the 2 x 2 path.
template <class D, int R, int C>
inline constexpr bool kTile2x2 = neon::kHasDot2x2<D> && R == 2 && C == 2;

// ------------------------------------------------------- 32-element blocks

// Byte e of the result = 0x10 where bit (base + e) of the u32 at qh is set.
FOLIO_INLINE_NEON uint8x16_t fifth_bits(const uint8_t* qh, int base) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  bits >>= base;
  const uint8x16_t spread = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(bits & 0xFF)),
                                        vdup_n_u8(static_cast<uint8_t>((bits >> 8) & 0xFF)));
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vandq_u8(vtstq_u8(spread, vld1q_u8(kBit)), vdupq_n_u8(0x10));
}

// The 32 codes of a block as signed bytes (offsets removed): elements 0-15
// in c0, 16-31 in c1.
template <DType WT>
FOLIO_INLINE_NEON void legacy_codes(const typename LegacyFormat<WT>::Block& blk, int8x16_t& c0,
                                    int8x16_t& c1) {
  if constexpr (WT == DType::Q8_0) {
    c0 = vld1q_s8(blk.qs);
    c1 = vld1q_s8(blk.qs + 16);
  } else {
    const uint8x16_t q = vld1q_u8(blk.qs);
    uint8x16_t lo = vandq_u8(q, vdupq_n_u8(0x0F));
    uint8x16_t hi = vshrq_n_u8(q, 4);
    if constexpr (WT == DType::IQ4_NL) {
      const int8x16_t table = vld1q_s8(quant::kIQ4NLValues);
      c0 = vqtbl1q_s8(table, lo);
      c1 = vqtbl1q_s8(table, hi);
      return;
    }
    if constexpr (WT == DType::Q5_0 || WT == DType::Q5_1) {
      lo = vorrq_u8(lo, fifth_bits(blk.qh, 0));
      hi = vorrq_u8(hi, fifth_bits(blk.qh, 16));
    }
    c0 = vreinterpretq_s8_u8(lo);
    c1 = vreinterpretq_s8_u8(hi);
    if constexpr (WT == DType::Q4_0) {
      c0 = vsubq_s8(c0, vdupq_n_s8(8));
      c1 = vsubq_s8(c1, vdupq_n_s8(8));
    } else if constexpr (WT == DType::Q5_0) {
      c0 = vsubq_s8(c0, vdupq_n_s8(16));
      c1 = vsubq_s8(c1, vdupq_n_s8(16));
    }
  }
}

template <class D, DType WT>
struct LegacyTile {
  template <int R, int C>
  struct Shape {
    static void run(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                    float* out, size_t out_stride) {
      using L = LegacyFormat<WT>;
      using Block = typename L::Block;
      const QuantTileRows<Block, Q8Row32, R, C> rows(k, w, w_stride, x, x_stride);
      float acc[R][C] = {};
      for (int64_t b = 0; b < k / kQK; ++b) {
        int8x16_t x0[C], x1[C];
        for (int c = 0; c < C; ++c) {
          x0[c] = vld1q_s8(rows.x[c].qs + b * kQK);
          x1[c] = vld1q_s8(rows.x[c].qs + b * kQK + 16);
        }
        int32_t isums[R][C] = {};
        if constexpr (kTile2x2<D, R, C>) {
          int8x16_t c0[2], c1[2];
          legacy_codes<WT>(rows.w[0][b], c0[0], c1[0]);
          legacy_codes<WT>(rows.w[1][b], c0[1], c1[1]);
          dot_tile2x2<D, 2>({c0[0], c1[0]}, {c0[1], c1[1]}, {x0[0], x1[0]}, {x0[1], x1[1]}, isums);
        } else {
          for (int r = 0; r < R; ++r) {
            int8x16_t w0, w1;
            legacy_codes<WT>(rows.w[r][b], w0, w1);
            for (int c = 0; c < C; ++c) isums[r][c] = dot32<D>(w0, w1, x0[c], x1[c]);
          }
        }
        for (int r = 0; r < R; ++r) {
          const Block& blk = rows.w[r][b];
          const float dw = half_to_float(&blk.d);
          for (int c = 0; c < C; ++c) {
            const int32_t isum = isums[r][c];
            acc[r][c] = std::fma(static_cast<float>(isum), dw * rows.x[c].d[b], acc[r][c]);
            if constexpr (L::kMin) {
              acc[r][c] = std::fma(half_to_float(&blk.m), rows.x[c].ds[b], acc[r][c]);
            }
          }
        }
      }
      store<R, C>(acc, out, out_stride);
    }
  };
};

// ------------------------------------------------------------- FP4 blocks

// MXFP4: a 32-element block per activation block. NVFP4: half h of a
// 64-element block per activation block, sub-blocks 2h and 2h + 1, each the
// low nibbles of its 8 bytes then the high nibbles.
template <class D, DType WT>
struct Fp4Tile {
  template <int R, int C>
  struct Shape {
    static void run(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                    float* out, size_t out_stride) {
      const QuantTileRows<unsigned char, Q8Row32, R, C> rows(k, w, w_stride, x, x_stride);
      const int8x16_t table = vld1q_s8(quant::kFP4Values);
      const uint8x16_t m4 = vdupq_n_u8(0x0F);
      float acc[R][C] = {};
      for (int64_t b = 0; b < k / kQK; ++b) {
        int8x16_t x0[C], x1[C];
        for (int c = 0; c < C; ++c) {
          x0[c] = vld1q_s8(rows.x[c].qs + b * kQK);
          x1[c] = vld1q_s8(rows.x[c].qs + b * kQK + 16);
        }
        // The codes of row r's block (MXFP4) or block half (NVFP4): 0-15, 16-31.
        auto codes = [&](int r, int8x16_t& w0, int8x16_t& w1) {
          if constexpr (WT == DType::MXFP4) {
            const auto* blk = reinterpret_cast<const quant::BlockMXFP4*>(rows.w[r]) + b;
            const uint8x16_t q = vld1q_u8(blk->qs);
            w0 = vqtbl1q_s8(table, vandq_u8(q, m4));
            w1 = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
          } else {
            const auto* blk = reinterpret_cast<const quant::BlockNVFP4*>(rows.w[r]) + b / 2;
            const uint8x16_t q = vld1q_u8(blk->qs + 16 * (b & 1));
            const uint8x16_t lo = vandq_u8(q, m4), hi = vshrq_n_u8(q, 4);
            w0 = vqtbl1q_s8(table, vcombine_u8(vget_low_u8(lo), vget_low_u8(hi)));
            w1 = vqtbl1q_s8(table, vcombine_u8(vget_high_u8(lo), vget_high_u8(hi)));
          }
        };
        // MXFP4: isum[0] the block's dot; NVFP4: isum[0] / isum[1] its two sub-blocks'.
        int32_t isum[2][R][C] = {};
        if constexpr (kTile2x2<D, R, C>) {
          int8x16_t a0, a1, b0, b1;
          codes(0, a0, a1);
          codes(1, b0, b1);
          if constexpr (WT == DType::MXFP4) {
            dot_tile2x2<D, 2>({a0, a1}, {b0, b1}, {x0[0], x1[0]}, {x0[1], x1[1]}, isum[0]);
          } else {
            dot_tile2x2<D, 1>({a0}, {b0}, {x0[0]}, {x0[1]}, isum[0]);
            dot_tile2x2<D, 1>({a1}, {b1}, {x1[0]}, {x1[1]}, isum[1]);
          }
        } else {
          for (int r = 0; r < R; ++r) {
            int8x16_t w0, w1;
            codes(r, w0, w1);
            for (int c = 0; c < C; ++c) {
              if constexpr (WT == DType::MXFP4) {
                isum[0][r][c] = dot32<D>(w0, w1, x0[c], x1[c]);
              } else {
                isum[0][r][c] = dot16<D>(w0, x0[c]);
                isum[1][r][c] = dot16<D>(w1, x1[c]);
              }
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          if constexpr (WT == DType::MXFP4) {
            const auto* blk = reinterpret_cast<const quant::BlockMXFP4*>(rows.w[r]) + b;
            const float dw = quant::kE8M0Half[blk->e];
            for (int c = 0; c < C; ++c) {
              acc[r][c] =
                  std::fma(static_cast<float>(isum[0][r][c]), dw * rows.x[c].d[b], acc[r][c]);
            }
          } else {
            static_assert(WT == DType::NVFP4);
            const auto* blk = reinterpret_cast<const quant::BlockNVFP4*>(rows.w[r]) + b / 2;
            const int h = static_cast<int>(b & 1);
            const float d0 = quant::kUE4M3Half[blk->d[2 * h]];
            const float d1 = quant::kUE4M3Half[blk->d[2 * h + 1]];
            for (int c = 0; c < C; ++c) {
              const float dx = rows.x[c].d[b];
              acc[r][c] = std::fma(static_cast<float>(isum[0][r][c]), d0 * dx, acc[r][c]);
              acc[r][c] = std::fma(static_cast<float>(isum[1][r][c]), d1 * dx, acc[r][c]);
            }
          }
        }
      }
      store<R, C>(acc, out, out_stride);
    }
  };
};

// ---------------------------------------------------------------- K-quants

template <int R, int C, typename Block>
struct KRows {
  const Block* w[R];
  const quant::BlockQ8_K* x[C];
  KRows(const void* wp, size_t w_stride, const void* xp, size_t x_stride) {
    for (int r = 0; r < R; ++r) {
      w[r] = reinterpret_cast<const Block*>(static_cast<const unsigned char*>(wp) + r * w_stride);
    }
    for (int c = 0; c < C; ++c) {
      x[c] = reinterpret_cast<const quant::BlockQ8_K*>(static_cast<const unsigned char*>(xp) +
                                                       c * x_stride);
    }
  }
};

// Q4_K / Q5_K: 32 nibble bytes per 64 elements (low nibble: group 2j, high:
// group 2j+1); Q5_K adds qh[l] bit 2j / 2j+1 as bit 4.
template <class D, bool kQ5>
struct Q45KTile {
  template <int R, int C>
  struct Shape {
    static void run(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                    float* out, size_t out_stride) {
      using Block = std::conditional_t<kQ5, quant::BlockQ5_K, quant::BlockQ4_K>;
      const KRows<R, C, Block> t(w, w_stride, x, x_stride);
      float acc[R][C] = {};
      const uint8x16_t m4 = vdupq_n_u8(0x0F);
      for (int64_t sb = 0; sb < k / kQKK; ++sb) {
        int32_t isum[R][C] = {};
        uint8_t sc[R][8], mn[R][8];
        for (int r = 0; r < R; ++r) {
          for (int j = 0; j < 8; ++j) {
            quant::unpack_scale_min_k4(j, t.w[r][sb].scales, &sc[r][j], &mn[r][j]);
          }
        }
        for (int j = 0; j < kQKK / 64; ++j) {
          int8x16_t xq[C][4];
          for (int c = 0; c < C; ++c) {
            for (int i = 0; i < 4; ++i) xq[c][i] = vld1q_s8(t.x[c][sb].qs + 64 * j + 16 * i);
          }
          // Row r's codes of groups 2j (lo) and 2j + 1 (hi), 32 each.
          auto codes = [&](int r, int8x16_t(&lo)[2], int8x16_t(&hi)[2]) {
            const uint8_t* qs = t.w[r][sb].qs + 32 * j;
            const uint8x16_t q0 = vld1q_u8(qs), q1 = vld1q_u8(qs + 16);
            uint8x16_t lo0 = vandq_u8(q0, m4), lo1 = vandq_u8(q1, m4);
            uint8x16_t hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
            if constexpr (kQ5) {
              const uint8x16_t h0 = vld1q_u8(t.w[r][sb].qh), h1 = vld1q_u8(t.w[r][sb].qh + 16);
              const uint8x16_t bl = vdupq_n_u8(static_cast<uint8_t>(1u << (2 * j)));
              const uint8x16_t bh = vdupq_n_u8(static_cast<uint8_t>(1u << (2 * j + 1)));
              const uint8x16_t m10 = vdupq_n_u8(0x10);
              lo0 = vorrq_u8(lo0, vandq_u8(vtstq_u8(h0, bl), m10));
              lo1 = vorrq_u8(lo1, vandq_u8(vtstq_u8(h1, bl), m10));
              hi0 = vorrq_u8(hi0, vandq_u8(vtstq_u8(h0, bh), m10));
              hi1 = vorrq_u8(hi1, vandq_u8(vtstq_u8(h1, bh), m10));
            }
            lo[0] = vreinterpretq_s8_u8(lo0);
            lo[1] = vreinterpretq_s8_u8(lo1);
            hi[0] = vreinterpretq_s8_u8(hi0);
            hi[1] = vreinterpretq_s8_u8(hi1);
          };
          int32_t dl[R][C] = {}, dh[R][C] = {};
          if constexpr (kTile2x2<D, R, C>) {
            int8x16_t lo0[2], hi0[2], lo1[2], hi1[2];
            codes(0, lo0, hi0);
            codes(1, lo1, hi1);
            dot_tile2x2<D, 2>(lo0, lo1, {xq[0][0], xq[0][1]}, {xq[1][0], xq[1][1]}, dl);
            dot_tile2x2<D, 2>(hi0, hi1, {xq[0][2], xq[0][3]}, {xq[1][2], xq[1][3]}, dh);
          } else {
            for (int r = 0; r < R; ++r) {
              int8x16_t lo[2], hi[2];
              codes(r, lo, hi);
              for (int c = 0; c < C; ++c) {
                dl[r][c] = dot32<D>(lo[0], lo[1], xq[c][0], xq[c][1]);
                dh[r][c] = dot32<D>(hi[0], hi[1], xq[c][2], xq[c][3]);
              }
            }
          }
          for (int r = 0; r < R; ++r) {
            for (int c = 0; c < C; ++c) {
              isum[r][c] += sc[r][2 * j] * dl[r][c] + sc[r][2 * j + 1] * dh[r][c];
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          const float d = half_to_float(&t.w[r][sb].d);
          const float dmin = half_to_float(&t.w[r][sb].dmin);
          for (int c = 0; c < C; ++c) {
            const int16_t* bs = t.x[c][sb].bsums;
            int32_t msum = 0;
            for (int g = 0; g < 8; ++g) msum += mn[r][g] * (bs[2 * g] + bs[2 * g + 1]);
            const float dx = t.x[c][sb].d;
            acc[r][c] = std::fma(static_cast<float>(isum[r][c]), d * dx, acc[r][c]);
            acc[r][c] = std::fma(-static_cast<float>(msum), dmin * dx, acc[r][c]);
          }
        }
      }
      store<R, C>(acc, out, out_stride);
    }
  };
};

// Q6_K: per 128-element half h, quarter Q (32 elements): low 4 bits from ql
// (bytes 32 * (Q & 1) .., low nibble for Q < 2), bits 4-5 from qh bit pair
// Q; 16-element groups g = 8h + 2Q (+1) with signed scales.
template <class D>
struct Q6KTile {
  template <int R, int C>
  struct Shape {
    static void run(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                    float* out, size_t out_stride) {
      const KRows<R, C, quant::BlockQ6_K> t(w, w_stride, x, x_stride);
      float acc[R][C] = {};
      const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30);
      const int8x16_t off = vdupq_n_s8(32);
      for (int64_t sb = 0; sb < k / kQKK; ++sb) {
        int32_t isum[R][C] = {};
        for (int h = 0; h < 2; ++h) {
          for (int q = 0; q < 4; ++q) {
            int8x16_t x0[C], x1[C];
            for (int c = 0; c < C; ++c) {
              x0[c] = vld1q_s8(t.x[c][sb].qs + 128 * h + 32 * q);
              x1[c] = vld1q_s8(t.x[c][sb].qs + 128 * h + 32 * q + 16);
            }
            // Row r's codes of the quarter's two 16-element groups.
            auto codes = [&](int r, int8x16_t& c0, int8x16_t& c1) {
              const quant::BlockQ6_K& b = t.w[r][sb];
              const uint8_t* ql = b.ql + 64 * h + 32 * (q & 1);
              const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16);
              const uint8x16_t h0 = vld1q_u8(b.qh + 32 * h), h1 = vld1q_u8(b.qh + 32 * h + 16);
              const uint8x16_t lo0 = q < 2 ? vandq_u8(l0, m4) : vshrq_n_u8(l0, 4);
              const uint8x16_t lo1 = q < 2 ? vandq_u8(l1, m4) : vshrq_n_u8(l1, 4);
              // qh bit pair q to bits 4-5.
              const int8x16_t sh = vdupq_n_s8(static_cast<int8_t>(4 - 2 * q));
              const uint8x16_t hb0 = vandq_u8(vshlq_u8(h0, sh), m30);
              const uint8x16_t hb1 = vandq_u8(vshlq_u8(h1, sh), m30);
              c0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo0, hb0)), off);
              c1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo1, hb1)), off);
            };
            const int g = 8 * h + 2 * q;
            int32_t d0[R][C] = {}, d1[R][C] = {};
            if constexpr (kTile2x2<D, R, C>) {
              int8x16_t a0, a1, b0, b1;
              codes(0, a0, a1);
              codes(1, b0, b1);
              dot_tile2x2<D, 1>({a0}, {b0}, {x0[0]}, {x0[1]}, d0);
              dot_tile2x2<D, 1>({a1}, {b1}, {x1[0]}, {x1[1]}, d1);
            } else {
              for (int r = 0; r < R; ++r) {
                int8x16_t c0, c1;
                codes(r, c0, c1);
                for (int c = 0; c < C; ++c) {
                  d0[r][c] = dot16<D>(c0, x0[c]);
                  d1[r][c] = dot16<D>(c1, x1[c]);
                }
              }
            }
            for (int r = 0; r < R; ++r) {
              const quant::BlockQ6_K& b = t.w[r][sb];
              for (int c = 0; c < C; ++c) {
                isum[r][c] += b.scales[g] * d0[r][c] + b.scales[g + 1] * d1[r][c];
              }
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          const float d = half_to_float(&t.w[r][sb].d);
          for (int c = 0; c < C; ++c) {
            acc[r][c] = std::fma(static_cast<float>(isum[r][c]), d * t.x[c][sb].d, acc[r][c]);
          }
        }
      }
      store<R, C>(acc, out, out_stride);
    }
  };
};

template <class D>
DotTileFn legacy_tile_for(DType w) {
  if (DotTileFn t = dtype_switch<DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                 DType::IQ4_NL>(w, [](auto wt) -> DotTileFn {
        return &dot_tile_table<LegacyTile<D, decltype(wt)::value>::template Shape, kTileRows,
                               kTileCols>;
      })) {
    return t;
  }
  return dtype_switch<DType::MXFP4, DType::NVFP4>(w, [](auto wt) -> DotTileFn {
    return &dot_tile_table<Fp4Tile<D, decltype(wt)::value>::template Shape, kTileRows, kTileCols>;
  });
}

template <class D>
DotTileFn kquant_tile_for(DType w) {
  switch (w) {
    case DType::Q4_K:
      return &dot_tile_table<Q45KTile<D, false>::template Shape, kTileRows, kTileCols>;
    case DType::Q5_K:
      return &dot_tile_table<Q45KTile<D, true>::template Shape, kTileRows, kTileCols>;
    case DType::Q6_K:
      return &dot_tile_table<Q6KTile<D>::template Shape, kTileRows, kTileCols>;
    default:
      return nullptr;
  }
}

template <class D>
MatMulSpec quant_spec(DType w) {
  if (DotTileFn t = legacy_tile_for<D>(w)) {
    return {ActFormat::kQ8_0, kTileRows, kTileCols, t, &quantize_act_q8_0_neon};
  }
  if (DotTileFn t = kquant_tile_for<D>(w)) {
    return {ActFormat::kQ8_K, kTileRows, kTileCols, t, &quantize_act_q8_k_neon};
  }
  FOLIO_CHECK_MSG(false, "no neon quantized mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace

bool neon_quant_weight(DType w) {
  return legacy_tile_for<neon::WidenI8>(w) != nullptr ||
         kquant_tile_for<neon::WidenI8>(w) != nullptr;
}

MatMulSpec quant_mul_mat_spec_neon(DType w, NeonDot dot) {
  switch (dot) {
    case NeonDot::kSdot:
      return quant_spec<neon::SdotI8>(w);
    case NeonDot::kSmmla:
      return quant_spec<neon::MmlaI8>(w);
    default:
      return quant_spec<neon::WidenI8>(w);
  }
}

}  // namespace folio::cpu
