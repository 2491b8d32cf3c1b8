#include "backend/cpu/drivers/ssm_scan_driver.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/drivers/parallel.h"
#include "backend/cpu/drivers/ssm_scan_step.h"
#include "backend/cpu/drivers/state_slots.h"
#include "quant/strict_fp.h"  // last: the reference's scalar arithmetic, uncontracted

namespace folio::cpu {
namespace {

// The scan of every sequence from its prior state from[s] to to[s].
Status run_groups(const Op& op, const KernelContext& ctx, const std::vector<TensorView>& from,
                  const std::vector<TensorView>& to, int lanes, int max_blocks, SsmScanGroupFn fn) {
  const TensorView &x = op.src[0], &dt = op.src[1], &a = op.src[2], &b = op.src[3];
  const int64_t p_dim = x.ne[0], n_head = x.ne[1], n_t = x.ne[2], n_seq = x.ne[3];
  const int64_t n = op.src[5].ne[0], heads_per_group = n_head / b.ne[1];
  const int64_t blocks = p_dim / lanes;
  const int64_t groups_per_head = (blocks + max_blocks - 1) / max_blocks;
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
    std::vector<float> tbuf(static_cast<size_t>(n * lanes * kSsmScanMaxBlocks) + 16);
    float* tb = tbuf.data() +
                (16 - reinterpret_cast<uintptr_t>(tbuf.data()) / 4 % 16) % 16;  // 64-byte aligned
    for (int64_t item = begin; item < end; ++item) {
      const int64_t grp = item % groups_per_head;
      const int64_t h = (item / groups_per_head) % n_head;
      const int64_t s = item / (groups_per_head * n_head);
      const int64_t first = grp * max_blocks;
      const size_t k = static_cast<size_t>((s * n_head + h) * n_t);
      fn(SsmScanGroup{op.src.data(), &op.dst, &from[static_cast<size_t>(s)],
                      &to[static_cast<size_t>(s)], s, h, h / heads_per_group, first * lanes,
                      static_cast<int>(std::min<int64_t>(max_blocks, blocks - first)), &sp[k],
                      &da[k], tb});
    }
  });
  return Status();
}

}  // namespace

Status ssm_scan_rows(const Op& op, const KernelContext& ctx, int lanes, int max_blocks,
                     SsmScanGroupFn fn) {
  const TensorView &state = op.src[5], &state_out = op.dst2;  // the same view or disjoint
  std::vector<TensorView> from, to;
  for (int64_t s = 0; s < op.src[0].ne[3]; ++s) {
    from.push_back(state_sequence(state, s));
    to.push_back(state_sequence(state_out, s));
  }
  return run_groups(op, ctx, from, to, lanes, max_blocks, fn);
}

Status ssm_scan_update_rows(const Op& op, const KernelContext& ctx, int lanes, int max_blocks,
                            SsmScanGroupFn fn) {
  FOLIO_ASSIGN_OR_RETURN(StateSlots slots, StateSlots::prepare(op, 5, 3));
  std::vector<TensorView> from, to;
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    from.push_back(slots.src(s));
    to.push_back(slots.dst(s));
  }
  return run_groups(op, ctx, from, to, lanes, max_blocks, fn);
}

}  // namespace folio::cpu
