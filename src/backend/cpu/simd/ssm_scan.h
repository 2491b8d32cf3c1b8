// Mamba-2 selective scan over the traits type (f32x16.h): kSsmScan and its
// fused decode step on a state pool (kSsmScanUpdate), bit-identical to the
// references (ref/ssm_scan.cc, ref/ssm_scan_update.cc) on every tier. The
// per-token scalars, state views, work items and threads:
// drivers/ssm_scan_driver.h; here, one group.
//
// Every state row S[p, :] of a head evolves on its own (it only meets the
// token's shared B, C and the row's x), so lanes are 16 rows of one head:
// the reduction over i (y[p] = sum_i S[p, i] C[i]) then keeps the
// reference's sequential order, and the update is element-wise. A group of
// up to ssm_scan_max_blocks<S> blocks of 16 rows (independent accumulator
// chains hide the add latency)
// keeps its state in tbuf[i][16 G] (lanes = rows) across all the tokens:
// loaded from the prior state before the first token and stored back after
// the last, transposed in 16 x 16 tiles (f32x16_transpose.h; at T = 1, a
// decode step, a scalar transpose cost as much as the scan).
// Per token, with the reference's scalars (drivers/ssm_scan_step.h):
//   xdt = x * sp;  S[:, i] = S[:, i] * dA + B[i] * xdt;  acc += S[:, i] * C[i]
// one mul and one add per step, no FMA (the tier's region compiles without
// contraction).
#pragma once

#include "backend/cpu/drivers/ssm_scan_driver.h"
#include "backend/cpu/simd/f32x16_transpose.h"

namespace folio::cpu::simd {

// Blocks per group, 2 on every tier: xdt and acc of 32 rows stay in
// registers even on AVX2, and the group's buffer (N x 32 floats) stays in L1
// beside the state rows it streams (wider groups ran slower on AVX-512).
template <class S>
constexpr int ssm_scan_max_blocks() {
  return 2;
}

template <class S, int G>
void ssm_scan_group_of(const SsmScanGroup& w) {
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  constexpr int kW = kL * G;
  const TensorView &x = w.op_src[0], &b = w.op_src[3], &c = w.op_src[4];
  const int64_t n = w.from->ne[0], n_t = x.ne[2];
  float* tb = w.tbuf;
  const int64_t n16 = n / kL * kL;
  for (int g = 0; g < G; ++g) {  // transpose the rows in: tb[i * kW + r], 16 x 16 tiles
    const float* rows = w.from->row<const float>(w.row0 + g * kL, w.head);
    const int64_t lds = static_cast<int64_t>(w.from->nb[1] / sizeof(float));
    for (int64_t i0 = 0; i0 < n16; i0 += kL) {
      transpose16(S{}, rows + i0, lds, tb + i0 * kW + g * kL, kW);
    }
    for (int64_t i = n16; i < n; ++i) {
      for (int j = 0; j < kL; ++j) tb[i * kW + g * kL + j] = rows[j * lds + i];
    }
  }
  for (int64_t t = 0; t < n_t; ++t) {
    const float* xt = x.row<const float>(w.head, t, w.seq) + w.row0;
    const float* bt = b.row<const float>(w.group, t, w.seq);
    const float* ct = c.row<const float>(w.group, t, w.seq);
    const V sp = S::set1(w.sp[t]);
    const V da = S::set1(w.da[t]);
    V xdt[G], acc[G];
    for (int g = 0; g < G; ++g) {
      xdt[g] = S::load(xt + g * kL) * sp;
      acc[g] = S::zero();
    }
    for (int64_t i = 0; i < n; ++i) {
      const V bi = S::set1(bt[i]);
      const V ci = S::set1(ct[i]);
      float* ti = tb + i * kW;
      for (int g = 0; g < G; ++g) {
        const V s = S::load(ti + g * kL) * da + bi * xdt[g];
        S::store(ti + g * kL, s);
        acc[g] = acc[g] + s * ci;
      }
    }
    float* yt = w.y->row<float>(w.head, t, w.seq) + w.row0;
    for (int g = 0; g < G; ++g) S::store(yt + g * kL, acc[g]);
  }
  for (int g = 0; g < G; ++g) {  // and back out
    float* rows = w.to->row<float>(w.row0 + g * kL, w.head);
    const int64_t ldd = static_cast<int64_t>(w.to->nb[1] / sizeof(float));
    for (int64_t i0 = 0; i0 < n16; i0 += kL) {
      transpose16(S{}, tb + i0 * kW + g * kL, kW, rows + i0, ldd);
    }
    for (int64_t i = n16; i < n; ++i) {
      for (int j = 0; j < kL; ++j) rows[j * ldd + i] = tb[i * kW + g * kL + j];
    }
  }
}

template <class S>
void ssm_scan_group(const SsmScanGroup& w) {
  static_assert(ssm_scan_max_blocks<S>() == 2);
  if (w.blocks == 2) return ssm_scan_group_of<S, 2>(w);
  return ssm_scan_group_of<S, 1>(w);
}

template <class S>
Status ssm_scan(const Op& op, const KernelContext& ctx) {
  return ssm_scan_rows(op, ctx, S::kLanes, ssm_scan_max_blocks<S>(), ssm_scan_group<S>);
}

template <class S>
Status ssm_scan_update(const Op& op, const KernelContext& ctx) {
  return ssm_scan_update_rows(op, ctx, S::kLanes, ssm_scan_max_blocks<S>(), ssm_scan_group<S>);
}

}  // namespace folio::cpu::simd
