// Blocked driver of the SIMD gated DeltaNet kernel (kGatedDeltaNet and
// kGatedDeltaNetUpdate; simd/gated_delta_net.h, every SIMD tier), which is
// bit-identical to the references (ref/gated_delta_net*.cc).
//
// Every state row S[v, :] of a head evolves on its own (it only meets the
// token's shared q, k), so the SIMD kernels work on groups of `lanes`-row
// blocks of one head of one sequence with lanes = rows: the reductions over
// i (m = sum_i S k, out = sum_i S q) then keep the reference's sequential
// order and every other step is element-wise. This driver does the scalar
// parts exactly as the reference does them (L2 norms of q and k in double,
// the q scale, exp(g) through libm), once per (sequence, token, key head),
// resolves the prior / new state of each sequence (plain: the op's state and
// state output; fused: pool slots through StateSlots, with its identity /
// scratch rule) and splits the groups across the thread pool. Each group
// writes only its own rows and reads them completely before writing, so in
// place updates are safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// One group of `blocks` blocks of `lanes` consecutive state rows of one head
// of one sequence, through n_t tokens.
struct GdnRows {
  const char* src;    // first row of the group in the prior state
  size_t src_stride;  // bytes between rows
  char* dst;          // first row of the group in the new state (may equal src)
  size_t dst_stride;
  int64_t sk, n_t;
  const float* qk;     // token t: q at qk + t * qk_stride (normalised, scaled), k at + sk
  int64_t qk_stride;   // floats
  const float* decay;  // [n_t] exp(g)
  const float* beta;   // [n_t]
  const char* v;       // v of the group's first row for token 0
  size_t v_stride;     // bytes between tokens
  char* out;           // out of the group's first row for token 0
  size_t out_stride;
  float* tbuf;  // [sk][blocks * lanes] scratch, 64-byte aligned
  int blocks;   // 1, 2 or 4 (at most the max_blocks of run_gdn_blocked)
};

using GdnRowsFn = void (*)(const GdnRows& rows);

// Runs the op (kGatedDeltaNet or kGatedDeltaNetUpdate) with `fn` on groups of
// up to max_blocks (2 or 4) blocks of `lanes` rows. Requires S_k % lanes == 0
// and S_v % lanes == 0.
Status run_gdn_blocked(const Op& op, const KernelContext& ctx, int lanes, int max_blocks,
                       GdnRowsFn fn);

}  // namespace folio::cpu
