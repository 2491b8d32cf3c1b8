// AVX2 gated DeltaNet: the plain recurrence (kGatedDeltaNet) and the fused
// decode step on a state pool (kGatedDeltaNetUpdate), bit-identical to the
// references (ref/gated_delta_net.cc, ref/gated_delta_net_update.cc). The
// scalar parts, the state resolution and the threading are the shared
// blocked driver's (scalar/gdn_blocked.h); this file runs one group of G
// blocks of 8 state rows (G = 1, 2, 4).
//
// The group's state lives in tbuf[i][8 G] (lanes = rows) across the tokens:
// the first token's pass reads it from the prior state (8 x 8 tiles
// transposed in registers), the last token's pass transposes the updated
// tiles straight into the destination rows. Per token:
//   c = S[:, i] * decay; m += c * k[i]          (i ascending)
//   d = beta * (v - m)
//   c = S[:, i] + d * k[i]; out += c * q[i]     (i ascending)
// one mul and one add per step, no FMA (contraction is off in this file):
// the reference's operations in the reference's order for every element.
// The G blocks give G independent accumulator chains, which hides the add
// latency of the sequential reductions. Every tile of the group is read in
// the first token's pass before the last token's pass writes any: in-place
// updates are safe.
#include "backend/cpu/avx2/recurrent_kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/avx2/transpose.h"
#include "backend/cpu/scalar/gdn_blocked.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

template <int G>
FOLIO_TARGET_AVX2 void run_group(const GdnRows& a) {
  constexpr int kL = 8;           // lanes = rows per block
  constexpr int64_t kW = kL * G;  // floats per index i in tbuf
  const int64_t sk = a.sk;
  float* tb = a.tbuf;
  __m256 r[kL];
  for (int64_t t = 0; t < a.n_t; ++t) {
    const float* q = a.qk + t * a.qk_stride;
    const float* k = q + sk;
    const __m256 decay = _mm256_set1_ps(a.decay[t]);
    // S *= exp(g); m = sum_i S[:, i] k[i]. The first token reads the rows
    // straight from the prior state (tile by tile, transposed in registers).
    __m256 m[G];
    for (int g = 0; g < G; ++g) m[g] = _mm256_setzero_ps();
    if (t == 0) {
      for (int64_t i0 = 0; i0 < sk; i0 += kL) {
        for (int g = 0; g < G; ++g) {
          for (int j = 0; j < kL; ++j) {
            r[j] = _mm256_loadu_ps(
                reinterpret_cast<const float*>(a.src + (kL * g + j) * a.src_stride) + i0);
          }
          avx2::transpose8(r);
          for (int j = 0; j < kL; ++j) {
            const __m256 c = _mm256_mul_ps(r[j], decay);
            _mm256_store_ps(tb + (i0 + j) * kW + kL * g, c);
            m[g] = _mm256_add_ps(m[g], _mm256_mul_ps(c, _mm256_set1_ps(k[i0 + j])));
          }
        }
      }
    } else {
      for (int64_t i = 0; i < sk; ++i) {
        const __m256 ki = _mm256_set1_ps(k[i]);
        for (int g = 0; g < G; ++g) {
          const __m256 c = _mm256_mul_ps(_mm256_load_ps(tb + i * kW + kL * g), decay);
          _mm256_store_ps(tb + i * kW + kL * g, c);
          m[g] = _mm256_add_ps(m[g], _mm256_mul_ps(c, ki));
        }
      }
    }
    const __m256 beta = _mm256_set1_ps(a.beta[t]);
    const float* vt = reinterpret_cast<const float*>(a.v + t * a.v_stride);
    __m256 d[G], o[G];
    for (int g = 0; g < G; ++g) {
      d[g] = _mm256_mul_ps(beta, _mm256_sub_ps(_mm256_loadu_ps(vt + kL * g), m[g]));
      o[g] = _mm256_setzero_ps();
    }
    // S[:, i] += d k[i]; out = sum_i S[:, i] q[i]. The last token writes the
    // rows straight to the new state (every tile was read in the first
    // token's pass, so in place is safe).
    if (t + 1 == a.n_t) {
      for (int64_t i0 = 0; i0 < sk; i0 += kL) {
        for (int g = 0; g < G; ++g) {
          for (int j = 0; j < kL; ++j) {
            const __m256 c = _mm256_add_ps(_mm256_load_ps(tb + (i0 + j) * kW + kL * g),
                                           _mm256_mul_ps(d[g], _mm256_set1_ps(k[i0 + j])));
            o[g] = _mm256_add_ps(o[g], _mm256_mul_ps(c, _mm256_set1_ps(q[i0 + j])));
            r[j] = c;
          }
          avx2::transpose8(r);
          for (int j = 0; j < kL; ++j) {
            _mm256_storeu_ps(reinterpret_cast<float*>(a.dst + (kL * g + j) * a.dst_stride) + i0,
                             r[j]);
          }
        }
      }
    } else {
      for (int64_t i = 0; i < sk; ++i) {
        const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
        for (int g = 0; g < G; ++g) {
          const __m256 c =
              _mm256_add_ps(_mm256_load_ps(tb + i * kW + kL * g), _mm256_mul_ps(d[g], ki));
          _mm256_store_ps(tb + i * kW + kL * g, c);
          o[g] = _mm256_add_ps(o[g], _mm256_mul_ps(c, qi));
        }
      }
    }
    float* ot = reinterpret_cast<float*>(a.out + t * a.out_stride);
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(ot + kL * g, o[g]);
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

bool supports_gated_delta_net_avx2(const Op& op) {
  return op.src[0].ne[0] % 8 == 0 && op.src[2].ne[0] % 8 == 0;
}

Status gated_delta_net_avx2(const Op& op, const KernelContext& ctx) {
  return run_gdn_blocked(op, ctx, 8, run_rows);
}

Status gated_delta_net_update_avx2(const Op& op, const KernelContext& ctx) {
  return run_gdn_blocked(op, ctx, 8, run_rows);
}

}  // namespace folio::cpu
