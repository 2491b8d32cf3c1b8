// get_rows reference: dst[:, i] = dequant(table[:, ids[i]]).
//
// table [n_cols, n_rows] in any supported dtype, ids I32 (any shape, read as
// a flat list with strides), dst F32 rows in the same flat order. Every id is
// range-checked before anything is written: a bad id (data, not structure)
// is an OutOfRange error naming the id and its index, never a crash.
#include <vector>

#include "backend/cpu/ref/ref_util.h"
#include "quant/quant.h"

namespace folio::ref {

Status get_rows(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& table = op.src[0];  // [n_cols, n_rows]
  const TensorView& ids = op.src[1];    // I32 [n]
  const TensorView& dst = op.dst;       // F32 [n_cols, n]
  if (table.ne[2] != 1 || table.ne[3] != 1) {
    return invalid_argument("get_rows: table must be 2-D, got {}", table.shape_string());
  }
  const int64_t n_rows = table.ne[1];
  const int64_t n = ids.nelements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = elem<int32_t>(ids, i);
    if (id < 0 || id >= n_rows) {
      return out_of_range("get_rows: id {} at index {} out of range [0, {})", id, i, n_rows);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = elem<int32_t>(ids, i);
    quant::dequantize_row_ref(table.dtype, table.row(id), row_ptr<float>(dst, i), table.ne[0]);
  }
  return Status();
}

}  // namespace folio::ref
