#include "gguf/gguf_writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/aligned.h"
#include "gguf/escape.h"

namespace folio::gguf {

namespace {

class ByteOut {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Element type, count and items (an array value without its leading type tag).
void encode_array(ByteOut& out, const Array& a) {
  out.put<uint32_t>(static_cast<uint32_t>(a.elem_type()));
  out.put<uint64_t>(a.size());
  std::visit(
      [&out](const auto& items) {
        using T = typename std::decay_t<decltype(items)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) {
          for (const std::string& s : items) out.put_string(s);
        } else if constexpr (std::is_same_v<T, Array>) {
          for (const Array& inner : items) encode_array(out, inner);
        } else {
          out.put_bytes(items.data(), items.size() * sizeof(T));
        }
      },
      a.storage());
}

void encode_value(ByteOut& out, const Value& v) {
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out.put_string(x);
        } else if constexpr (std::is_same_v<T, Array>) {
          encode_array(out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          out.put<uint8_t>(x ? 1 : 0);
        } else {
          out.put<T>(x);
        }
      },
      v.storage());
}

uint64_t padded(uint64_t n, size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

class VectorSink {
 public:
  explicit VectorSink(std::vector<uint8_t>* out) : out_(out) {}
  bool write(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
    return true;
  }
  bool zeros(size_t n) {
    out_->insert(out_->end(), n, 0);
    return true;
  }

 private:
  std::vector<uint8_t>* out_;
};

class FileSink {
 public:
  explicit FileSink(std::FILE* f) : f_(f) {}
  bool write(const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, f_) == n; }
  bool zeros(size_t n) {
    static constexpr uint8_t kZeros[256] = {};
    while (n > 0) {
      const size_t k = std::min(n, sizeof(kZeros));
      if (!write(kZeros, k)) return false;
      n -= k;
    }
    return true;
  }

 private:
  std::FILE* f_;
};

}  // namespace

Status GgufWriter::add(std::string key, Value value) {
  if (keys_.count(key) != 0) {
    return invalid_argument("gguf writer: duplicate metadata key {}", quoted(key));
  }
  if (const Array* a = value.array(); a != nullptr && a->depth() > kMaxArrayDepth) {
    return invalid_argument("gguf writer: metadata key {}: arrays nest {} deep (limit {})",
                            quoted(key), a->depth(), kMaxArrayDepth);
  }
  if (key == kAlignmentKey) {
    const uint32_t* a = value.get_if<uint32_t>();
    if (a == nullptr) {
      return invalid_argument("gguf writer: metadata key '{}' must be u32, got {}", kAlignmentKey,
                              value_type_name(value.type()));
    }
    if (*a == 0 || !std::has_single_bit(*a)) {
      return invalid_argument("gguf writer: metadata key '{}' = {} is not a nonzero power of two",
                              kAlignmentKey, *a);
    }
    alignment_ = *a;
  }
  keys_.insert(key);
  metadata_.push_back(KeyValue{std::move(key), std::move(value)});
  return Status();
}

