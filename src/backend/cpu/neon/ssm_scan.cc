// NEON Mamba-2 selective scan (kSsmScan) and its fused decode step on a
// state pool (kSsmScanUpdate), bit-identical to the references
// (ref/ssm_scan.cc, ref/ssm_scan_update.cc). The per-token scalars, state
// views, work items and threads: scalar/ssm_scan_driver.h; here, one group.
// The AVX2 kernel's scheme (avx2/ssm_scan.cc) on 4 lanes: lanes are 4 state
// rows of one head, so the reduction over i keeps the reference's order; a
// group of up to 4 blocks of 4 rows keeps its state in tbuf[i][4 G] across
// all the tokens, moved in and out in 4 x 4 register transposes. Per token:
//   xdt = x * sp;  S[:, i] = S[:, i] * dA + B[i] * xdt;  acc += S[:, i] * C[i]
// one mul and one add per step, no FMA (contraction is off in this file).
#include <cstdint>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/scalar/ssm_scan_driver.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

constexpr int kLanes = 4;

template <int G>
void scan_group(const SsmScanGroup& w) {
  constexpr int kW = kLanes * G;
  const TensorView &x = w.op_src[0], &b = w.op_src[3], &c = w.op_src[4];
  const int64_t n = w.from->ne[0], n_t = x.ne[2];
  float* tb = w.tbuf;
  const int64_t n4 = n / kLanes * kLanes;
  for (int g = 0; g < G; ++g) {  // transpose the rows in: tb[i * kW + r]
    const float* rows[kLanes];
    for (int j = 0; j < kLanes; ++j) {
      rows[j] = w.from->row<const float>(w.row0 + g * kLanes + j, w.head);
    }
    for (int64_t i0 = 0; i0 < n4; i0 += kLanes) {
      float32x4_t r[kLanes];
      for (int j = 0; j < kLanes; ++j) r[j] = vld1q_f32(rows[j] + i0);
      neon::transpose4(r);  // r[k]: value i0 + k of the 4 rows
      for (int k = 0; k < kLanes; ++k) vst1q_f32(tb + (i0 + k) * kW + g * kLanes, r[k]);
    }
    for (int64_t i = n4; i < n; ++i) {
      for (int j = 0; j < kLanes; ++j) tb[i * kW + g * kLanes + j] = rows[j][i];
    }
  }
  for (int64_t t = 0; t < n_t; ++t) {
    const float* xt = x.row<const float>(w.head, t, w.seq) + w.row0;
    const float* bt = b.row<const float>(w.group, t, w.seq);
    const float* ct = c.row<const float>(w.group, t, w.seq);
    const float32x4_t sp = vdupq_n_f32(w.sp[t]);
    const float32x4_t da = vdupq_n_f32(w.da[t]);
    float32x4_t xdt[G], acc[G];
    for (int g = 0; g < G; ++g) {
      xdt[g] = vmulq_f32(vld1q_f32(xt + g * kLanes), sp);
      acc[g] = vdupq_n_f32(0.0f);
    }
    for (int64_t i = 0; i < n; ++i) {
      const float32x4_t bi = vdupq_n_f32(bt[i]);
      const float32x4_t ci = vdupq_n_f32(ct[i]);
      float* ti = tb + i * kW;
      for (int g = 0; g < G; ++g) {
        const float32x4_t s =
            vaddq_f32(vmulq_f32(vld1q_f32(ti + g * kLanes), da), vmulq_f32(bi, xdt[g]));
        vst1q_f32(ti + g * kLanes, s);
        acc[g] = vaddq_f32(acc[g], vmulq_f32(s, ci));
      }
    }
    float* yt = w.y->row<float>(w.head, t, w.seq) + w.row0;
    for (int g = 0; g < G; ++g) vst1q_f32(yt + g * kLanes, acc[g]);
  }
  for (int g = 0; g < G; ++g) {  // and back out
    float* rows[kLanes];
    for (int j = 0; j < kLanes; ++j) rows[j] = w.to->row<float>(w.row0 + g * kLanes + j, w.head);
    for (int64_t i0 = 0; i0 < n4; i0 += kLanes) {
      float32x4_t r[kLanes];
      for (int k = 0; k < kLanes; ++k) r[k] = vld1q_f32(tb + (i0 + k) * kW + g * kLanes);
      neon::transpose4(r);  // r[j]: values i0..i0+3 of row j
      for (int j = 0; j < kLanes; ++j) vst1q_f32(rows[j] + i0, r[j]);
    }
    for (int64_t i = n4; i < n; ++i) {
      for (int j = 0; j < kLanes; ++j) rows[j][i] = tb[i * kW + g * kLanes + j];
    }
  }
}

void scan_group_neon(const SsmScanGroup& w) {
  switch (w.blocks) {
    case 1: scan_group<1>(w); break;
    case 2: scan_group<2>(w); break;
    case 3: scan_group<3>(w); break;
    default: scan_group<4>(w); break;
  }
}

}  // namespace

bool supports_ssm_scan_neon(const Op& op) {
  return op.src[0].ne[0] % kLanes == 0;
}

Status ssm_scan_neon(const Op& op, const KernelContext& ctx) {
  return ssm_scan_rows(op, ctx, kLanes, scan_group_neon);
}

Status ssm_scan_update_neon(const Op& op, const KernelContext& ctx) {
  return ssm_scan_update_rows(op, ctx, kLanes, scan_group_neon);
}

}  // namespace folio::cpu
