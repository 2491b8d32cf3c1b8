#include "gguf/gguf_file.h"

#include <cstring>
#include <limits>
#include <new>

#include "gguf/escape.h"
#include "tensor/dtype.h"

namespace folio::gguf {

namespace {

// A private copy of parse()d bytes: 64-byte aligned like a mapping's tensors,
// and exactly `size` bytes long so that sanitizers see any over-read.
class ByteCopy final : public Buffer {
 public:
  explicit ByteCopy(std::span<const uint8_t> bytes)
      : Buffer(nullptr),
        data_(static_cast<uint8_t*>(::operator new (bytes.size(), std::align_val_t{kAlign}))),
        size_(bytes.size()) {
    if (size_ > 0) std::memcpy(data_, bytes.data(), size_);
  }
  ~ByteCopy() override { ::operator delete (data_, std::align_val_t{kAlign}); }
  void* data() override { return data_; }
  const void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  static constexpr size_t kAlign = 64;
  uint8_t* data_;
  size_t size_;
};

// Describes a value for type errors: "string", "i32 -1".
std::string describe(const Value& v) {
  if (auto i = v.to_i64()) return fmt::format("{} {}", value_type_name(v.type()), *i);
  if (auto u = v.to_u64()) return fmt::format("{} {}", value_type_name(v.type()), *u);
  if (auto f = v.to_f64()) return fmt::format("{} {}", value_type_name(v.type()), *f);
  if (const Array* a = v.array()) {
    return fmt::format("array of {} {}", a->size(), value_type_name(a->elem_type()));
  }
  return value_type_name(v.type());
}

template <typename T>
Result<T> integer_as(const Value& v, std::string_view key, const char* want) {
  if (!is_integer_type(v.type())) {
    return invalid_argument("gguf: metadata key {} is {}, expected an integer ({})", quoted(key),
                            describe(v), want);
  }
  if constexpr (std::is_signed_v<T>) {
    const std::optional<int64_t> i = v.to_i64();
    if (i && *i >= std::numeric_limits<T>::min() && *i <= std::numeric_limits<T>::max()) {
      return static_cast<T>(*i);
    }
  } else {
    const std::optional<uint64_t> u = v.to_u64();
    if (u && *u <= std::numeric_limits<T>::max()) return static_cast<T>(*u);
  }
  return invalid_argument("gguf: metadata key {} = {} does not fit in {}", quoted(key), describe(v),
                          want);
}

}  // namespace

const char* TensorInfo::type_name() const {
  const std::optional<DTypeTraits> t = dtype_traits_for_id(type_id);
  return t ? t->name : "?";
}

Result<GgufFile> GgufFile::open(const std::string& path, const FileLoadOptions& options) {
  Result<std::unique_ptr<MappedFile>> mapped = MappedFile::open(path, options);
  if (!mapped.ok()) return mapped.status().with_context("gguf");
  return parse_storage(std::shared_ptr<Buffer>(std::move(mapped).value()), path);
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes) {
  return parse_storage(std::make_shared<ByteCopy>(bytes), std::string());
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

Result<const Value*> GgufFile::require(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return not_found("gguf: metadata key {} not found", quoted(key));
  return v;
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  return integer_as<uint32_t>(*v, key, "u32");
}

Result<int32_t> GgufFile::get_i32(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  return integer_as<int32_t>(*v, key, "i32");
}

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  return integer_as<uint64_t>(*v, key, "u64");
}

Result<int64_t> GgufFile::get_i64(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  return integer_as<int64_t>(*v, key, "i64");
}

Result<double> GgufFile::get_f64(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  if (auto f = v->to_f64()) return *f;
  return invalid_argument("gguf: metadata key {} is {}, expected a float (f32 or f64)", quoted(key),
                          describe(*v));
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(double d, get_f64(key));
  return static_cast<float>(d);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  if (const bool* b = v->get_if<bool>()) return *b;
  return invalid_argument("gguf: metadata key {} is {}, expected bool", quoted(key), describe(*v));
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  if (const std::string* s = v->string()) return std::string_view(*s);
  return invalid_argument("gguf: metadata key {} is {}, expected string", quoted(key),
                          describe(*v));
}

Result<uint32_t> GgufFile::get_u32(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : Result<uint32_t>(fallback);
}
Result<int32_t> GgufFile::get_i32(std::string_view key, int32_t fallback) const {
  return has(key) ? get_i32(key) : Result<int32_t>(fallback);
}
Result<uint64_t> GgufFile::get_u64(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_u64(key) : Result<uint64_t>(fallback);
}
Result<float> GgufFile::get_f32(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : Result<float>(fallback);
}
Result<bool> GgufFile::get_bool(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : Result<bool>(fallback);
}
Result<std::string_view> GgufFile::get_string(std::string_view key,
                                              std::string_view fallback) const {
  return has(key) ? get_string(key) : Result<std::string_view>(fallback);
}

Result<const Array*> GgufFile::get_array(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Value* v, require(key));
  if (const Array* a = v->array()) return a;
  return invalid_argument("gguf: metadata key {} is {}, expected an array", quoted(key),
                          describe(*v));
}

Status GgufFile::array_type_error(std::string_view key, const Array& a, const char* want) const {
  return invalid_argument("gguf: metadata key {} is an array of {} {}, expected an array of {}",
                          quoted(key), a.size(), value_type_name(a.elem_type()), want);
}

Result<std::span<const std::string>> GgufFile::get_string_array(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Array* a, get_array(key));
  if (const std::vector<std::string>* v = a->get_if<std::string>()) {
    return std::span<const std::string>(*v);
  }
  return array_type_error(key, *a, "string");
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  FOLIO_ASSIGN_OR_RETURN(const Array* a, get_array(key));
  if (!is_integer_type(a->elem_type())) return array_type_error(key, *a, "integers");
  std::vector<int64_t> out(a->size());
  for (size_t i = 0; i < out.size(); ++i) {
    const std::optional<int64_t> v = a->int_at(i);
    if (!v) {
      return invalid_argument("gguf: metadata key {}: item {} of the u64 array does not fit in i64",
                              quoted(key), i);
    }
    out[i] = *v;
  }
  return out;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* GgufFile::data() const {
  const uint8_t* base = static_cast<const uint8_t*>(storage_->data());
  if (base == nullptr) return nullptr;  // empty mapped file (never parses)
  return base + std::min(data_offset_, storage_->size());
}

std::span<const uint8_t> GgufFile::tensor_bytes(const TensorInfo& info) const {
  FOLIO_CHECK_MSG(find_tensor(info.name) == &info, "tensor '{}' is not from this file", info.name);
  // Validated by the parser: offset + nbytes <= data_size_.
  return std::span<const uint8_t>(data() + info.offset, static_cast<size_t>(info.nbytes));
}

Result<TensorView> GgufFile::tensor_view(std::string_view name) const {
  const TensorInfo* info = find_tensor(name);
  if (info == nullptr) return not_found("gguf: tensor {} not found", quoted(name));
  FOLIO_ASSIGN_OR_RETURN(DType dtype, dtype_for_tensor(info->type_id, info->name));
  // Tensor data is never written through a view of the file (the mapping is
  // read-only); TensorView is mutable by design for activations.
  void* data = const_cast<uint8_t*>(tensor_bytes(*info).data());
  return TensorView::contiguous(data, dtype, info->ne);
}

}  // namespace folio::gguf