Status GgufWriter::add_tensor(std::string name, uint32_t type_id, std::span<const int64_t> shape,
                              std::vector<uint8_t> data) {
  const std::string q = quoted(name);
  if (tensor_names_.count(name) != 0) {
    return invalid_argument("gguf writer: duplicate tensor name {}", q);
  }
  const std::optional<DTypeTraits> traits = dtype_traits_for_id(type_id);
  if (!traits)
    return invalid_argument("gguf writer: tensor {}: unknown ggml type id {}", q, type_id);
  if (shape.empty() || shape.size() > kMaxTensorDims) {
    return invalid_argument("gguf writer: tensor {}: {} dims, expected 1..{}", q, shape.size(),
                            kMaxTensorDims);
  }
  TensorInfo info;
  info.name = name;
  info.type_id = type_id;
  info.n_dims = static_cast<uint32_t>(shape.size());
  int64_t nelements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1) {
      return invalid_argument("gguf writer: tensor {}: dimension {} = {} must be >= 1", q, d,
                              shape[d]);
    }
    info.ne[d] = shape[d];
    if (__builtin_mul_overflow(nelements, shape[d], &nelements)) {
      return invalid_argument("gguf writer: tensor {}: element count overflows int64", q);
    }
  }
  if (info.ne[0] % traits->block_size != 0) {
    return invalid_argument(
        "gguf writer: tensor {}: ne[0] = {} is not a multiple of the {} block size {}", q,
        info.ne[0], traits->name, traits->block_size);
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(nelements / traits->block_size,
                             static_cast<int64_t>(traits->type_size), &nbytes)) {
    return invalid_argument("gguf writer: tensor {}: byte size overflows int64", q);
  }
  if (static_cast<uint64_t>(nbytes) != data.size()) {
    return invalid_argument("gguf writer: tensor {}: {} needs {} bytes, got {}", q, traits->name,
                            nbytes, data.size());
  }
  info.nbytes = static_cast<uint64_t>(nbytes);
  tensor_names_.insert(name);
  tensors_.push_back(Tensor{std::move(info), std::move(data)});
  return Status();
}

std::vector<uint8_t> GgufWriter::header(std::vector<uint64_t>* offsets) const {
  ByteOut out;
  out.put_bytes(kMagic, sizeof(kMagic));
  out.put<uint32_t>(kWriteVersion);
  out.put<uint64_t>(tensors_.size());
  out.put<uint64_t>(metadata_.size());
  for (const KeyValue& kv : metadata_) {
    out.put_string(kv.key);
    out.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    encode_value(out, kv.value);
  }
  offsets->clear();
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    out.put_string(t.info.name);
    out.put<uint32_t>(t.info.n_dims);
    for (uint32_t d = 0; d < t.info.n_dims; ++d) out.put<int64_t>(t.info.ne[d]);
    out.put<uint32_t>(t.info.type_id);
    out.put<uint64_t>(offset);
    offsets->push_back(offset);
    offset += padded(t.info.nbytes, alignment_);
  }
  return std::move(out.bytes());
}

template <typename Sink>
void GgufWriter::emit(Sink& sink) const {
  // Callers check the sink's state; emit stops at the first failed write.
  std::vector<uint64_t> offsets;
  const std::vector<uint8_t> head = header(&offsets);
  if (!sink.write(head.data(), head.size())) return;
  if (tensors_.empty()) return;  // no data section (as vocabulary-only files)
  if (!sink.zeros(padded(head.size(), alignment_) - head.size())) return;
  for (const Tensor& t : tensors_) {
    if (!sink.write(t.data.data(), t.data.size())) return;
    if (!sink.zeros(padded(t.data.size(), alignment_) - t.data.size())) return;
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  VectorSink sink(&out);
  emit(sink);
  return out;
}

Status GgufWriter::write_file(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return io_error("gguf writer: cannot create '{}': {}", path, std::strerror(errno));
  }
  FileSink sink(f);
  emit(sink);
  const bool write_failed = std::ferror(f) != 0;
  const int saved = errno;
  const bool close_failed = std::fclose(f) != 0;
  if (write_failed || close_failed) {
    std::remove(path.c_str());
    return io_error("gguf writer: cannot write '{}': {}", path,
                    std::strerror(write_failed ? saved : errno));
  }
  return Status();
}

Result<GgufWriter> GgufWriter::from_file(const GgufFile& file) {
  GgufWriter w;
  for (const KeyValue& kv : file.metadata()) FOLIO_RETURN_IF_ERROR(w.add(kv.key, kv.value));
  for (const TensorInfo& t : file.tensors()) {
    const std::span<const uint8_t> bytes = file.tensor_bytes(t);
    FOLIO_RETURN_IF_ERROR(w.add_tensor(t.name, t.type_id,
                                       std::span<const int64_t>(t.ne.data(), t.n_dims),
                                       std::vector<uint8_t>(bytes.begin(), bytes.end())));
  }
  return w;
}

}  // namespace folio::gguf
