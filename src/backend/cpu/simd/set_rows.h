// set_rows over the traits type (f32x16.h): F32 rows scattered into an
// F32, F16 or Q8_0 table through a slot mapping (the KV cache write), the
// same bytes as the reference (ref/set_rows.cc): f16 through store_f16
// (round to nearest even, core/fp16.h's rule, the tail through f32_to_f16
// itself), q8_0 through the activation quantizer's block (quantize_act.h,
// byte-identical to the reference Q8_0 quantizer). BF16 tables stay on the
// reference.
//
//   src0  rows  F32 [n_cols, ne1, ne2, ne3]  (n = ne1 * ne2 * ne3 rows)
//   src1  slots I32, n values read flat
//   dst   table [n_cols, n_slots]
//
// Slots: drivers/set_rows_slots.h (all checked before anything is
// written). Threads: slot s belongs to thread s % n_threads,
// which writes the rows of its slots in row order, so where slots repeat
// the last row wins as in the reference, whatever the thread count.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/cpu/drivers/parallel.h"
#include "backend/cpu/drivers/set_rows_slots.h"
#include "backend/cpu/simd/kernels.h"
#include "backend/cpu/simd/quantize_act.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"

namespace folio::cpu::simd {

// One row of n values at src into a row of table type t at dst.
template <class S>
inline void set_row(DType t, const float* src, void* dst, int64_t n) {
  if (t == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else if (t == DType::F16) {
    auto* h = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) S::store_f16(h + i, S::load(src + i));
    for (; i < n; ++i) h[i] = f32_to_f16(src[i]);
  } else {  // Q8_0
    auto* blk = static_cast<quant::BlockQ8_0*>(dst);
    for (int64_t b = 0; b < n / quant::kQK; ++b) {
      blk[b].d = f32_to_f16(quantize_q8_0_block<S>(src + b * quant::kQK, blk[b].qs, nullptr));
    }
  }
}

template <class S>
Status set_rows(const Op& op, const KernelContext& ctx) {
  const TensorView& rows = op.src[0];
  const TensorView& slots = op.src[1];
  const TensorView& table = op.dst;
  const int64_t n = slots.nelements();
  FOLIO_RETURN_IF_ERROR(check_set_rows_slots(op));
  const int64_t n_cols = rows.ne[0];
  const int n_threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const bool parallel = n > 1 && n * n_cols >= kMinParallelElements;
  const int64_t parts = parallel ? n_threads : 1;
  run_range(ctx, parts, parallel, [&](int64_t b, int64_t e) {
    for (int64_t i = 0; i < n; ++i) {
      const int32_t s = set_rows_slot(slots, i);
      const int64_t owner = s % parts;
      if (owner < b || owner >= e) continue;
      set_row<S>(table.dtype, set_rows_row(rows, i), table.row<void>(s), n_cols);
    }
  });
  return Status();
}

}  // namespace folio::cpu::simd
