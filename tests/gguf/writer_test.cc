// GgufWriter: round trips (write -> read -> identical metadata, tensor infos
// and bytes), alignment, files on disk, and the writer's own validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"

namespace folio::gguf {
namespace writer_test {

namespace fs = std::filesystem;
using testing::small_writer;

// Every value type, empty arrays of every element type, nested arrays of
// mixed element types, odd floats (NaN payload, -0.0, inf) and odd strings.
std::vector<KeyValue> all_kinds() {
  std::vector<KeyValue> kv;
  auto add = [&kv](std::string k, Value v) { kv.push_back(KeyValue{std::move(k), std::move(v)}); };
  add("u8", Value(uint8_t{255}));
  add("i8", Value(int8_t{-128}));
  add("u16", Value(uint16_t{65535}));
  add("i16", Value(int16_t{-32768}));
  add("u32", Value(std::numeric_limits<uint32_t>::max()));
  add("i32", Value(std::numeric_limits<int32_t>::min()));
  float nan_payload;
  const uint32_t nan_bits = 0x7fc12345;
  std::memcpy(&nan_payload, &nan_bits, 4);
  add("f32.nan", Value(nan_payload));
  add("f32.negzero", Value(-0.0f));
  add("f32.inf", Value(std::numeric_limits<float>::infinity()));
  add("bool.false", Value(false));
  add("bool.true", Value(true));
  add("string.empty", Value(""));
  add("string.binary", Value(std::string("a\0b\xff\n\"'", 7)));
  add("u64", Value(std::numeric_limits<uint64_t>::max()));
  add("i64", Value(std::numeric_limits<int64_t>::min()));
  add("f64", Value(-1.0e300));
  for (uint32_t t = 0; t < kValueTypeCount; ++t) {
    add(fmt::format("empty.{}", value_type_name(static_cast<ValueType>(t))),
        Value(Array(static_cast<ValueType>(t))));
  }
  add("arr.u8", Value(Array::of(std::vector<uint8_t>{0, 1, 255})));
  add("arr.i8", Value(Array::of(std::vector<int8_t>{-1, 0, 1})));
  add("arr.u16", Value(Array::of(std::vector<uint16_t>{1, 65535})));
  add("arr.i16", Value(Array::of(std::vector<int16_t>{-2, 2})));
  add("arr.u32", Value(Array::of(std::vector<uint32_t>{7})));
  add("arr.i32", Value(Array::of(std::vector<int32_t>{-7, 7, 0})));
  add("arr.f32", Value(Array::of(std::vector<float>{0.5f, -0.0f, nan_payload})));
  add("arr.bool", Value(Array::of_bools({true, false, true})));
  add("arr.string", Value(Array::of_strings({"", "x", std::string(300, 'y')})));
  add("arr.u64", Value(Array::of(std::vector<uint64_t>{~uint64_t{0}})));
  add("arr.i64", Value(Array::of(std::vector<int64_t>{-5})));
  add("arr.f64", Value(Array::of(std::vector<double>{1e-300, 2.0})));
  Array inner3 = Array::of(std::vector<Array>{Array::of_bools({false}), Array(ValueType::kF64)});
  add("arr.nested", Value(Array::of(std::vector<Array>{
                        Array::of(std::vector<int16_t>{1, 2, 3}), Array::of_strings({"a", "b"}),
                        Array::of(std::vector<Array>{inner3}), Array()})));
  return kv;
}

void expect_same_tensors(const GgufFile& a, const GgufFile& b) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorInfo& x = a.tensors()[i];
    const TensorInfo& y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type_id, y.type_id);
    EXPECT_EQ(x.n_dims, y.n_dims);
    EXPECT_EQ(x.ne, y.ne);
    EXPECT_EQ(x.nbytes, y.nbytes);
    const auto bx = a.tensor_bytes(x);
    const auto by = b.tensor_bytes(y);
    EXPECT_TRUE(std::equal(bx.begin(), bx.end(), by.begin(), by.end())) << x.name;
  }
}

