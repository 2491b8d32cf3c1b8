// Reference set_rows (kSetRows, tier kRef): scatter F32 rows into a table
// through a slot mapping, converting to the table's type with the reference
// quantizers (f16/bf16 round to nearest even; q8_0 per 32-element block).
//
//   src0  rows  F32 [n_cols, n]
//   src1  slots I32 [n]
//   dst   table [n_cols, n_slots]  (F32, F16, BF16 or Q8_0)
// All slots are checked before anything is written, so a bad slot leaves the
// table untouched.
#include <cstring>

#include "backend/cpu/drivers/set_rows_slots.h"
#include "backend/cpu/kernel.h"
#include "quant/quant.h"

namespace folio {

namespace {

Status set_rows_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const TensorView& rows = op.src[0];
  const TensorView& slots = op.src[1];
  const TensorView& table = op.dst;
  const int64_t n = slots.nelements();
  FOLIO_RETURN_IF_ERROR(cpu::check_set_rows_slots(op));
  const int64_t n_cols = rows.ne[0];
  for (int64_t i = 0; i < n; ++i) {
    const float* src = cpu::set_rows_row(rows, i);
    void* dst = table.row<void>(cpu::set_rows_slot(slots, i));
    if (table.dtype == DType::F32) {
      std::memcpy(dst, src, static_cast<size_t>(n_cols) * sizeof(float));
    } else {
      quant::quantize_row_ref(table.dtype, src, dst, n_cols);
    }
  }
  return Status();
}

}  // namespace

void register_ref_kernels_cache(KernelTable& t) {
  t.add(Kernel{OpKind::kSetRows, KernelTier::kRef, "set_rows.ref", nullptr, set_rows_ref});
}

}  // namespace folio
