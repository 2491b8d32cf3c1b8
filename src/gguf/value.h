// GGUF metadata values. A Value is one of the 13 GGUF value types; an Array
// holds elements of one type in a compact typed vector (a 150k-entry token
// list is one std::vector<std::string>, a score list one std::vector<float>),
// so typed access is a span, not a walk over boxed values. Arrays may hold
// arrays (each inner array carries its own element type, as in the file).
//
// Both variants are indexed by the GGUF type id, so `index() == id` holds.
// Equality compares floats by bit pattern: a round trip must reproduce the
// file's bytes, and NaN payloads or -0.0 are part of them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/check.h"

namespace folio::gguf {

// GGUF value type ids (the on-disk u32).
enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

inline constexpr uint32_t kValueTypeCount = 13;

// "u8", "i32", "f32", "bool", "string", "array", ...
const char* value_type_name(ValueType t);
// nullopt for ids >= kValueTypeCount.
std::optional<ValueType> value_type_from_id(uint32_t id);
// Bytes one value of this type occupies on disk at least (a string is its u64
// length; an array its u32 element type + u64 count). Bounds counts read from
// untrusted files against the bytes left.
size_t min_encoded_size(ValueType t);
inline bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64:
      return true;
    default:
      return false;
  }
}

class Array;

// True for the C++ types an Array stores its elements as (numbers, strings, arrays).
// Bool elements of an Array are stored as uint8_t (0 or 1): see Array::bools().
template <typename T>
inline constexpr bool kIsArrayElement =
    std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint16_t> ||
    std::is_same_v<T, int16_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, std::string> || std::is_same_v<T, Array> ||
    std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, double>;

template <typename T>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return ValueType::kU8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return ValueType::kI8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return ValueType::kU16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return ValueType::kI16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return ValueType::kU32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return ValueType::kI32;
  else if constexpr (std::is_same_v<T, float>)
    return ValueType::kF32;
  else if constexpr (std::is_same_v<T, bool>)
    return ValueType::kBool;
  else if constexpr (std::is_same_v<T, std::string>)
    return ValueType::kString;
  else if constexpr (std::is_same_v<T, Array>)
    return ValueType::kArray;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return ValueType::kU64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ValueType::kI64;
  else if constexpr (std::is_same_v<T, double>)
    return ValueType::kF64;
  else
    static_assert(sizeof(T) == 0, "not a GGUF value type");
}

class Value;

// A typed array. Element storage by type id (index == ValueType id; bools use
// uint8_t 0/1 so they can be viewed as a span).
class Array {
 public:
  using Storage = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                               std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                               std::vector<float>, std::vector<uint8_t> /* bool */,
                               std::vector<std::string>, std::vector<Array>, std::vector<uint64_t>,
                               std::vector<int64_t>, std::vector<double>>;

  // An empty array of u8.
  Array() = default;
  // An empty array of `elem_type`.
  explicit Array(ValueType elem_type);

  // An array of `items` (numeric, std::string or Array elements).
  template <typename T>
  requires kIsArrayElement<T>
  static Array of(std::vector<T> items) {
    Array a;
    a.data_.template emplace<static_cast<size_t>(value_type_of<T>())>(std::move(items));
    return a;
  }
  static Array of_strings(std::vector<std::string> items) { return of(std::move(items)); }
  static Array of_bools(const std::vector<bool>& items);

  ValueType elem_type() const { return static_cast<ValueType>(data_.index()); }
  size_t size() const;
  bool empty() const { return size() == 0; }

  // The elements if the element type is exactly T, else nullptr.
  template <typename T>
  requires kIsArrayElement<T>
  const std::vector<T>* get_if() const {
    constexpr size_t kIndex = static_cast<size_t>(value_type_of<T>());
    return data_.index() == kIndex ? &std::get<kIndex>(data_) : nullptr;
  }
  template <typename T>
  requires kIsArrayElement<T> std::vector<T>
  *get_if() {
    constexpr size_t kIndex = static_cast<size_t>(value_type_of<T>());
    return data_.index() == kIndex ? &std::get<kIndex>(data_) : nullptr;
  }
  // The elements of a bool array as 0/1 bytes, or nullptr.
  const std::vector<uint8_t>* bools() const;
  std::vector<uint8_t>* bools();

  // Element i as a Value (copies strings / inner arrays). CHECKs i < size().
  Value at(size_t i) const;
  // Element i converted to int64 if the element type is an integer type and
  // the value fits (u64 above INT64_MAX does not).
  std::optional<int64_t> int_at(size_t i) const;

  // Depth of nested arrays: 1 for an array of scalars/strings.
  int depth() const;

  const Storage& storage() const { return data_; }
  Storage& storage() { return data_; }

  friend bool operator==(const Array& a, const Array& b);

 private:
  Storage data_;
};

// One metadata value.
class Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;

  Value() = default;  // u8 0
  // One constructor per GGUF type: `Value(5)` is i32, `Value(5u)` u32,
  // `Value(uint64_t{5})` u64, `Value(1.0f)` f32, `Value("x")` string. Other
  // types (char, long long on LP64, ...) do not convert silently.
  Value(uint8_t v) : v_(v) {}                        // NOLINT
  Value(int8_t v) : v_(v) {}                         // NOLINT
  Value(uint16_t v) : v_(v) {}                       // NOLINT
  Value(int16_t v) : v_(v) {}                        // NOLINT
  Value(uint32_t v) : v_(v) {}                       // NOLINT
  Value(int32_t v) : v_(v) {}                        // NOLINT
  Value(float v) : v_(v) {}                          // NOLINT
  Value(bool v) : v_(v) {}                           // NOLINT
  Value(std::string v) : v_(std::move(v)) {}         // NOLINT
  Value(std::string_view v) : v_(std::string(v)) {}  // NOLINT
  Value(const char* v) : v_(std::string(v)) {}       // NOLINT
  Value(Array v) : v_(std::move(v)) {}               // NOLINT
  Value(uint64_t v) : v_(v) {}                       // NOLINT
  Value(int64_t v) : v_(v) {}                        // NOLINT
  Value(double v) : v_(v) {}                         // NOLINT
  template <typename T>
  Value(T) = delete;

  ValueType type() const { return static_cast<ValueType>(v_.index()); }

  // The value if its type is exactly T, else nullptr.
  template <typename T>
  const T* get_if() const {
    return std::get_if<T>(&v_);
  }
  template <typename T>
  T* get_if() {
    return std::get_if<T>(&v_);
  }
  const std::string* string() const { return get_if<std::string>(); }
  const Array* array() const { return get_if<Array>(); }

  // Any integer type converted to int64 / uint64 when it fits.
  std::optional<int64_t> to_i64() const;
  std::optional<uint64_t> to_u64() const;
  // f32 or f64 as double.
  std::optional<double> to_f64() const;

  const Storage& storage() const { return v_; }

  friend bool operator==(const Value& a, const Value& b);

 private:
  Storage v_;
};

}  // namespace folio::gguf
