// A small model built in memory with the GGUF writer: metadata and tensor
// list are editable, so tests can break exactly one thing (drop a key or a
// tensor, change a shape or a type) and check the loader's message.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "gguf/value.h"
#include "tensor/dtype.h"

namespace folio::model::testing {

struct SyntheticModel {
  struct Tensor {
    std::string name;
    DType type = DType::F32;
    std::vector<int64_t> shape;
  };
  std::vector<std::pair<std::string, gguf::Value>> metadata;  // file order
  std::vector<Tensor> tensors;

  // A llama model: 1 layer, n_embd 256 (a multiple of 256 so K-quant and
  // IQ types fit), 4 heads / 2 KV heads, n_ff 512, vocab 64.
  static SyntheticModel llama();
  // The keys and tensor shapes of an F32 GGUF file (the refdata's tiny
  // models), to be edited into a bad variant; build() refills the data.
  static Result<SyntheticModel> from_file(const std::string& path);

  void set(const std::string& key, gguf::Value value);
  void erase_key(const std::string& key);
  void erase_tensor(const std::string& name);
  Tensor& tensor(const std::string& name);  // CHECKs it exists

  // The file: F32 tensors hold small deterministic values, others zeros.
  Result<gguf::GgufFile> build() const;
};

}  // namespace folio::model::testing
