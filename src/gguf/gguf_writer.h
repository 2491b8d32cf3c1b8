// GgufWriter: builds a GGUF v3 file from metadata and tensors. Everything the
// reader validates is validated on the way in (unique keys and names, array
// depth, dims, block multiples, `general.alignment`), so whatever the writer
// emits, GgufFile reads back identically. Tensor data follows the header in
// the order added, each tensor at an offset rounded up to the alignment and
// padded to it (as llama.cpp and gguf-py lay files out).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "gguf/format.h"
#include "gguf/gguf_file.h"
#include "gguf/value.h"
#include "tensor/dtype.h"

namespace folio::gguf {

class GgufWriter {
 public:
  GgufWriter() = default;

  // Adds a metadata key (file order = call order). Duplicate keys, arrays
  // nested deeper than kMaxArrayDepth and a `general.alignment` that is not a
  // u32 nonzero power of two are InvalidArgument; the alignment key also sets
  // the alignment of the tensor data.
  Status add(std::string key, Value value);

  // Adds a tensor of raw ggml type `type_id` (any known id) with `shape`
  // (innermost first, 1..4 dims, each >= 1) and its bytes, which must be
  // exactly the tensor's size. Moving `data` in avoids a copy.
  Status add_tensor(std::string name, uint32_t type_id, std::span<const int64_t> shape,
                    std::vector<uint8_t> data);
  Status add_tensor(std::string name, DType dtype, std::span<const int64_t> shape,
                    std::vector<uint8_t> data) {
    return add_tensor(std::move(name), static_cast<uint32_t>(dtype), shape, std::move(data));
  }

  size_t alignment() const { return alignment_; }
  size_t num_tensors() const { return tensors_.size(); }
  size_t num_metadata() const { return metadata_.size(); }

  // The whole file.
  std::vector<uint8_t> to_bytes() const;
  // Writes the file (streamed; the data are not copied again).
  Status write_file(const std::string& path) const;

  // Copies a parsed file's metadata and tensors (raw bytes) into a writer:
  // writer_from(file).to_bytes() re-encodes `file` as v3.
  static Result<GgufWriter> from_file(const GgufFile& file);

 private:
  struct Tensor {
    TensorInfo info;
    std::vector<uint8_t> data;
  };
  // Header bytes (magic .. tensor infos, unpadded) and each tensor's offset.
  std::vector<uint8_t> header(std::vector<uint64_t>* offsets) const;
  template <typename Sink>
  void emit(Sink& sink) const;

  std::vector<KeyValue> metadata_;
  std::vector<Tensor> tensors_;  // info.offset is assigned when the header is built
  size_t alignment_ = kDefaultAlignment;
  std::unordered_set<std::string> keys_;
  std::unordered_set<std::string> tensor_names_;
};

}  // namespace folio::gguf
