// GgufFile: a parsed, fully validated GGUF v2/v3 file. open() maps the file
// read-only; parse() copies a byte span (fuzzer, tests). Everything is checked
// before it is used: no input can make the reader read out of bounds, crash,
// loop without progress or allocate more than a small multiple of the input
// size. Errors are Status values whose message starts "gguf: " and names the
// key / tensor and the file offset.
//
// Accepted: magic "GGUF", version 2 or 3 (little-endian), every metadata
// value type incl. arrays of strings and arrays of arrays (nested at most
// kMaxArrayDepth deep), bools 0/1, unique keys, `general.alignment` a u32
// nonzero power of two (default 32), unique tensor names, 1..4 dims each >= 1
// (empty tensors are rejected: no model has one, and a zero dim in a weight
// file means corruption), element count and byte size that fit in int64,
// any known ggml type id (exotic types dump; loading checks support), ne[0]
// a multiple of the type's block size, offsets aligned, data inside the file
// and no two tensors overlapping (any order and gaps are allowed).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "gguf/format.h"
#include "gguf/value.h"
#include "tensor/buffer.h"
#include "tensor/tensor_view.h"

namespace folio::gguf {

class Parser;

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  uint32_t type_id = 0;                                // raw ggml type id (a known id)
  uint32_t n_dims = 1;                                 // 1..4, as stored
  std::array<int64_t, kMaxTensorDims> ne{1, 1, 1, 1};  // innermost first; unused dims are 1
  uint64_t offset = 0;                                 // bytes from the start of the data section
  uint64_t nbytes = 0;                                 // bytes of data

  const char* type_name() const;
  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Maps (or, with options.mmap false, reads) `path` and parses it. Errors
  // name the path.
  static Result<GgufFile> open(const std::string& path, const FileLoadOptions& options = {});
  // Parses a copy of `bytes` (held in 64-byte aligned memory of exactly that size).
  static Result<GgufFile> parse(std::span<const uint8_t> bytes);

  GgufFile(GgufFile&&) = default;
  GgufFile& operator=(GgufFile&&) = default;

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  // File offset of the data section (header end rounded up to the alignment).
  // Vocabulary-only files may end before it; data_size() is then 0.
  size_t data_offset() const { return data_offset_; }
  size_t data_size() const { return data_size_; }
  size_t file_size() const { return storage_->size(); }
  // "" for parse()d bytes.
  const std::string& path() const { return path_; }

  // --- metadata, in file order --------------------------------------------
  std::span<const KeyValue> metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters. Missing key -> NotFound; wrong type or a value that does
  // not fit -> InvalidArgument. Integer getters accept any integer type whose
  // value fits (as llama.cpp hparams do); float getters accept f32 and f64.
  // The overloads with `fallback` return it when the key is absent (a key
  // that is present with the wrong type is still an error).
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<int32_t> get_i32(std::string_view key) const;
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<int64_t> get_i64(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<double> get_f64(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  // A view into this file's metadata (valid while the GgufFile lives).
  Result<std::string_view> get_string(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key, uint32_t fallback) const;
  Result<int32_t> get_i32(std::string_view key, int32_t fallback) const;
  Result<uint64_t> get_u64(std::string_view key, uint64_t fallback) const;
  Result<float> get_f32(std::string_view key, float fallback) const;
  Result<bool> get_bool(std::string_view key, bool fallback) const;
  Result<std::string_view> get_string(std::string_view key, std::string_view fallback) const;

  // Arrays (pointers/spans stay valid while the GgufFile lives; never null on OK).
  Result<const Array*> get_array(std::string_view key) const;
  Result<std::span<const std::string>> get_string_array(std::string_view key) const;
  // Elements of exactly type T (e.g. float scores, int32 token types).
  template <typename T>
  requires(kIsArrayElement<T> && !std::is_same_v<T, std::string> &&
           !std::is_same_v<T, Array>) Result<std::span<const T>> get_array_of(std::string_view key)
  const {
    FOLIO_ASSIGN_OR_RETURN(const Array* a, get_array(key));
    if (const std::vector<T>* v = a->get_if<T>()) return std::span<const T>(*v);
    return array_type_error(key, *a, value_type_name(value_type_of<T>()));
  }
  // Any integer element type, converted (per-layer hparam arrays).
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

  // --- tensors, in file order ---------------------------------------------
  std::span<const TensorInfo> tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Pointer to the data section (nullptr-free; may equal the end of the file).
  const uint8_t* data() const;
  // The bytes of one tensor of this file.
  std::span<const uint8_t> tensor_bytes(const TensorInfo& info) const;
  // A read-only view for compute: NotFound for a missing name, DataLoss /
  // Unsupported ("unsupported tensor type T for tensor NAME") from
  // dtype_for_tensor. The view points into this file's storage and must not be
  // written through.
  Result<TensorView> tensor_view(std::string_view name) const;

  // The mapping / memory the views point into, for owners that outlive this.
  const std::shared_ptr<Buffer>& storage() const { return storage_; }

 private:
  friend class Parser;
  GgufFile() = default;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using Index = std::unordered_map<std::string, size_t, StringHash, std::equal_to<>>;

  static Result<GgufFile> parse_storage(std::shared_ptr<Buffer> storage, std::string path);
  Status array_type_error(std::string_view key, const Array& a, const char* want) const;
  Result<const Value*> require(std::string_view key) const;

  std::shared_ptr<Buffer> storage_;
  std::string path_;
  uint32_t version_ = 0;
  size_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  size_t data_size_ = 0;
  std::vector<KeyValue> metadata_;
  Index metadata_index_;
  std::vector<TensorInfo> tensors_;
  Index tensor_index_;
};

}  // namespace folio::gguf
