#include "gguf/value.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace folio::gguf {

namespace {

template <size_t I = 0>
Array::Storage make_storage(size_t index) {
  if constexpr (I < std::variant_size_v<Array::Storage>) {
    if (index == I) return Array::Storage(std::in_place_index<I>);
    return make_storage<I + 1>(index);
  } else {
    FOLIO_CHECK_MSG(false, "bad array element type {}", index);
    return {};
  }
}

// Bitwise equality of trivially copyable scalars (floats: NaN == NaN when
// the bits agree, -0.0 != 0.0).
template <typename T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
bool same_vector(const std::vector<T>& a, const std::vector<T>& b) {
  if constexpr (std::is_trivially_copyable_v<T>) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
  } else {
    return a == b;
  }
}

template <typename T>
std::optional<int64_t> int_to_i64(T v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kU8:
      return "u8";
    case ValueType::kI8:
      return "i8";
    case ValueType::kU16:
      return "u16";
    case ValueType::kI16:
      return "i16";
    case ValueType::kU32:
      return "u32";
    case ValueType::kI32:
      return "i32";
    case ValueType::kF32:
      return "f32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kU64:
      return "u64";
    case ValueType::kI64:
      return "i64";
    case ValueType::kF64:
      return "f64";
  }
  return "?";
}

std::optional<ValueType> value_type_from_id(uint32_t id) {
  if (id >= kValueTypeCount) return std::nullopt;
  return static_cast<ValueType>(id);
}

size_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return 8;
    case ValueType::kString:
      return 8;  // u64 length
    case ValueType::kArray:
      return 4 + 8;  // u32 element type + u64 count
  }
  return 1;
}

Array::Array(ValueType elem_type) : data_(make_storage(static_cast<size_t>(elem_type))) {}

Array Array::of_bools(const std::vector<bool>& items) {
  Array a(ValueType::kBool);
  std::vector<uint8_t>& v = *a.bools();
  v.reserve(items.size());
  for (bool b : items) v.push_back(b ? 1 : 0);
  return a;
}

size_t Array::size() const {
  return std::visit([](const auto& v) { return v.size(); }, data_);
}

const std::vector<uint8_t>* Array::bools() const {
  constexpr size_t kIndex = static_cast<size_t>(ValueType::kBool);
  return data_.index() == kIndex ? &std::get<kIndex>(data_) : nullptr;
}

std::vector<uint8_t>* Array::bools() {
  constexpr size_t kIndex = static_cast<size_t>(ValueType::kBool);
  return data_.index() == kIndex ? &std::get<kIndex>(data_) : nullptr;
}

Value Array::at(size_t i) const {
  FOLIO_CHECK_MSG(i < size(), "array index {} out of range (size {})", i, size());
  if (const auto* b = bools()) return Value((*b)[i] != 0);
  return std::visit([i](const auto& v) { return Value(v[i]); }, data_);
}

std::optional<int64_t> Array::int_at(size_t i) const {
  if (!is_integer_type(elem_type()) || i >= size()) return std::nullopt;
  return std::visit(
      [i](const auto& v) -> std::optional<int64_t> {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_integral_v<T>) return int_to_i64(v[i]);
        return std::nullopt;
      },
      data_);
}

int Array::depth() const {
  int inner = 0;
  if (const auto* arrays = get_if<Array>()) {
    for (const Array& a : *arrays) inner = std::max(inner, a.depth());
  }
  return 1 + inner;
}

bool operator==(const Array& a, const Array& b) {
  if (a.data_.index() != b.data_.index()) return false;
  // Index-based: the bool and u8 alternatives share a C++ type.
  return [&]<size_t... I>(std::index_sequence<I...>) {
    bool same = false;
    ((a.data_.index() == I ? (same = same_vector(std::get<I>(a.data_), std::get<I>(b.data_)), 0)
                           : 0),
     ...);
    return same;
  }
  (std::make_index_sequence<std::variant_size_v<Array::Storage>>());
}

std::optional<int64_t> Value::to_i64() const {
  if (!is_integer_type(type())) return std::nullopt;
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return int_to_i64(v);
        return std::nullopt;
      },
      v_);
}

std::optional<uint64_t> Value::to_u64() const {
  if (!is_integer_type(type())) return std::nullopt;
  return std::visit(
      [](const auto& v) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (v < 0) return std::nullopt;
          }
          return static_cast<uint64_t>(v);
        }
        return std::nullopt;
      },
      v_);
}

std::optional<double> Value::to_f64() const {
  if (const float* f = get_if<float>()) return static_cast<double>(*f);
  if (const double* d = get_if<double>()) return *d;
  return std::nullopt;
}

bool operator==(const Value& a, const Value& b) {
  if (a.v_.index() != b.v_.index()) return false;
  return std::visit(
      [&b](const auto& va) {
        using T = std::decay_t<decltype(va)>;
        const T& vb = *std::get_if<T>(&b.v_);
        if constexpr (std::is_trivially_copyable_v<T>) {
          return same_bits(va, vb);
        } else {
          return va == vb;
        }
      },
      a.v_);
}

}  // namespace folio::gguf