TEST(GgufWriter, RoundTripsEveryValueKind) {
  const std::vector<KeyValue> kinds = all_kinds();
  GgufWriter w;
  for (const KeyValue& kv : kinds) ASSERT_TRUE(w.add(kv.key, kv.value).ok()) << kv.key;
  const std::vector<uint8_t> bytes = w.to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  ASSERT_EQ(f->metadata().size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].key, kinds[i].key);
    EXPECT_TRUE(f->metadata()[i].value == kinds[i].value) << kinds[i].key;
    EXPECT_EQ(f->metadata()[i].value.type(), kinds[i].value.type()) << kinds[i].key;
  }
  // The NaN payload survived bit for bit.
  const float nan = *f->find("f32.nan")->get_if<float>();
  uint32_t bits;
  std::memcpy(&bits, &nan, 4);
  EXPECT_EQ(bits, 0x7fc12345u);
  EXPECT_TRUE(std::signbit(*f->find("f32.negzero")->get_if<float>()));
  EXPECT_EQ(f->find("string.binary")->string()->size(), 7u);
  // And re-encoding the parsed file gives the same bytes.
  Result<GgufWriter> again = GgufWriter::from_file(*f);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->to_bytes() == bytes);
}

TEST(GgufWriter, RoundTripsTensors) {
  const GgufWriter w = small_writer();
  const std::vector<uint8_t> bytes = w.to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 3u);
  const TensorInfo& a = f->tensors()[0];
  EXPECT_EQ(a.name, "a.weight");
  EXPECT_EQ(a.type_id, 0u);
  EXPECT_EQ(a.n_dims, 2u);
  EXPECT_EQ(a.ne, (std::array<int64_t, 4>{4, 3, 1, 1}));
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(a.nbytes, 48u);
  for (size_t i = 0; i < 48; ++i) ASSERT_EQ(f->tensor_bytes(a)[i], i);
  const TensorInfo& b = f->tensors()[1];
  EXPECT_EQ(b.offset, 64u);  // 48 rounded up to 32
  EXPECT_EQ(b.nbytes, 68u);
  EXPECT_EQ(std::string(b.type_name()), "q8_0");
  const TensorInfo& c = f->tensors()[2];
  EXPECT_EQ(c.offset, 160u);
  EXPECT_EQ(c.n_dims, 1u);
  EXPECT_EQ(f->tensor_bytes(c)[9], 9);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  // The file ends padded after the last tensor, as gguf-py writes it.
  EXPECT_EQ(bytes.size(), f->data_offset() + 192);
}

TEST(GgufWriter, HonoursGeneralAlignment) {
  GgufWriter w;
  const int64_t shape[] = {3};
  ASSERT_TRUE(w.add_tensor("x", DType::F32, shape, std::vector<uint8_t>(12, 1)).ok());
  ASSERT_TRUE(w.add_tensor("y", DType::F32, shape, std::vector<uint8_t>(12, 2)).ok());
  // Set after the tensors: offsets follow the final alignment.
  ASSERT_TRUE(w.add("general.alignment", Value(256u)).ok());
  EXPECT_EQ(w.alignment(), 256u);
  const std::vector<uint8_t> bytes = w.to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset(), 256u);
  EXPECT_EQ(f->tensors()[1].offset, 256u);
  EXPECT_EQ(f->tensor_bytes(f->tensors()[1])[0], 2);
  EXPECT_EQ(bytes.size(), 256u + 512u);
}

