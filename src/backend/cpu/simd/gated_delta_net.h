// Gated DeltaNet over the traits type (f32x16.h): the plain recurrence
// (kGatedDeltaNet) and the fused decode step on a state pool
// (kGatedDeltaNetUpdate), bit-identical to the references
// (ref/gated_delta_net.cc, ref/gated_delta_net_update.cc) on every tier. The
// scalar parts, the state resolution and the threading are the shared
// blocked driver's (drivers/gdn_blocked.h); this body runs one group of G
// blocks of 16 state rows (lanes = rows).
//
// The group's state lives in tbuf[i][16 G] (lanes = rows) across the
// tokens, moved in from the prior state's rows and out to the new state's in
// 16 x 16 transposes (f32x16_transpose.h): where a tile fits in registers
// (transpose16_in_registers: AVX-512) inside the first token's pass and the
// last token's pass, elsewhere (AVX2's 16 ymm, NEON's 32 q would spill it) as
// passes of their own before the first token and after the last. Per token:
//   c = S[:, i] * decay; m += c * k[i]          (i ascending)
//   d = beta * (v - m)
//   c = S[:, i] + d * k[i]; out += c * q[i]     (i ascending)
// one mul and one add per step, no FMA (the tier's region compiles without
// contraction): the reference's operations in the reference's order for
// every element. The G blocks give G independent accumulator chains, which
// hides the add latency of the sequential reductions; G is at most
// gdn_max_blocks<S>, which keeps m, d and out of a group in registers. Every
// row of the group is read (first token) before any is written (last
// token): in-place updates are safe.
#pragma once

#include "backend/cpu/drivers/gdn_blocked.h"
#include "backend/cpu/simd/f32x16_transpose.h"

