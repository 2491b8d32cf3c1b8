// Hand-made malformed GGUF files: each must fail with a clear message that
// names the key or tensor and the byte offset. Also: every truncation of a
// valid file, and the committed regression inputs (tests/gguf/regressions/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf/gguf_file.h"
#include "gguf_test_util.h"

namespace folio::gguf {
namespace malformed_test {

namespace fs = std::filesystem;
using testing::Bytes;
using testing::parse_error;
using testing::small_writer;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;

TEST(GgufMalformed, TruncatedAtEveryOffset) {
  const std::vector<uint8_t> full = small_writer().to_bytes();
  Result<GgufFile> f = GgufFile::parse(full);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  size_t data_end = 0;  // the last byte any tensor needs; the padding after it is optional
  for (const TensorInfo& t : f->tensors()) {
    data_end = std::max<size_t>(data_end, f->data_offset() + t.offset + t.nbytes);
  }
  ASSERT_LT(data_end, full.size());
  for (size_t n = 0; n <= full.size(); ++n) {
    // An exact-size copy, so sanitizers catch any read past the cut.
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    Result<GgufFile> r = GgufFile::parse(cut);
    if (n < data_end) {
      ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().message();
      EXPECT_EQ(r.status().message().rfind("gguf: ", 0), 0u) << r.status().message();
    } else {
      ASSERT_TRUE(r.ok()) << n << ": " << r.status().message();
    }
  }
}

TEST(GgufMalformed, EmptyAndBadMagic) {
  EXPECT_EQ(parse_error({}),
            "gguf: file is 0 bytes, too small for a GGUF header (magic 'GGUF' at offset 0)");
  Bytes b;
  b.raw("GGML", 4).u32(3).u64(0).u64(0);
  EXPECT_EQ(parse_error(b.span()),
            "gguf: bad magic 'GGML' at offset 0, expected 'GGUF' (not a GGUF file)");
  Bytes c;
  c.raw("\x01\nF'", 4).u32(3);
  EXPECT_EQ(parse_error(c.span()),
            "gguf: bad magic '\\x01\\nF\\'' at offset 0, expected 'GGUF' (not a GGUF file)");
}

TEST(GgufMalformed, BadVersions) {
  Bytes v1;
  v1.header(0, 0, 1);
  Result<GgufFile> r = GgufFile::parse(v1.span());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("GGUF version 1 (offset 4) is not supported"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("32-bit counts"), std::string::npos);
  Bytes v4;
  v4.header(0, 0, 4);
  EXPECT_EQ(parse_error(v4.span()),
            "gguf: unsupported GGUF version 4 at offset 4 (versions 2 and 3 are read)");
  Bytes v0;
  v0.header(0, 0, 0);
  EXPECT_EQ(parse_error(v0.span()),
            "gguf: unsupported GGUF version 0 at offset 4 (versions 2 and 3 are read)");
  Bytes be;
  be.header(0, 0, 0x03000000);
  EXPECT_EQ(parse_error(be.span()),
            "gguf: version field 0x03000000 at offset 4 looks byte-swapped: big-endian GGUF files "
            "are not supported");
}

TEST(GgufMalformed, HugeCounts) {
  Bytes kv;
  kv.header(0, uint64_t{1} << 62).zeros(100);
  EXPECT_EQ(parse_error(kv.span()),
            "gguf: metadata kv count 4611686018427387904 at offset 16 is impossible: the 100 bytes "
            "after the header hold at most 7 key-value pairs");
  Bytes t;
  t.header(~uint64_t{0}, 1).str("k").u32(0).u8(1).zeros(40);
  EXPECT_EQ(parse_error(t.span()),
            "gguf: tensor count 18446744073709551615 at offset 8 is impossible: the 41 bytes left "
            "after 1 key-value pairs hold at most 1 tensor infos");
}

TEST(GgufMalformed, HugeStringLengths) {
  Bytes key;
  key.header(0, 1).u64(uint64_t{1} << 60).zeros(20);
  EXPECT_EQ(parse_error(key.span()),
            "gguf: metadata kv 0 of 1: metadata key at offset 24 has length 1152921504606846976 "
            "but only 20 bytes are left (file size 52)");
  Bytes val;
  val.header(0, 1).str("general.name").u32(8);  // string value at offset 48
  val.u64(~uint64_t{0}).zeros(4);
  EXPECT_EQ(parse_error(val.span()),
            "gguf: metadata key 'general.name' (kv 0 at offset 24): string value at offset 48 has "
            "length 18446744073709551615 but only 4 bytes are left (file size 60)");
  Bytes item;  // the third string of an array claims more than the file holds
  item.header(0, 1).str("tokenizer.ggml.tokens").u32(9);
  const size_t array_at = item.pos();
  item.u32(8).u64(3).str("a").str("b");
  const size_t bad_at = item.pos();
  item.u64(1000).zeros(8);
  EXPECT_EQ(parse_error(item.span()),
            fmt::format("gguf: metadata key 'tokenizer.ggml.tokens' (kv 0 at offset 24): item 2 of "
                        "string array at offset {}: string item at offset {} has length 1000 but "
                        "only 8 bytes are left (file size {})",
                        array_at, bad_at, item.pos()));
}

TEST(GgufMalformed, BadValueTypes) {
  Bytes b;
  b.header(0, 1).str("k");
  const size_t type_at = b.pos();
  b.u32(13).zeros(8);
  EXPECT_EQ(parse_error(b.span()),
            fmt::format("gguf: metadata key 'k' (kv 0 at offset 24): invalid value type 13 at "
                        "offset {} (valid types are 0..12)",
                        type_at));
  Bytes a;
  a.header(0, 1).str("arr").u32(9);
  const size_t array_at = a.pos();
  a.u32(0xFFFFFFFF).u64(1).zeros(8);
  EXPECT_EQ(parse_error(a.span()),
            fmt::format("gguf: metadata key 'arr' (kv 0 at offset 24): invalid array element type "
                        "4294967295 at offset {} (valid types are 0..12)",
                        array_at));
  Bytes n;
  n.header(0, 1).str("arr").u32(9);
  const size_t n_at = n.pos();
  n.u32(4).u64(1000000000).zeros(16);
  EXPECT_EQ(parse_error(n.span()),
            fmt::format("gguf: metadata key 'arr' (kv 0 at offset 24): array of 1000000000 u32 "
                        "items at offset {} needs at least 4 bytes per item but only 16 bytes are "
                        "left (file size {})",
                        n_at, n.pos()));
}

TEST(GgufMalformed, BoolsMustBeZeroOrOne) {
  Bytes b;
  b.header(0, 1).str("flag").u32(7);
  const size_t at = b.pos();
  b.u8(2);
  EXPECT_EQ(parse_error(b.span()),
            fmt::format("gguf: metadata key 'flag' (kv 0 at offset 24): bool value 2 at offset {} "
                        "is not 0 or 1",
                        at));
  Bytes a;
  a.header(0, 1).str("flags").u32(9);
  const size_t array_at = a.pos();
  a.u32(7).u64(3).u8(1).u8(0).u8(255);
  EXPECT_EQ(parse_error(a.span()),
            fmt::format("gguf: metadata key 'flags' (kv 0 at offset 24): bool item 2 = 255 at "
                        "offset {} of array at offset {} is not 0 or 1",
                        a.pos() - 1, array_at));
}

// `depth` nested arrays, the innermost an empty u8 array.
Bytes nested_arrays(int depth) {
  Bytes b;
  b.header(0, 1).str("bomb").u32(9);
  for (int i = 1; i < depth; ++i) b.u32(9).u64(1);
  b.u32(0).u64(0);
  return b;
}

TEST(GgufMalformed, NestedArrayDepthIsLimited) {
  Bytes ok = nested_arrays(kMaxArrayDepth);
  Result<GgufFile> f = GgufFile::parse(ok.span());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f->get_array("bomb"))->depth(), kMaxArrayDepth);

