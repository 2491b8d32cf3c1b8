// GGUF parsing and validation (see gguf_file.h for what is accepted).
//
// Safety argument: every read goes through Cursor, which checks the bytes left
// before copying. Every count read from the file (kv pairs, tensors, array
// elements, string lengths) is checked against the bytes left times the
// smallest encoding of one item before anything is reserved, so memory stays
// within a small constant factor of the file size. Array nesting is bounded by
// kMaxArrayDepth; every loop consumes at least one byte per iteration.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "gguf/escape.h"
#include "gguf/gguf_file.h"
#include "tensor/dtype.h"

namespace folio::gguf {

static_assert(std::endian::native == std::endian::little,
              "folio reads little-endian GGUF files on little-endian hosts only");

namespace {

// Smallest possible encodings, to bound counts read from the file.
constexpr size_t kMinKvBytes = 8 + 4 + 1;  // key length, type, u8 value
constexpr size_t kMinTensorInfoBytes =
    8 + 4 + 8 + 4 + 8;  // name length, n_dims, ne[0], type, offset

std::string shape_string(const std::array<int64_t, kMaxTensorDims>& ne, uint32_t n_dims) {
  std::string s = "[";
  for (uint32_t i = 0; i < n_dims; ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
  return s + "]";
}

// Bounds-checked little-endian reads over [data, data + size).
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  Status read(T* out, std::string_view what) {
    if (remaining() < sizeof(T)) return truncated(sizeof(T), what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status();
  }

  Status read_string(std::string* out, std::string_view what) {
    const size_t at = pos_;
    uint64_t len = 0;
    if (remaining() < sizeof(len)) return truncated(sizeof(len), what);
    std::memcpy(&len, data_ + pos_, sizeof(len));
    pos_ += sizeof(len);
    if (len > remaining()) {
      return data_loss("{} at offset {} has length {} but only {} bytes are left (file size {})",
                       what, at, len, remaining(), size_);
    }
    out->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return Status();
  }

  // Reads `count` packed elements; the caller has checked count * sizeof(T)
  // against remaining().
  template <typename T>
  void read_packed(std::vector<T>* out, size_t count) {
    FOLIO_CHECK(count <= remaining() / sizeof(T));
    out->resize(count);
    if (count > 0) std::memcpy(out->data(), data_ + pos_, count * sizeof(T));
    pos_ += count * sizeof(T);
  }

  Status truncated(size_t need, std::string_view what) const {
    return data_loss(
        "unexpected end of file reading {} at offset {} (needs {} bytes, {} left; file size {})",
        what, pos_, need, remaining(), size_);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

class Parser {
 public:
  Parser(GgufFile* file, const uint8_t* data, size_t size) : f_(*file), cur_(data, size) {}

  Status run() {
    uint64_t n_tensors = 0;
    uint64_t n_kv = 0;
    FOLIO_RETURN_IF_ERROR(parse_header(&n_tensors, &n_kv));
    f_.metadata_.reserve(static_cast<size_t>(n_kv));
    kv_offsets_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) FOLIO_RETURN_IF_ERROR(parse_kv(i, n_kv));
    FOLIO_RETURN_IF_ERROR(read_alignment());
    f_.tensors_.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) FOLIO_RETURN_IF_ERROR(parse_tensor_info(i, n_tensors));
    return layout_data();
  }

 private:
  Status parse_header(uint64_t* n_tensors, uint64_t* n_kv) {
    if (cur_.size() < 4) {
      return data_loss("file is {} bytes, too small for a GGUF header (magic 'GGUF' at offset 0)",
                       cur_.size());
    }
    char magic[4];
    FOLIO_RETURN_IF_ERROR(cur_.read(&magic, "magic"));
    if (std::memcmp(magic, kMagic, 4) != 0) {
      return data_loss("bad magic {} at offset 0, expected 'GGUF' (not a GGUF file)",
                       quoted(std::string_view(magic, 4)));
    }
    uint32_t version = 0;
    FOLIO_RETURN_IF_ERROR(cur_.read(&version, "version"));
    if (version == 1) {
      return unsupported(
          "GGUF version 1 (offset 4) is not supported: v1 used 32-bit counts; convert the model "
          "again with a current converter (versions 2 and 3 are read)");
    }
    if (version != 0 && (version & 0xFFFFu) == 0) {
      return unsupported(
          "version field 0x{:08x} at offset 4 looks byte-swapped: big-endian GGUF files are not "
          "supported",
          version);
    }
    if (version < kMinVersion || version > kMaxVersion) {
      return unsupported("unsupported GGUF version {} at offset 4 (versions {} and {} are read)",
                         version, kMinVersion, kMaxVersion);
    }
    f_.version_ = version;
    FOLIO_RETURN_IF_ERROR(cur_.read(n_tensors, "tensor count"));
    FOLIO_RETURN_IF_ERROR(cur_.read(n_kv, "metadata kv count"));
    const size_t left = cur_.remaining();
    if (*n_kv > left / kMinKvBytes) {
      return data_loss(
          "metadata kv count {} at offset 16 is impossible: the {} bytes after the header hold at "
          "most {} key-value pairs",
          *n_kv, left, left / kMinKvBytes);
    }
    const size_t left_for_tensors = left - static_cast<size_t>(*n_kv) * kMinKvBytes;
    if (*n_tensors > left_for_tensors / kMinTensorInfoBytes) {
      return data_loss(
          "tensor count {} at offset 8 is impossible: the {} bytes left after {} key-value pairs "
          "hold at most {} tensor infos",
          *n_tensors, left_for_tensors, *n_kv, left_for_tensors / kMinTensorInfoBytes);
    }
    return Status();
  }

  Status parse_kv(uint64_t i, uint64_t n_kv) {
    const size_t at = cur_.pos();
    std::string key;
    Status s = cur_.read_string(&key, "metadata key");
    if (!s.ok()) return s.with_context(fmt::format("metadata kv {} of {}", i, n_kv));
    if (auto it = f_.metadata_index_.find(key); it != f_.metadata_index_.end()) {
      return data_loss(
          "duplicate metadata key {} (kv {} at offset {}; first defined by kv {} at offset {})",
          quoted(key), i, at, it->second, kv_offsets_[it->second]);
    }
    const size_t type_at = cur_.pos();
    uint32_t type_id = 0;
    Value value;
    s = cur_.read(&type_id, "value type");
    if (s.ok()) s = parse_value(type_id, type_at, 0, &value);
    if (!s.ok()) {
      return s.with_context(
          fmt::format("metadata key {} (kv {} at offset {})", quoted(key), i, at));
    }
    f_.metadata_index_.emplace(key, f_.metadata_.size());
    f_.metadata_.push_back(KeyValue{std::move(key), std::move(value)});
    kv_offsets_.push_back(at);
    return Status();
  }

  template <typename T>
  Status read_scalar(Value* out, std::string_view what) {
    T v{};
    FOLIO_RETURN_IF_ERROR(cur_.read(&v, what));
    *out = Value(v);
    return Status();
  }

  // `depth` counts the arrays enclosing this value.
  Status parse_value(uint32_t type_id, size_t type_at, int depth, Value* out) {
    const std::optional<ValueType> type = value_type_from_id(type_id);
    if (!type) {
      return data_loss("invalid value type {} at offset {} (valid types are 0..{})", type_id,
                       type_at, kValueTypeCount - 1);
    }
    switch (*type) {
      case ValueType::kU8:
        return read_scalar<uint8_t>(out, "u8 value");
      case ValueType::kI8:
        return read_scalar<int8_t>(out, "i8 value");
      case ValueType::kU16:
        return read_scalar<uint16_t>(out, "u16 value");
      case ValueType::kI16:
        return read_scalar<int16_t>(out, "i16 value");
      case ValueType::kU32:
        return read_scalar<uint32_t>(out, "u32 value");
      case ValueType::kI32:
        return read_scalar<int32_t>(out, "i32 value");
      case ValueType::kF32:
        return read_scalar<float>(out, "f32 value");
      case ValueType::kU64:
        return read_scalar<uint64_t>(out, "u64 value");
      case ValueType::kI64:
        return read_scalar<int64_t>(out, "i64 value");
      case ValueType::kF64:
        return read_scalar<double>(out, "f64 value");
      case ValueType::kBool: {
        const size_t at = cur_.pos();
        uint8_t b = 0;
        FOLIO_RETURN_IF_ERROR(cur_.read(&b, "bool value"));
        if (b > 1) return data_loss("bool value {} at offset {} is not 0 or 1", b, at);
        *out = Value(b != 0);
        return Status();
      }
      case ValueType::kString: {
        std::string s;
        FOLIO_RETURN_IF_ERROR(cur_.read_string(&s, "string value"));
        *out = Value(std::move(s));
        return Status();
      }
      case ValueType::kArray: {
        Array a;
        FOLIO_RETURN_IF_ERROR(parse_array(depth + 1, &a));
        *out = Value(std::move(a));
        return Status();
      }
    }
    return internal_error("unhandled value type {}", type_id);
  }

  template <typename T>
  void read_packed_into(Array* out, size_t count) {
    cur_.read_packed(out->get_if<T>(), count);
  }

  // Reads an array header and its items; `depth` is 1 for a top-level array.
  Status parse_array(int depth, Array* out) {
    const size_t at = cur_.pos();
    if (depth > kMaxArrayDepth) {
      return data_loss("array at offset {} is nested {} levels deep (limit {})", at, depth,
                       kMaxArrayDepth);
    }
    uint32_t elem_id = 0;
    FOLIO_RETURN_IF_ERROR(cur_.read(&elem_id, "array element type"));
    const std::optional<ValueType> elem = value_type_from_id(elem_id);
    if (!elem) {
      return data_loss("invalid array element type {} at offset {} (valid types are 0..{})",
                       elem_id, at, kValueTypeCount - 1);
    }
    uint64_t count = 0;
    FOLIO_RETURN_IF_ERROR(cur_.read(&count, "array length"));
    const size_t min_item = min_encoded_size(*elem);
    if (count > cur_.remaining() / min_item) {
      return data_loss(
          "array of {} {} items at offset {} needs at least {} bytes per item but only {} bytes "
          "are left (file size {})",
          count, value_type_name(*elem), at, min_item, cur_.remaining(), cur_.size());
    }
    const size_t n = static_cast<size_t>(count);
    *out = Array(*elem);
    switch (*elem) {
      case ValueType::kU8:
        read_packed_into<uint8_t>(out, n);
        break;
      case ValueType::kI8:
        read_packed_into<int8_t>(out, n);
        break;
      case ValueType::kU16:
        read_packed_into<uint16_t>(out, n);
        break;
      case ValueType::kI16:
        read_packed_into<int16_t>(out, n);
        break;
      case ValueType::kU32:
        read_packed_into<uint32_t>(out, n);
        break;
      case ValueType::kI32:
        read_packed_into<int32_t>(out, n);
        break;
      case ValueType::kF32:
        read_packed_into<float>(out, n);
        break;
      case ValueType::kU64:
        read_packed_into<uint64_t>(out, n);
        break;
      case ValueType::kI64:
        read_packed_into<int64_t>(out, n);
        break;
      case ValueType::kF64:
        read_packed_into<double>(out, n);
        break;
      case ValueType::kBool: {
        const size_t items_at = cur_.pos();
        std::vector<uint8_t>& v = *out->bools();
        cur_.read_packed(&v, n);
        for (size_t i = 0; i < n; ++i) {
          if (v[i] > 1) {
            return data_loss("bool item {} = {} at offset {} of array at offset {} is not 0 or 1",
                             i, v[i], items_at + i, at);
          }
        }
        break;
      }
      case ValueType::kString: {
        std::vector<std::string>& v = *out->get_if<std::string>();
        v.resize(n);
        for (size_t i = 0; i < n; ++i) {
          Status s = cur_.read_string(&v[i], "string item");
          if (!s.ok())
            return s.with_context(fmt::format("item {} of string array at offset {}", i, at));
        }
        break;
      }
      case ValueType::kArray: {
        std::vector<Array>& v = *out->get_if<Array>();
        v.resize(n);
        for (size_t i = 0; i < n; ++i) {
          Status s = parse_array(depth + 1, &v[i]);
          if (!s.ok()) return s.with_context(fmt::format("item {} of array at offset {}", i, at));
        }
        break;
      }
    }
    return Status();
  }

  Status read_alignment() {
    auto it = f_.metadata_index_.find(std::string_view(kAlignmentKey));
    if (it == f_.metadata_index_.end()) return Status();
    const Value& v = f_.metadata_[it->second].value;
    const size_t at = kv_offsets_[it->second];
    const uint32_t* a = v.get_if<uint32_t>();
    if (a == nullptr) {
      return data_loss("metadata key '{}' (kv {} at offset {}) has type {}, expected u32",
                       kAlignmentKey, it->second, at, value_type_name(v.type()));
    }
    if (*a == 0 || !std::has_single_bit(*a)) {
      return data_loss("metadata key '{}' (kv {} at offset {}) = {} is not a nonzero power of two",
                       kAlignmentKey, it->second, at, *a);
    }
    f_.alignment_ = *a;
    return Status();
  }

  Status parse_tensor_info(uint64_t i, uint64_t n_tensors) {
    const size_t at = cur_.pos();
    TensorInfo ti;
    Status s = cur_.read_string(&ti.name, "tensor name");
    if (!s.ok()) return s.with_context(fmt::format("tensor info {} of {}", i, n_tensors));
    if (auto it = f_.tensor_index_.find(ti.name); it != f_.tensor_index_.end()) {
      return data_loss(
          "duplicate tensor name {} (tensor info {} at offset {}; first defined by tensor info {} "
          "at "
          "offset {})",
          quoted(ti.name), i, at, it->second, info_offsets_[it->second]);
    }
    s = parse_tensor_fields(&ti);
    if (!s.ok()) {
      return s.with_context(
          fmt::format("tensor {} (tensor info {} at offset {})", quoted(ti.name), i, at));
    }
    f_.tensor_index_.emplace(ti.name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(ti));
    info_offsets_.push_back(at);
    return Status();
  }

  Status parse_tensor_fields(TensorInfo* ti) {
    size_t at = cur_.pos();
    FOLIO_RETURN_IF_ERROR(cur_.read(&ti->n_dims, "n_dims"));
    if (ti->n_dims < 1 || ti->n_dims > kMaxTensorDims) {
      return data_loss("n_dims {} at offset {} is outside 1..{}", ti->n_dims, at, kMaxTensorDims);
    }
    for (uint32_t d = 0; d < ti->n_dims; ++d) {
      at = cur_.pos();
      FOLIO_RETURN_IF_ERROR(cur_.read(&ti->ne[d], "dimension"));
      if (ti->ne[d] < 1) {
        return data_loss(
            "dimension {} = {} at offset {} must be >= 1 (empty tensors are not accepted)", d,
            ti->ne[d], at);
      }
    }
    at = cur_.pos();
    FOLIO_RETURN_IF_ERROR(cur_.read(&ti->type_id, "tensor type"));
    const std::optional<DTypeTraits> traits = dtype_traits_for_id(ti->type_id);
    if (!traits) return data_loss("unknown ggml type id {} at offset {}", ti->type_id, at);
    const std::string shape = shape_string(ti->ne, ti->n_dims);
    if (ti->ne[0] % traits->block_size != 0) {
      return data_loss("shape {}: ne[0] = {} is not a multiple of the {} block size {}", shape,
                       ti->ne[0], traits->name, traits->block_size);
    }
    int64_t nelements = 1;
    for (int64_t d : ti->ne) {
      if (__builtin_mul_overflow(nelements, d, &nelements)) {
        return data_loss("element count of shape {} overflows int64", shape);
      }
    }
    int64_t nbytes = 0;
    if (__builtin_mul_overflow(nelements / traits->block_size,
                               static_cast<int64_t>(traits->type_size), &nbytes)) {
      return data_loss("byte size of {} {} overflows int64", traits->name, shape);
    }
    ti->nbytes = static_cast<uint64_t>(nbytes);
    at = cur_.pos();
    FOLIO_RETURN_IF_ERROR(cur_.read(&ti->offset, "data offset"));
    if (ti->offset % f_.alignment_ != 0) {
      return data_loss("data offset {} at offset {} is not a multiple of the alignment {}",
                       ti->offset, at, f_.alignment_);
    }
    return Status();
  }

  Status layout_data() {
    const size_t header_end = cur_.pos();
    const size_t size = cur_.size();
    // header_end <= size and alignment <= 2^31: no overflow.
    const size_t data_offset =
        header_end + (f_.alignment_ - header_end % f_.alignment_) % f_.alignment_;
    f_.data_offset_ = data_offset;
    f_.data_size_ = data_offset <= size ? size - data_offset : 0;
    if (f_.tensors_.empty()) return Status();
    if (data_offset > size) {
      return data_loss(
          "data section would start at offset {} (header ends at {}, alignment {}) past the end of "
          "the file (size {}), but {} tensors need data",
          data_offset, header_end, f_.alignment_, size, f_.tensors_.size());
    }
    for (const TensorInfo& t : f_.tensors_) {
      if (t.offset > f_.data_size_ || t.nbytes > f_.data_size_ - t.offset) {
        // The file offset is shown when it is representable.
        const std::string where = t.offset <= std::numeric_limits<uint64_t>::max() - data_offset
                                      ? fmt::format("offset {} (data section offset {})",
                                                    t.offset + data_offset, t.offset)
                                      : fmt::format("data section offset {}", t.offset);
        return data_loss("tensor {} data [{}, {} bytes] extends past end of file (size {})",
                         quoted(t.name), where, t.nbytes, size);
      }
    }
    std::vector<size_t> order(f_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
      return f_.tensors_[a].offset < f_.tensors_[b].offset ||
             (f_.tensors_[a].offset == f_.tensors_[b].offset && a < b);
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = f_.tensors_[order[k - 1]];
      const TensorInfo& cur = f_.tensors_[order[k]];
      if (prev.offset + prev.nbytes > cur.offset) {  // both end inside the file: no overflow
        return data_loss(
            "tensor {} data [offset {}, {} bytes] overlaps tensor {} data [offset {}, {} bytes]",
            quoted(cur.name), cur.offset + data_offset, cur.nbytes, quoted(prev.name),
            prev.offset + data_offset, prev.nbytes);
      }
    }
    return Status();
  }

  GgufFile& f_;
  Cursor cur_;
  std::vector<size_t> kv_offsets_;    // file offset of each kv, by index
  std::vector<size_t> info_offsets_;  // file offset of each tensor info, by index
};

Result<GgufFile> GgufFile::parse_storage(std::shared_ptr<Buffer> storage, std::string path) {
  GgufFile file;
  file.storage_ = std::move(storage);
  file.path_ = std::move(path);
  Parser parser(&file, static_cast<const uint8_t*>(file.storage_->data()), file.storage_->size());
  Status s = parser.run();
  if (!s.ok()) {
    const std::string where = file.path_.empty() ? "gguf" : "gguf: " + file.path_;
    return s.with_context(where);
  }
  return file;
}

}  // namespace folio::gguf
