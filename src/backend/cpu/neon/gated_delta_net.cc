// NEON gated DeltaNet: the plain recurrence (kGatedDeltaNet) and the fused
// decode step on a state pool (kGatedDeltaNetUpdate), bit-identical to the
// references (ref/gated_delta_net.cc, ref/gated_delta_net_update.cc). The
// scalar parts, the state resolution and the threading are the shared
// blocked driver's (scalar/gdn_blocked.h); this file runs one group of G
// blocks of 4 state rows (G = 1, 2, 4), the AVX2 kernel's scheme with
// 4 lanes: the group's state lives in tbuf[i][4 G] (lanes = rows) across
// the tokens, read from the prior state by 4 x 4 transposes in the first
// token's pass and written back the same way in the last one. Per token:
//   c = S[:, i] * decay; m += c * k[i]          (i ascending)
//   d = beta * (v - m)
//   c = S[:, i] + d * k[i]; out += c * q[i]     (i ascending)
// one mul and one add per step, no FMA: the reference's operations in the
// reference's order for every element.
#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/scalar/gdn_blocked.h"
#include "backend/cpu/scalar/gdn_chunked.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

template <int G>
void run_group(const GdnRows& a) {
  constexpr int kL = 4;           // lanes = rows per block
  constexpr int64_t kW = kL * G;  // floats per index i in tbuf
  const int64_t sk = a.sk;
  float* tb = a.tbuf;
  float32x4_t r[kL];
  for (int64_t t = 0; t < a.n_t; ++t) {
    const float* q = a.qk + t * a.qk_stride;
    const float* k = q + sk;
    const float32x4_t decay = vdupq_n_f32(a.decay[t]);
    float32x4_t m[G];
    for (int g = 0; g < G; ++g) m[g] = vdupq_n_f32(0.0f);
    if (t == 0) {
      for (int64_t i0 = 0; i0 < sk; i0 += kL) {
        for (int g = 0; g < G; ++g) {
          for (int j = 0; j < kL; ++j) {
            r[j] = vld1q_f32(reinterpret_cast<const float*>(a.src + (kL * g + j) * a.src_stride) +
                             i0);
          }
          neon::transpose4(r);
          for (int j = 0; j < kL; ++j) {
            const float32x4_t c = vmulq_f32(r[j], decay);
            vst1q_f32(tb + (i0 + j) * kW + kL * g, c);
            m[g] = vaddq_f32(m[g], vmulq_f32(c, vdupq_n_f32(k[i0 + j])));
          }
        }
      }
    } else {
      for (int64_t i = 0; i < sk; ++i) {
        const float32x4_t ki = vdupq_n_f32(k[i]);
        for (int g = 0; g < G; ++g) {
          const float32x4_t c = vmulq_f32(vld1q_f32(tb + i * kW + kL * g), decay);
          vst1q_f32(tb + i * kW + kL * g, c);
          m[g] = vaddq_f32(m[g], vmulq_f32(c, ki));
        }
      }
    }
    const float32x4_t beta = vdupq_n_f32(a.beta[t]);
    const float* vt = reinterpret_cast<const float*>(a.v + t * a.v_stride);
    float32x4_t d[G], o[G];
    for (int g = 0; g < G; ++g) {
      d[g] = vmulq_f32(beta, vsubq_f32(vld1q_f32(vt + kL * g), m[g]));
      o[g] = vdupq_n_f32(0.0f);
    }
    if (t + 1 == a.n_t) {
      for (int64_t i0 = 0; i0 < sk; i0 += kL) {
        for (int g = 0; g < G; ++g) {
          for (int j = 0; j < kL; ++j) {
            const float32x4_t c = vaddq_f32(vld1q_f32(tb + (i0 + j) * kW + kL * g),
                                            vmulq_f32(d[g], vdupq_n_f32(k[i0 + j])));
            o[g] = vaddq_f32(o[g], vmulq_f32(c, vdupq_n_f32(q[i0 + j])));
            r[j] = c;
          }
          neon::transpose4(r);
          for (int j = 0; j < kL; ++j) {
            vst1q_f32(reinterpret_cast<float*>(a.dst + (kL * g + j) * a.dst_stride) + i0, r[j]);
          }
        }
      }
    } else {
      for (int64_t i = 0; i < sk; ++i) {
        const float32x4_t ki = vdupq_n_f32(k[i]), qi = vdupq_n_f32(q[i]);
        for (int g = 0; g < G; ++g) {
          const float32x4_t c = vaddq_f32(vld1q_f32(tb + i * kW + kL * g), vmulq_f32(d[g], ki));
          vst1q_f32(tb + i * kW + kL * g, c);
          o[g] = vaddq_f32(o[g], vmulq_f32(c, qi));
        }
      }
    }
    float* ot = reinterpret_cast<float*>(a.out + t * a.out_stride);
    for (int g = 0; g < G; ++g) vst1q_f32(ot + kL * g, o[g]);
  }
}

void run_rows(const GdnRows& a) {
  switch (a.blocks) {
    case 4:
      return run_group<4>(a);
    case 2:
      return run_group<2>(a);
    default:
      return run_group<1>(a);
  }
}

}  // namespace

// Long sequences that the portable chunked form takes (T >= 64 with
// allow_chunked) stay with it (scalar/gdn_chunked.h: the faster form for
// long prefills).
bool supports_gated_delta_net_neon(const Op& op) {
  const bool lanes = op.src[0].ne[0] % 4 == 0 && op.src[2].ne[0] % 4 == 0;
  return lanes && (op.kind != OpKind::kGatedDeltaNet || !supports_gated_delta_net_chunked(op));
}

Status gated_delta_net_neon(const Op& op, const KernelContext& ctx) {
  return run_gdn_blocked(op, ctx, 4, run_rows);
}

}  // namespace folio::cpu
