// The driver of the SIMD Mamba-2 scans (kSsmScan and its fused decode step
// kSsmScanUpdate, backend/op.h; the body simd/ssm_scan.h of every SIMD tier): the
// per-token scalars (softplus of dt and the decay, drivers/ssm_scan_step.h),
// the per-sequence state views (a sequence of the state tensor, or a pool
// slot: drivers/state_slots.h, scratch rule included), the work items and
// the split across the thread pool are written once here; each tier
// supplies one function that scans a group of up to max_blocks
// (<= kSsmScanMaxBlocks) blocks of `lanes` state rows of one head of one sequence through every
// token (its lanes are rows, so each row's reduction keeps the reference's
// order). A group reads all its rows before it writes any and groups are
// disjoint: in-place updates are safe. P must be a multiple of `lanes`.
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

inline constexpr int kSsmScanMaxBlocks = 4;

struct SsmScanGroup {
  const TensorView* op_src;  // the op's inputs (x, dt, A, B, C, ...)
  const TensorView* y;       // F32 [P, H, T, n_seq]
  const TensorView* from;    // [N, P, H, 1] prior state of this sequence
  const TensorView* to;      // [N, P, H, 1] where its new state goes
  int64_t seq, head, group, row0;
  int blocks;       // 1..max_blocks blocks of `lanes` rows from row0
  const float* sp;  // [T] softplus(dt) of this head
  const float* da;  // [T] exp(sp * A)
  float* tbuf;      // [N][lanes * kSsmScanMaxBlocks] scratch of this thread, 64-byte aligned
};
using SsmScanGroupFn = void (*)(const SsmScanGroup& g);

// kSsmScan: the state of sequence s is src5's sequence s, its new state goes
// to dst2's. kSsmScanUpdate: slot ids[s] of the pool, to slot dst_slots[s].
Status ssm_scan_rows(const Op& op, const KernelContext& ctx, int lanes, int max_blocks,
                     SsmScanGroupFn fn);
Status ssm_scan_update_rows(const Op& op, const KernelContext& ctx, int lanes, int max_blocks,
                            SsmScanGroupFn fn);

}  // namespace folio::cpu
