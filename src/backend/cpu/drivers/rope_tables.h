// Rope (kRope, every mode) through memoised angle tables, shared
// by every tier: the reference's arithmetic (ref/rope.cc), bit for bit, at a
// fraction of its cost.
//
// The reference spends nearly all its time on the angle table: per token,
// n_dims / 2 evaluations of pow, cos and sin in double. Every rope op of a
// forward pass with the same parameters and positions (q and k of a layer,
// and every layer of the same kind) needs the same table, so tables are
// memoised per thread, keyed by *content* (parameters, freq factor values,
// positions): a hit gives exactly the numbers a fresh evaluation would, so
// the memo changes no result. The tables are computed by the same scalar
// double code as the reference.
//
// A pair rotates in double, like the reference: x0, x1 widened, two
// products and a subtraction (or sum) rounded separately, no FMA, then one
// rounding to float. Layout: x F32 [head_dim, n_head, n_tokens, ne3]; pair i
// rotates (x[i], x[i + n_dims/2]) (neox, mrope, imrope) or (x[2i], x[2i + 1])
// (normal); in the multi-section modes its angle takes the position of the
// section that drives it (ref::rope_section_of), the table holding every
// pair's angle per token, so the rotation loop is neox's;
// dims >= n_dims are copied. A tier supplies a vector loop over the first
// pairs of a row (RopePairsFn); this driver does the rest of the row, the
// table, and the split of rows across the thread pool.
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// Rotates pairs [0, n) of one row for some n <= half of the tier's choosing
// (a multiple of its vector width) and returns n; c, s: the token's table.
using RopePairsFn = int64_t (*)(const float* x, float* d, int64_t half, bool neox,
                                const double* c, const double* s);

// Every mode (the multi-section ones with valid sections), F32 output, F32
// freq factors or none.
bool supports_rope_tables(const Op& op);

// Runs a (validated) kRope op; `pairs` may be null (every pair in scalar code).
Status rope_tables(const Op& op, const KernelContext& ctx, RopePairsFn pairs);

// The portable tier (rope.tables): every pair in the scalar expression.
Status rope_tables_scalar(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
