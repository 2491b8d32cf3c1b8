// BufferType: a kind of memory (plain host, repacked/interleaved for a SIMD
// kernel, AMX tiles, device memory). Weight placement asks each type, in a
// priority list, whether it accepts a weight for the op that consumes it; the
// first that does holds it. A packed type therefore never receives F32 norms
// or embeddings it cannot serve.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/op.h"
#include "core/status.h"
#include "tensor/buffer.h"
#include "tensor/tensor_view.h"

namespace folio {

// A weight tensor together with how it will be used.
struct WeightUse {
  std::string name;                      // GGUF tensor name, for messages
  DType dtype = DType::F32;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  OpKind consumer = OpKind::kMulMat;     // the op that reads it (mul_mat, get_rows, ...)
};

class BufferType {
 public:
  virtual ~BufferType() = default;

  virtual std::string name() const = 0;
  virtual size_t alignment() const = 0;
  virtual bool is_host() const = 0;
  virtual Result<std::unique_ptr<Buffer>> alloc(size_t size) const = 0;

  // Does this type accept `w` as a weight consumed by w.consumer?
  virtual bool supports_weight(const WeightUse& w) const = 0;
  // Bytes this type needs to store `w` (a repacked layout may need more or
  // less than the GGUF bytes).
  virtual size_t weight_bytes(const WeightUse& w) const;
  // Copies GGUF-layout bytes of `w` into `dst` (which lies in a buffer of this
  // type) in this type's layout. Plain types memcpy; packed types repack.
  virtual Status store_weight(const WeightUse& w, const void* src, size_t src_bytes,
                              void* dst) const;
  // True if weights in GGUF layout can be used straight from a file mapping
  // (no copy): only plain host types.
  virtual bool can_map_weights() const { return false; }
  // The view kernels read for `w` once store_weight has written it at
  // `data`: a contiguous view of w.dtype here; packed types return their
  // packed dtype and strides.
  virtual TensorView weight_view(const WeightUse& w, void* data) const;
};

// Plain host memory: accepts every weight, maps GGUF data without copying.
class HostBufferType final : public BufferType {
 public:
  std::string name() const override { return "CPU"; }
  size_t alignment() const override { return kDefaultAlignment; }
  bool is_host() const override { return true; }
  Result<std::unique_ptr<Buffer>> alloc(size_t size) const override;
  bool supports_weight(const WeightUse& w) const override;
  bool can_map_weights() const override { return true; }
};

const BufferType& host_buffer_type();

// Weight placement: the first type in `priority` that accepts `w`, or
// kUnsupported naming the tensor if none does.
Result<const BufferType*> place_weight(const std::vector<const BufferType*>& priority,
                                       const WeightUse& w);

}  // namespace folio
