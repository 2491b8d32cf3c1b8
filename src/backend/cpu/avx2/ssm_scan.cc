// AVX2 Mamba-2 selective scan (kSsmScan) and its fused decode step on a
// state pool (kSsmScanUpdate), bit-identical to the references
// (ref/ssm_scan.cc, ref/ssm_scan_update.cc). One driver serves both: the
// update is the plain scan with T = 1 whose prior state of sequence s is a
// pool slot (ids[s]; scalar/state_slots.h resolves it, scratch rule
// included) and whose new state goes to slot dst_slots[s]; only those
// per-sequence state views differ.
//
// Every state row S[p, :] of a head evolves on its own (it only meets the
// token's shared B, C and the row's x), so lanes are 8 rows of one head:
// the reduction over i (y[p] = sum_i S[p, i] C[i]) then keeps the
// reference's sequential order, and the update is element-wise. A work item
// is a group of up to 4 blocks of 8 rows (independent accumulator chains
// hide the add latency) of one head of one sequence; its state lives in
// tbuf[i][8 G] (lanes = rows) across all the tokens: loaded from the prior
// state before the first token and stored back after the last, transposed
// in 8 x 8 register tiles (at T = 1, a decode step, a scalar transpose cost
// as much as the scan).
// Per token, with the reference's scalars (scalar/ssm_scan_step.h):
//   xdt = x * sp;  S[:, i] = S[:, i] * dA + B[i] * xdt;  acc += S[:, i] * C[i]
// one mul and one add per step, no FMA (contraction is off in this file).
// A group reads all its rows before it writes any and groups are disjoint:
// in-place updates (state_out aliasing state, or a slot updated in place)
// are safe. Items are split across the thread pool; P must be a multiple
// of 8.
#include <algorithm>
#include <vector>

#include "backend/cpu/avx2/recurrent_kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/avx2/transpose.h"
#include "backend/cpu/scalar/parallel.h"
#include "backend/cpu/scalar/ssm_scan_step.h"
#include "backend/cpu/scalar/state_slots.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int kMaxBlocks = 4;

struct ScanGroup {
  const TensorView* op_src;  // the op's inputs (x, dt, A, B, C, ...)
  const TensorView* y;
  const TensorView* from;  // [N, P, H, 1] prior state of this sequence
  const TensorView* to;    // [N, P, H, 1] where its new state goes
  int64_t seq, head, group, row0;
  int blocks;
  const float* sp;  // [T] softplus(dt) of this head
  const float* da;  // [T] exp(sp * A)
  float* tbuf;      // [N][8 * blocks] scratch
};

template <int G>
FOLIO_TARGET_AVX2 void scan_group(const ScanGroup& w) {
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

// Sequence s of a 4-D state view as a one-sequence view.
TensorView ssm_scan_sequence_of(const TensorView& t, int64_t s) {
  TensorView v = t;
  v.data = t.row<char>(0, 0, s);
  v.ne[3] = 1;
  return v;
}

// The scan of every sequence from its prior state from[s] to to[s] (views
// [N, P, H, 1]); x, dt, A, B, C, y as kSsmScan's (kSsmScanUpdate: T = 1).
Status run_ssm_scan_avx2(const Op& op, const KernelContext& ctx,
                         const std::vector<TensorView>& from, const std::vector<TensorView>& to) {
  const TensorView &x = op.src[0], &dt = op.src[1], &a = op.src[2], &b = op.src[3];
  const int64_t p_dim = x.ne[0], n_head = x.ne[1], n_t = x.ne[2], n_seq = x.ne[3];
  const int64_t n = op.src[5].ne[0], heads_per_group = n_head / b.ne[1];
  const int64_t blocks = p_dim / kLanes;
  const int64_t groups_per_head = (blocks + kMaxBlocks - 1) / kMaxBlocks;
  // The per-token scalars of every (sequence, head), computed once.
  std::vector<float> sp(static_cast<size_t>(n_seq * n_head * n_t));
  std::vector<float> da(sp.size());
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t h = 0; h < n_head; ++h) {
      const float ah = ssm_scan_a(a, h);
      for (int64_t t = 0; t < n_t; ++t) {
        const size_t k = static_cast<size_t>((s * n_head + h) * n_t + t);
        sp[k] = ssm_scan_softplus(*dt.at<const float>(h, t, s));
        da[k] = ssm_scan_decay(sp[k], ah);
      }
    }
  }
  const int64_t n_items = n_seq * n_head * groups_per_head;
  const bool parallel = n_items > 1 && n * p_dim * n_t * n_head * n_seq >= kMinParallelElements;
  run_range(ctx, n_items, parallel, [&](int64_t begin, int64_t end) {
    std::vector<float> tbuf(static_cast<size_t>(n * kLanes * kMaxBlocks));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t grp = item % groups_per_head;
      const int64_t h = (item / groups_per_head) % n_head;
      const int64_t s = item / (groups_per_head * n_head);
      const int64_t first = grp * kMaxBlocks;
      const int bl = static_cast<int>(std::min<int64_t>(kMaxBlocks, blocks - first));
      const size_t k = static_cast<size_t>((s * n_head + h) * n_t);
      const ScanGroup w{op.src.data(),
                        &op.dst,
                        &from[static_cast<size_t>(s)],
                        &to[static_cast<size_t>(s)],
                        s,
                        h,
                        h / heads_per_group,
                        first * kLanes,
                        bl,
                        &sp[k],
                        &da[k],
                        tbuf.data()};
      switch (bl) {
        case 1: scan_group<1>(w); break;
        case 2: scan_group<2>(w); break;
        case 3: scan_group<3>(w); break;
        default: scan_group<4>(w); break;
      }
    }
  });
  return Status();
}

}  // namespace

bool supports_ssm_scan_avx2(const Op& op) {
  return op.src[0].ne[0] % kLanes == 0;
}

Status ssm_scan_avx2(const Op& op, const KernelContext& ctx) {
  const TensorView &state = op.src[5], &state_out = op.dst2;  // the same view or disjoint
  std::vector<TensorView> from, to;
  for (int64_t s = 0; s < op.src[0].ne[3]; ++s) {
    from.push_back(ssm_scan_sequence_of(state, s));
    to.push_back(ssm_scan_sequence_of(state_out, s));
  }
  return run_ssm_scan_avx2(op, ctx, from, to);
}

Status ssm_scan_update_avx2(const Op& op, const KernelContext& ctx) {
  FOLIO_ASSIGN_OR_RETURN(StateSlots slots, StateSlots::prepare(op, 5, 3));
  std::vector<TensorView> from, to;
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    from.push_back(slots.src(s));
    to.push_back(slots.dst(s));
  }
  return run_ssm_scan_avx2(op, ctx, from, to);
}

}  // namespace folio::cpu
