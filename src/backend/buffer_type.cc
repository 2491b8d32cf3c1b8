#include "backend/buffer_type.h"

#include <cstring>

namespace folio {

size_t BufferType::weight_bytes(const WeightUse& w) const {
  return row_size(w.dtype, w.ne[0]) * static_cast<size_t>(w.ne[1] * w.ne[2] * w.ne[3]);
}

Status BufferType::store_weight(const WeightUse& w, const void* src, size_t src_bytes,
                                void* dst) const {
  const size_t need = weight_bytes(w);
  if (src_bytes != need) {
    return invalid_argument("weight '{}': {} bytes given, {} expected for {}", w.name, src_bytes,
                            need, dtype_name(w.dtype));
  }
  std::memcpy(dst, src, need);
  return Status();
}

TensorView BufferType::weight_view(const WeightUse& w, void* data) const {
  return TensorView::contiguous(data, w.dtype, w.ne);
}

Result<std::unique_ptr<Buffer>> HostBufferType::alloc(size_t size) const {
  auto b = HostBuffer::create(size, this, alignment());
  if (!b.ok()) return b.status();
  return std::unique_ptr<Buffer>(std::move(b).value());
}

bool HostBufferType::supports_weight(const WeightUse& w) const { return traits(w.dtype).supported; }

const BufferType& host_buffer_type() {
  static const HostBufferType kType;
  return kType;
}

Result<const BufferType*> place_weight(const std::vector<const BufferType*>& priority,
                                       const WeightUse& w) {
  for (const BufferType* t : priority) {
    if (t != nullptr && t->supports_weight(w)) return t;
  }
  return unsupported("no buffer type accepts weight '{}' ({} [{}, {}, {}, {}]) for {}", w.name,
                     dtype_name(w.dtype), w.ne[0], w.ne[1], w.ne[2], w.ne[3],
                     op_kind_name(w.consumer));
}

}  // namespace folio
