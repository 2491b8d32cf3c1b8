#include "tensor/tensor_view.h"

#include <fmt/format.h>

namespace folio {

TensorView TensorView::contiguous(void* data, DType dtype, const std::array<int64_t, kMaxDims>& ne) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.ne = ne;
  FOLIO_CHECK_MSG(ne[0] % block_size(dtype) == 0, "ne0 {} not a multiple of {} block size", ne[0],
                  dtype_name(dtype));
  v.nb[0] = type_size(dtype);
  v.nb[1] = row_size(dtype, ne[0]);
  for (int i = 2; i < kMaxDims; ++i) v.nb[i] = v.nb[i - 1] * static_cast<size_t>(ne[i - 1]);
  return v;
}

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  FOLIO_CHECK(shape.size() >= 1 && shape.size() <= kMaxDims);
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  int i = 0;
  for (int64_t d : shape) ne[i++] = d;
  return contiguous(data, dtype, ne);
}

size_t TensorView::span_bytes() const {
  if (nelements() == 0) return 0;
  size_t last = row_bytes();
  for (int i = 1; i < kMaxDims; ++i) last += static_cast<size_t>(ne[i] - 1) * nb[i];
  return last;
}

bool TensorView::overlaps(const TensorView& other) const {
  const char* a = static_cast<const char*>(data);
  const char* b = static_cast<const char*>(other.data);
  return a < b + other.span_bytes() && b < a + span_bytes();
}

bool TensorView::is_contiguous() const {
  if (nb[0] != type_size(dtype)) return false;
  size_t expect = row_size(dtype, ne[0]);
  for (int i = 1; i < kMaxDims; ++i) {
    if (ne[i] != 1 && nb[i] != expect) return false;
    expect *= static_cast<size_t>(ne[i]);
  }
  return true;
}

int TensorView::ndims() const {
  int n = kMaxDims;
  while (n > 1 && ne[n - 1] == 1) --n;
  return n;
}

TensorView TensorView::reshape(std::initializer_list<int64_t> shape) const {
  FOLIO_CHECK_MSG(is_contiguous(), "reshape of a non-contiguous view");
  TensorView v = contiguous(data, dtype, shape);
  FOLIO_CHECK_MSG(v.nelements() == nelements(), "reshape changes element count {} -> {}",
                  nelements(), v.nelements());
  return v;
}

std::string TensorView::shape_string() const {
  std::string s = fmt::format("{} [{}", dtype_name(dtype), ne[0]);
  for (int i = 1; i < ndims(); ++i) s += fmt::format(", {}", ne[i]);
  return s + "]";
}

}  // namespace folio