TEST(GgufWriter, WritesFiles) {
  const GgufWriter w = small_writer();
  const fs::path p = fs::temp_directory_path() / "folio_gguf_writer_test.gguf";
  ASSERT_TRUE(w.write_file(p.string()).ok());
  std::ifstream in(p, std::ios::binary);
  const std::vector<uint8_t> on_disk(std::istreambuf_iterator<char>(in), {});
  EXPECT_TRUE(on_disk == w.to_bytes());
  Result<GgufFile> f = GgufFile::open(p.string());
  fs::remove(p);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->path(), p.string());
  Result<GgufFile> m = GgufFile::parse(on_disk);
  ASSERT_TRUE(m.ok());
  expect_same_tensors(*f, *m);

  Status bad = w.write_file("/nonexistent-dir/x.gguf");
  EXPECT_EQ(bad.code(), StatusCode::kIoError);
  EXPECT_EQ(bad.message(),
            "gguf writer: cannot create '/nonexistent-dir/x.gguf': No such file or directory");
}

TEST(GgufWriter, RejectsWhatTheReaderWouldReject) {
  GgufWriter w;
  ASSERT_TRUE(w.add("k", Value(1)).ok());
  EXPECT_EQ(w.add("k", Value(2)).message(), "gguf writer: duplicate metadata key 'k'");
  EXPECT_EQ(w.add("general.alignment", Value(64)).message(),
            "gguf writer: metadata key 'general.alignment' must be u32, got i32");
  EXPECT_EQ(w.add("general.alignment", Value(24u)).message(),
            "gguf writer: metadata key 'general.alignment' = 24 is not a nonzero power of two");
  Array deep = Array::of(std::vector<uint8_t>{1});
  for (int i = 1; i < kMaxArrayDepth; ++i) deep = Array::of(std::vector<Array>{deep});
  EXPECT_TRUE(w.add("deep8", Value(deep)).ok());
  deep = Array::of(std::vector<Array>{deep});
  EXPECT_EQ(w.add("deep9", Value(deep)).message(),
            "gguf writer: metadata key 'deep9': arrays nest 9 deep (limit 8)");

  const int64_t s4[] = {4};
  ASSERT_TRUE(w.add_tensor("t", DType::F32, s4, std::vector<uint8_t>(16)).ok());
  EXPECT_EQ(w.add_tensor("t", DType::F32, s4, std::vector<uint8_t>(16)).message(),
            "gguf writer: duplicate tensor name 't'");
  EXPECT_EQ(w.add_tensor("u", 4u, s4, {}).message(),
            "gguf writer: tensor 'u': unknown ggml type id 4");
  EXPECT_EQ(w.add_tensor("u", DType::F32, std::span<const int64_t>(), {}).message(),
            "gguf writer: tensor 'u': 0 dims, expected 1..4");
  const int64_t s5[] = {1, 1, 1, 1, 1};
  EXPECT_EQ(w.add_tensor("u", DType::F32, s5, {}).message(),
            "gguf writer: tensor 'u': 5 dims, expected 1..4");
  const int64_t s0[] = {4, 0};
  EXPECT_EQ(w.add_tensor("u", DType::F32, s0, {}).message(),
            "gguf writer: tensor 'u': dimension 1 = 0 must be >= 1");
  const int64_t s33[] = {33};
  EXPECT_EQ(w.add_tensor("u", DType::Q4_0, s33, {}).message(),
            "gguf writer: tensor 'u': ne[0] = 33 is not a multiple of the q4_0 block size 32");
  EXPECT_EQ(w.add_tensor("u", DType::F32, s4, std::vector<uint8_t>(15)).message(),
            "gguf writer: tensor 'u': f32 needs 16 bytes, got 15");
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(w.add_tensor("u", DType::F32, huge, {}).message(),
            "gguf writer: tensor 'u': element count overflows int64");
  // Nothing rejected was added.
  EXPECT_EQ(w.num_tensors(), 1u);
  EXPECT_EQ(w.num_metadata(), 2u);
  EXPECT_EQ(w.alignment(), kDefaultAlignment);
  Result<GgufFile> f = GgufFile::parse(w.to_bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
}

}  // namespace
}  // namespace folio::gguf
