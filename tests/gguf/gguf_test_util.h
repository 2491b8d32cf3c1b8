// Helpers for GGUF tests: a raw byte builder for hand-made (often malformed)
// files, and a small valid file built with the writer.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace folio::gguf::testing {

// Appends little-endian fields; every offset the tests assert is pos() at the
// time the field was written.
class Bytes {
 public:
  Bytes& u8(uint8_t v) { return raw(&v, 1); }
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& i64(int64_t v) { return raw(&v, 8); }
  Bytes& f32(float v) { return raw(&v, 4); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  Bytes& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), b, b + n);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  Bytes& pad_to(size_t alignment) { return zeros((alignment - b_.size() % alignment) % alignment); }
  // "GGUF", version, tensor count, kv count.
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    raw("GGUF", 4);
    u32(version);
    u64(n_tensors);
    return u64(n_kv);
  }
  // A tensor info: name, n_dims, dims, type, offset.
  Bytes& tensor(std::string_view name, std::vector<int64_t> ne, uint32_t type, uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) i64(d);
    u32(type);
    return u64(offset);
  }

  size_t pos() const { return b_.size(); }
  const std::vector<uint8_t>& bytes() const { return b_; }
  std::span<const uint8_t> span() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

// A small valid file: every scalar type, a string array, a nested array, and
// three tensors (f32, q8_0, f16).
inline GgufWriter small_writer() {
  GgufWriter w;
  auto ok = [](Status s) { EXPECT_TRUE(s.ok()) << s.to_string(); };
  ok(w.add("general.architecture", Value("llama")));
  ok(w.add("u8", Value(uint8_t{200})));
  ok(w.add("i8", Value(int8_t{-100})));
  ok(w.add("u16", Value(uint16_t{60000})));
  ok(w.add("i16", Value(int16_t{-30000})));
  ok(w.add("u32", Value(4000000000u)));
  ok(w.add("i32", Value(-2000000000)));
  ok(w.add("f32", Value(1.5f)));
  ok(w.add("bool", Value(true)));
  ok(w.add("u64", Value(uint64_t{1} << 40)));
  ok(w.add("i64", Value(int64_t{-1} << 40)));
  ok(w.add("f64", Value(0.25)));
  ok(w.add("tokens", Value(Array::of_strings({"<unk>", "<s>", "</s>", "hello"}))));
  ok(w.add("nested", Value(Array::of(std::vector<Array>{Array::of(std::vector<int32_t>{1, 2}),
                                                        Array::of_strings({"x"})}))));
  std::vector<uint8_t> f32(4 * 3 * 4);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<uint8_t>(i);
  const int64_t s_f32[] = {4, 3};
  ok(w.add_tensor("a.weight", DType::F32, s_f32, f32));
  const int64_t s_q8[] = {32, 2};
  ok(w.add_tensor("b.weight", DType::Q8_0, s_q8, std::vector<uint8_t>(2 * 34, 7)));
  const int64_t s_f16[] = {5};
  ok(w.add_tensor("c.bias", DType::F16, s_f16, std::vector<uint8_t>(10, 9)));
  return w;
}

// Parses `bytes`, expects failure and returns the message.
inline std::string parse_error(std::span<const uint8_t> bytes) {
  Result<GgufFile> r = GgufFile::parse(bytes);
  EXPECT_FALSE(r.ok()) << "parsed a malformed file";
  return r.ok() ? std::string() : r.status().message();
}

}  // namespace folio::gguf::testing
