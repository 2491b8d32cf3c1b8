// format_value / dump_gguf: what `folio gguf` prints.
#include "gguf/gguf_dump.h"

#include <gtest/gtest.h>

#include "gguf_test_util.h"

namespace folio::gguf {
namespace dump_test {

TEST(GgufDump, FormatsScalarsAndStrings) {
  EXPECT_EQ(format_value(Value(uint8_t{200})), "200");
  EXPECT_EQ(format_value(Value(int8_t{-5})), "-5");
  EXPECT_EQ(format_value(Value(1e-6f)), "1e-06");
  EXPECT_EQ(format_value(Value(10000000.0f)), "10000000");
  EXPECT_EQ(format_value(Value(false)), "false");
  EXPECT_EQ(format_value(Value("a\"b\n'c\x01")), "\"a\\\"b\\n'c\\x01\"");
  DumpOptions o;
  o.max_string_bytes = 5;
  EXPECT_EQ(format_value(Value("abcdefgh"), o), "\"abcde...\" (8 bytes)");
  // Never cut inside a UTF-8 sequence ("é" is 2 bytes).
  EXPECT_EQ(format_value(Value("abcdéfg"), o), "\"abcd...\" (8 bytes)");
  EXPECT_EQ(format_type(Value("x")), "string");
  EXPECT_EQ(format_type(Value(Array::of_strings({}))), "[string]");
}

TEST(GgufDump, FormatsArrays) {
  std::vector<std::string> tokens;
  for (int i = 0; i < 32000; ++i) tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : "t");
  DumpOptions o;
  o.max_array_items = 2;
  EXPECT_EQ(format_value(Value(Array::of_strings(tokens)), o),
            "[ \"<unk>\", \"<s>\", ... ] (32000 items)");
  EXPECT_EQ(format_value(Value(Array::of(std::vector<int32_t>{1, 2}))), "[ 1, 2 ] (2 items)");
  EXPECT_EQ(format_value(Value(Array::of_bools({true, false}))), "[ true, false ] (2 items)");
  EXPECT_EQ(format_value(Value(Array(ValueType::kF32))), "[] (0 items)");
  Array nested = Array::of(
      std::vector<Array>{Array::of(std::vector<uint8_t>{1, 2, 3}), Array::of_strings({"x"})});
  EXPECT_EQ(format_value(Value(nested)), "[ [ 1, 2, 3 ], [ \"x\" ] ] (2 items)");
  EXPECT_EQ(format_value(Value(nested), o), "[ [ 1, 2, ... ] (3 items), [ \"x\" ] ] (2 items)");
  // Output stays bounded for wide, deep arrays (4^8 leaves here).
  Array wide = Array::of(std::vector<uint8_t>(4, 7));
  for (int i = 1; i < kMaxArrayDepth; ++i) wide = Array::of(std::vector<Array>(4, wide));
  EXPECT_LT(format_value(Value(wide)).size(), 1000u);
}

TEST(GgufDump, PrintsHeaderMetadataAndTensors) {
  const std::vector<uint8_t> bytes = testing::small_writer().to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok());
  const std::string d = dump_gguf(*f);
  EXPECT_NE(d.find("version:     3\n"), std::string::npos) << d;
  EXPECT_NE(d.find("tensors:     3\n"), std::string::npos) << d;
  EXPECT_NE(d.find("kv pairs:    14\n"), std::string::npos) << d;
  EXPECT_NE(d.find("alignment:   32\n"), std::string::npos) << d;
  EXPECT_NE(d.find("     1  string    general.architecture = \"llama\"\n"), std::string::npos) << d;
  EXPECT_NE(
      d.find("    13  [string]  tokens = [ \"<unk>\", \"<s>\", \"</s>\", \"hello\" ] (4 items)\n"),
      std::string::npos)
      << d;
  EXPECT_NE(
      d.find("     1  q8_0     [32, 2]                            68           64  b.weight\n"),
      std::string::npos)
      << d;
  DumpOptions o;
  o.tensors = false;
  EXPECT_EQ(dump_gguf(*f, o).find("b.weight"), std::string::npos);
  o.tensors = true;
  o.metadata = false;
  EXPECT_EQ(dump_gguf(*f, o).find("general.architecture"), std::string::npos);
}

}  // namespace
}  // namespace folio::gguf
