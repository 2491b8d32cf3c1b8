// AVX2 Mamba-2 selective scan (kSsmScan) and its fused decode step on a
// state pool (kSsmScanUpdate), bit-identical to the references
// (ref/ssm_scan.cc, ref/ssm_scan_update.cc). The per-token scalars, state
// views, work items and threads: scalar/ssm_scan_driver.h; here, one group.
//
// Every state row S[p, :] of a head evolves on its own (it only meets the
// token's shared B, C and the row's x), so lanes are 8 rows of one head:
// the reduction over i (y[p] = sum_i S[p, i] C[i]) then keeps the
// reference's sequential order, and the update is element-wise. A group of
// up to 4 blocks of 8 rows (independent accumulator chains hide the add
// latency) keeps its state in tbuf[i][8 G] (lanes = rows) across all the
// tokens: loaded from the prior state before the first token and stored
// back after the last, transposed in 8 x 8 register tiles (at T = 1, a
// decode step, a scalar transpose cost as much as the scan).
// Per token, with the reference's scalars (scalar/ssm_scan_step.h):
//   xdt = x * sp;  S[:, i] = S[:, i] * dA + B[i] * xdt;  acc += S[:, i] * C[i]
// one mul and one add per step, no FMA (contraction is off in this file).
#include "backend/cpu/avx2/recurrent_kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/avx2/transpose.h"
#include "backend/cpu/scalar/ssm_scan_driver.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

constexpr int kLanes = 8;

template <int G>
FOLIO_TARGET_AVX2 void scan_group(const SsmScanGroup& w) {
  constexpr int kW = kLanes * G;
  const TensorView &x = w.op_src[0], &b = w.op_src[3], &c = w.op_src[4];
  const int64_t n = w.from->ne[0], n_t = x.ne[2];
  float* tb = w.tbuf;
  const int64_t n8 = n / kLanes * kLanes;
  for (int g = 0; g < G; ++g) {  // transpose the rows in: tb[i * kW + r], 8 x 8 tiles
    const float* rows[kLanes];
    for (int j = 0; j < kLanes; ++j) {
      rows[j] = w.from->row<const float>(w.row0 + g * kLanes + j, w.head);
    }
    for (int64_t i0 = 0; i0 < n8; i0 += kLanes) {
      __m256 r[kLanes];
      for (int j = 0; j < kLanes; ++j) r[j] = _mm256_loadu_ps(rows[j] + i0);
      avx2::transpose8(r);  // r[k]: value i0 + k of the 8 rows
      for (int k = 0; k < kLanes; ++k) _mm256_storeu_ps(tb + (i0 + k) * kW + g * kLanes, r[k]);
    }
    for (int64_t i = n8; i < n; ++i) {
      for (int j = 0; j < kLanes; ++j) tb[i * kW + g * kLanes + j] = rows[j][i];
    }
  }
  for (int64_t t = 0; t < n_t; ++t) {
    const float* xt = x.row<const float>(w.head, t, w.seq) + w.row0;
    const float* bt = b.row<const float>(w.group, t, w.seq);
    const float* ct = c.row<const float>(w.group, t, w.seq);
    const __m256 sp = _mm256_set1_ps(w.sp[t]);
    const __m256 da = _mm256_set1_ps(w.da[t]);
    __m256 xdt[G], acc[G];
    for (int g = 0; g < G; ++g) {
      xdt[g] = _mm256_mul_ps(_mm256_loadu_ps(xt + g * kLanes), sp);
      acc[g] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n; ++i) {
      const __m256 bi = _mm256_set1_ps(bt[i]);
      const __m256 ci = _mm256_set1_ps(ct[i]);
      float* ti = tb + i * kW;
      for (int g = 0; g < G; ++g) {
        const __m256 s = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(ti + g * kLanes), da),
                                       _mm256_mul_ps(bi, xdt[g]));
        _mm256_storeu_ps(ti + g * kLanes, s);
        acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(s, ci));
      }
    }
    float* yt = w.y->row<float>(w.head, t, w.seq) + w.row0;
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(yt + g * kLanes, acc[g]);
  }
  for (int g = 0; g < G; ++g) {  // and back out
    float* rows[kLanes];
    for (int j = 0; j < kLanes; ++j) rows[j] = w.to->row<float>(w.row0 + g * kLanes + j, w.head);
    for (int64_t i0 = 0; i0 < n8; i0 += kLanes) {
      __m256 r[kLanes];
      for (int k = 0; k < kLanes; ++k) r[k] = _mm256_loadu_ps(tb + (i0 + k) * kW + g * kLanes);
      avx2::transpose8(r);  // r[j]: values i0..i0+7 of row j
      for (int j = 0; j < kLanes; ++j) _mm256_storeu_ps(rows[j] + i0, r[j]);
    }
    for (int64_t i = n8; i < n; ++i) {
      for (int j = 0; j < kLanes; ++j) rows[j][i] = tb[i * kW + g * kLanes + j];
    }
  }
}

void scan_group_avx2(const SsmScanGroup& w) {
  switch (w.blocks) {
    case 1: scan_group<1>(w); break;
    case 2: scan_group<2>(w); break;
    case 3: scan_group<3>(w); break;
    default: scan_group<4>(w); break;
  }
}

}  // namespace

bool supports_ssm_scan_avx2(const Op& op) {
  return op.src[0].ne[0] % kLanes == 0;
}

Status ssm_scan_avx2(const Op& op, const KernelContext& ctx) {
  return ssm_scan_rows(op, ctx, kLanes, scan_group_avx2);
}

Status ssm_scan_update_avx2(const Op& op, const KernelContext& ctx) {
  return ssm_scan_update_rows(op, ctx, kLanes, scan_group_avx2);
}

}  // namespace folio::cpu
