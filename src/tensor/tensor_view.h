// TensorView: a non-owning, type-erased view of up to 4 dimensions, ggml
// order: ne[0] is the innermost (contiguous) dimension, nb[i] the byte stride
// of dimension i. For block-quantized types nb[0] is the block size in bytes
// and ne[0] must be a multiple of the block's element count; rows (dim 0) are
// always contiguous. Owning storage is separate (Buffer).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/check.h"
#include "tensor/dtype.h"

namespace folio {

inline constexpr int kMaxDims = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // elements per dimension
  std::array<size_t, kMaxDims> nb{0, 0, 0, 0};   // bytes per step in each dimension

  // A contiguous view over `data` with shape `shape` (innermost first; missing
  // trailing dims are 1).
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape);
  static TensorView contiguous(void* data, DType dtype, const std::array<int64_t, kMaxDims>& ne);

  bool empty() const { return data == nullptr; }
  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return row_size(dtype, ne[0]); }
  // Bytes spanned from data to one past the last element (for bounds checks).
  size_t span_bytes() const;
  // Whether the byte ranges this view and `other` span intersect
  // (conservative for interleaved strided views).
  bool overlaps(const TensorView& other) const;
  // Bytes a contiguous tensor of this shape occupies.
  size_t nbytes_contiguous() const { return row_bytes() * static_cast<size_t>(nrows()); }
  bool is_contiguous() const;
  // Number of dimensions ignoring trailing 1s (at least 1).
  int ndims() const;

  // Pointer to the start of row (i1, i2, i3).
  template <typename T = void>
  T* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]);
  }
  // Element pointer for plain (non-block) types.
  template <typename T>
  T* at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data) + i0 * nb[0] + i1 * nb[1] + i2 * nb[2] +
                                i3 * nb[3]);
  }

  // A view with a new shape over the same contiguous data (CHECKs contiguity
  // and element count).
  TensorView reshape(std::initializer_list<int64_t> shape) const;

  // "q4_K [4096, 11008]"
  std::string shape_string() const;
};

}  // namespace folio