  const std::string msg = parse_error(nested_arrays(kMaxArrayDepth + 1).span());
  EXPECT_EQ(
      msg.rfind("gguf: metadata key 'bomb' (kv 0 at offset 24): item 0 of array at offset 40: ", 0),
      0u)
      << msg;
  const size_t deepest = 40 + 12 * kMaxArrayDepth;
  EXPECT_NE(msg.find(fmt::format("array at offset {} is nested 9 levels deep (limit 8)", deepest)),
            std::string::npos)
      << msg;
  // A bomb a million levels deep fails fast, without deep recursion.
  const std::string bomb = parse_error(nested_arrays(1000000).span());
  EXPECT_NE(bomb.find("is nested 9 levels deep (limit 8)"), std::string::npos);
}

TEST(GgufMalformed, DuplicateKeyAndTensorName) {
  Bytes k;
  k.header(0, 2).str("a").u32(4).u32(1);
  const size_t second = k.pos();
  k.str("a").u32(4).u32(2);
  EXPECT_EQ(
      parse_error(k.span()),
      fmt::format("gguf: duplicate metadata key 'a' (kv 1 at offset {}; first defined by kv 0 "
                  "at offset 24)",
                  second));
  Bytes t;
  t.header(2, 0).tensor("w", {8}, kF32, 0);
  const size_t second_t = t.pos();
  t.tensor("w", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_EQ(parse_error(t.span()),
            fmt::format("gguf: duplicate tensor name 'w' (tensor info 1 at offset {}; first "
                        "defined by tensor info 0 at offset 24)",
                        second_t));
}

TEST(GgufMalformed, BadAlignment) {
  for (uint32_t bad : {0u, 3u, 48u}) {
    Bytes b;
    b.header(0, 1).str("general.alignment").u32(4).u32(bad);
    EXPECT_EQ(
        parse_error(b.span()),
        fmt::format("gguf: metadata key 'general.alignment' (kv 0 at offset 24) = {} is not a "
                    "nonzero power of two",
                    bad));
  }
  Bytes t;
  t.header(0, 1).str("general.alignment").u32(5).u32(64);
  EXPECT_EQ(
      parse_error(t.span()),
      "gguf: metadata key 'general.alignment' (kv 0 at offset 24) has type i32, expected u32");
}

TEST(GgufMalformed, BadDims) {
  Bytes zero;
  zero.header(1, 0);
  zero.str("blk.0.attn_q.weight");
  const size_t ndims_at = zero.pos();
  zero.u32(0).u32(kF32).u64(0).zeros(64);
  EXPECT_EQ(parse_error(zero.span()),
            fmt::format("gguf: tensor 'blk.0.attn_q.weight' (tensor info 0 at offset 24): n_dims 0 "
                        "at offset {} is outside 1..4",
                        ndims_at));
  Bytes five;
  five.header(1, 0).tensor("t", {1, 1, 1, 1, 1}, kF32, 0).zeros(64);
  EXPECT_EQ(parse_error(five.span()),
            "gguf: tensor 't' (tensor info 0 at offset 24): n_dims 5 at offset 33 is outside 1..4");
  Bytes empty;
  empty.header(1, 0).tensor("t", {4, 0}, kF32, 0).zeros(64);
  EXPECT_EQ(
      parse_error(empty.span()),
      "gguf: tensor 't' (tensor info 0 at offset 24): dimension 1 = 0 at offset 45 must be >= "
      "1 (empty tensors are not accepted)");
  Bytes neg;
  neg.header(1, 0).tensor("t", {-4}, kF32, 0).zeros(64);
  EXPECT_EQ(
      parse_error(neg.span()),
      "gguf: tensor 't' (tensor info 0 at offset 24): dimension 0 = -4 at offset 37 must be >= "
      "1 (empty tensors are not accepted)");
}

TEST(GgufMalformed, ElementCountOverflow) {
  Bytes elems;
  elems.header(1, 0).tensor("t", {int64_t{1} << 32, int64_t{1} << 32}, kF32, 0).zeros(64);
  EXPECT_EQ(parse_error(elems.span()),
            "gguf: tensor 't' (tensor info 0 at offset 24): element count of shape [4294967296, "
            "4294967296] overflows int64");
  Bytes bytes;
  bytes.header(1, 0).tensor("t", {int64_t{1} << 62}, kF32, 0).zeros(64);
  EXPECT_EQ(parse_error(bytes.span()),
            "gguf: tensor 't' (tensor info 0 at offset 24): byte size of f32 [4611686018427387904] "
            "overflows int64");
}

TEST(GgufMalformed, BlockSizeAndTypeId) {
  Bytes blk;
  blk.header(1, 0).tensor("q", {33, 2}, kQ4_0, 0).zeros(128);
  EXPECT_EQ(parse_error(blk.span()),
            "gguf: tensor 'q' (tensor info 0 at offset 24): shape [33, 2]: ne[0] = 33 is not a "
            "multiple of the q4_0 block size 32");
  // 41: the first id past folio's table (kDTypeIdLimit).
  for (uint32_t id : {4u, 31u, 41u, 0xFFFFFFFFu}) {
    Bytes t;
    t.header(1, 0).tensor("t", {32}, id, 0).zeros(128);
    EXPECT_EQ(
        parse_error(t.span()),
        fmt::format("gguf: tensor 't' (tensor info 0 at offset 24): unknown ggml type id {} at "
                    "offset 45",
                    id));
  }
}

TEST(GgufMalformed, TensorOffsets) {
  Bytes mis;
  mis.header(1, 0).tensor("t", {4}, kF32, 8).pad_to(32).zeros(64);
  EXPECT_EQ(parse_error(mis.span()),
            "gguf: tensor 't' (tensor info 0 at offset 24): data offset 8 at offset 49 is not a "
            "multiple of the alignment 32");

  // Header ends at 75 -> data section at 96 (40 bytes); 16 bytes needed at data offset 32.
  Bytes past;
  past.header(1, 0).tensor("blk.0.attn_q.weight", {4}, kF32, 32).pad_to(32).zeros(40);
  ASSERT_EQ(past.pos(), 136u);
  EXPECT_EQ(
      parse_error(past.span()),
      "gguf: tensor 'blk.0.attn_q.weight' data [offset 128 (data section offset 32), 16 bytes] "
      "extends past end of file (size 136)");

  Bytes far;
  far.header(1, 0).tensor("t", {4}, kF32, ~uint64_t{31}).pad_to(32).zeros(32);
  EXPECT_EQ(
      parse_error(far.span()),
      "gguf: tensor 't' data [data section offset 18446744073709551584, 16 bytes] extends past "
      "end of file (size 96)");

  Bytes no_data;  // the header ends unaligned, at the end of the file
  no_data.header(1, 0).tensor("t", {4}, kF32, 0);
  EXPECT_EQ(
      parse_error(no_data.span()),
      "gguf: data section would start at offset 64 (header ends at 57, alignment 32) past the "
      "end of the file (size 57), but 1 tensors need data");

  Bytes overlap;
  overlap.header(3, 0)
      .tensor("a", {16}, kF32, 0)
      .tensor("b", {16}, kF32, 128)
      .tensor("c", {16}, kF32, 32)
      .pad_to(32);
  const size_t data_at = overlap.pos();
  overlap.zeros(256);
  EXPECT_EQ(parse_error(overlap.span()),
            fmt::format("gguf: tensor 'c' data [offset {}, 64 bytes] overlaps tensor 'a' data "
                        "[offset {}, 64 bytes]",
                        data_at + 32, data_at));
}

TEST(GgufMalformed, ValidEdgeCases) {
  // Tensors out of file order, with gaps, and a custom alignment.
  Bytes b;
  b.header(2, 1).str("general.alignment").u32(4).u32(64);
  b.tensor("late", {16}, kF32, 128).tensor("early", {4}, kF32, 0).pad_to(64).zeros(192);
  Result<GgufFile> f = GgufFile::parse(b.span());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->tensors()[0].offset, 128u);
  // No tensors, header only (vocabulary files end before the aligned data offset).
  Bytes v;
  v.header(0, 1).str("k").u32(8).str("v");
  Result<GgufFile> g = GgufFile::parse(v.span());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->data_offset(), 64u);
  EXPECT_EQ(g->data_size(), 0u);
}

// Inputs that once broke the reader (or were made to stress it): each must
// produce a clean error containing the text in its `.expected` companion.
TEST(GgufMalformed, CommittedRegressions) {
  const fs::path dir = fs::path(FOLIO_SOURCE_DIR) / "tests/gguf/regressions";
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".gguf") continue;
    SCOPED_TRACE(e.path().string());
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    std::ifstream exp(e.path().string() + ".expected");
    std::string expected;
    std::getline(exp, expected);
    ASSERT_FALSE(expected.empty()) << "missing " << e.path().string() << ".expected";
    Result<GgufFile> r = GgufFile::parse(bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
    ++n;
  }
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace folio::gguf