namespace folio::cpu::simd {

// Blocks per group: 2 where the vector registers hold 8 V (AVX2's 16 ymm,
// NEON's 32 q), 4 on AVX-512 (32 zmm).
template <class S>
constexpr int gdn_max_blocks() {
  return S::kTier == KernelTier::kAvx512 ? 4 : 2;
}

template <class S, int G>
void gdn_group(const GdnRows& a) {
  using V = typename S::V;
  constexpr int kL = S::kLanes;   // lanes = rows per block
  constexpr int64_t kW = kL * G;  // floats per index i in tbuf
  constexpr bool kFused = transpose16_in_registers<S>();
  const int64_t sk = a.sk;
  float* tb = a.tbuf;
  if constexpr (!kFused) {  // the prior state's rows into tbuf
    const float* src = reinterpret_cast<const float*>(a.src);
    const int64_t lds = static_cast<int64_t>(a.src_stride / sizeof(float));
    for (int g = 0; g < G; ++g) {
      for (int64_t i0 = 0; i0 < sk; i0 += kL) {
        transpose16(S{}, src + kL * g * lds + i0, lds, tb + i0 * kW + kL * g, kW);
      }
    }
  }
  for (int64_t t = 0; t < a.n_t; ++t) {
    const float* q = a.qk + t * a.qk_stride;
    const float* k = q + sk;
    // S *= exp(g); m = sum_i S[:, i] k[i].
    const V decay = S::set1(a.decay[t]);
    V m[G];
    for (int g = 0; g < G; ++g) m[g] = S::zero();
    const auto decay_pass = [&] {
      for (int64_t i = 0; i < sk; ++i) {
        const V ki = S::set1(k[i]);
        for (int g = 0; g < G; ++g) {
          const V c = S::load(tb + i * kW + kL * g) * decay;
          S::store(tb + i * kW + kL * g, c);
          m[g] = m[g] + c * ki;
        }
      }
    };
    if constexpr (kFused) {
      if (t == 0) {  // straight from the prior state's rows
        // Row addresses are formed from a's fields where they are used:
        // kept live, a tile's 16 G row pointers would spill.
        RegTile16<S> r;
        for (int64_t i0 = 0; i0 < sk; i0 += kL) {
          for (int g = 0; g < G; ++g) {
            for (int j = 0; j < kL; ++j) {
              r.set(j, S::load(reinterpret_cast<const float*>(a.src + (kL * g + j) * a.src_stride) +
                               i0));
            }
            r.transpose();
            for (int j = 0; j < kL; ++j) {
              const V c = r.get(j) * decay;
              S::store(tb + (i0 + j) * kW + kL * g, c);
              m[g] = m[g] + c * S::set1(k[i0 + j]);
            }
          }
        }
      } else {
        decay_pass();
      }
    } else {
      decay_pass();
    }
    const V beta = S::set1(a.beta[t]);
    const float* vt = reinterpret_cast<const float*>(a.v + t * a.v_stride);
    V d[G], o[G];
    for (int g = 0; g < G; ++g) {
      d[g] = beta * (S::load(vt + kL * g) - m[g]);
      o[g] = S::zero();
    }
    // S[:, i] += d k[i]; out = sum_i S[:, i] q[i].
    const auto update_pass = [&] {
      for (int64_t i = 0; i < sk; ++i) {
        const V ki = S::set1(k[i]), qi = S::set1(q[i]);
        for (int g = 0; g < G; ++g) {
          const V c = S::load(tb + i * kW + kL * g) + d[g] * ki;
          S::store(tb + i * kW + kL * g, c);
          o[g] = o[g] + c * qi;
        }
      }
    };
    if constexpr (kFused) {
      if (t + 1 == a.n_t) {  // straight to the new state's rows
        // The rows after the group (the next group's, where the driver's
        // units run in state order) are read ahead into L2, one line per
        // row and step, so that their loads overlap this pass's arithmetic.
        const char* next = a.src + kW * a.src_stride;
        RegTile16<S> r;
        for (int64_t i0 = 0; i0 < sk; i0 += kL) {
          for (int g = 0; g < G; ++g) {
            for (int j = 0; j < kL; ++j) {
              __builtin_prefetch(next + (kL * g + j) * a.src_stride + i0 * sizeof(float), 0, 2);
              const V c = S::load(tb + (i0 + j) * kW + kL * g) + d[g] * S::set1(k[i0 + j]);
              o[g] = o[g] + c * S::set1(q[i0 + j]);
              r.set(j, c);
            }
            r.transpose();
            for (int j = 0; j < kL; ++j) {
              S::store(reinterpret_cast<float*>(a.dst + (kL * g + j) * a.dst_stride) + i0, r.get(j));
            }
          }
        }
      } else {
        update_pass();
      }
    } else {
      update_pass();
    }
    float* ot = reinterpret_cast<float*>(a.out + t * a.out_stride);
    for (int g = 0; g < G; ++g) S::store(ot + kL * g, o[g]);
  }
  if constexpr (!kFused) {  // the new state's rows out of tbuf
    float* dst = reinterpret_cast<float*>(a.dst);
    const int64_t ldd = static_cast<int64_t>(a.dst_stride / sizeof(float));
    for (int g = 0; g < G; ++g) {
      for (int64_t i0 = 0; i0 < sk; i0 += kL) {
        transpose16(S{}, tb + i0 * kW + kL * g, kW, dst + kL * g * ldd + i0, ldd);
      }
    }
  }
}

template <class S>
void gdn_rows(const GdnRows& a) {
  switch (a.blocks) {
    case 4:
      if constexpr (gdn_max_blocks<S>() >= 4) return gdn_group<S, 4>(a);
      [[fallthrough]];
    case 2:
      return gdn_group<S, 2>(a);
    default:
      return gdn_group<S, 1>(a);
  }
}

template <class S>
Status gated_delta_net(const Op& op, const KernelContext& ctx) {
  return run_gdn_blocked(op, ctx, S::kLanes, gdn_max_blocks<S>(), gdn_rows<S>);
}

}  // namespace folio::cpu::simd
