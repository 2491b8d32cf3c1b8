// GgufFile on real files (tests/data) and on writer-made files: header
// facts checked against gguf-py's reading of the same files, typed getters,
// tensor views.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf/gguf_dump.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"

namespace folio::gguf {
namespace reader_test {

namespace fs = std::filesystem;
using testing::small_writer;

std::vector<fs::path> refdata_gguf_files() {
  std::vector<fs::path> files;
  for (const char* sub : {"models", "tokenizer"}) {
    const fs::path dir = fs::path(FOLIO_REFDATA_DIR) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".gguf") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Facts read from the same files with gguf-py 0.19 (GGUFReader; its kv count
// includes 3 pseudo-fields for the header, subtracted here).
struct Known {
  const char* file;
  size_t n_tensors;
  size_t n_kv;
  size_t data_offset;
  const char* arch;
  size_t n_tokens;
};
constexpr Known kKnown[] = {
    {"models/tiny-llama-f32.gguf", 21, 25, 13344, "llama", 512},
    {"models/tiny-qwen3-f32.gguf", 24, 25, 13504, "qwen3", 512},
    {"models/tiny-qwen35-f32.gguf", 56, 32, 15680, "qwen35", 512},
    {"models/tiny-qwen3next-f32.gguf", 73, 35, 17152, "qwen3next", 512},
    {"tokenizer/ggml-vocab-deepseek-llm.gguf", 0, 23, 3970176, "llama", 102400},
    {"tokenizer/ggml-vocab-falcon.gguf", 0, 18, 2287744, "falcon", 65024},
    {"tokenizer/ggml-vocab-gemma-4.gguf", 0, 42, 15776480, "gemma4", 262144},
    {"tokenizer/ggml-vocab-gpt-2.gguf", 0, 16, 1766816, "gpt2", 50257},
    {"tokenizer/ggml-vocab-llama-bpe.gguf", 0, 20, 7818144, "llama", 128256},
    {"tokenizer/ggml-vocab-llama-spm.gguf", 0, 22, 723872, "llama", 32000},
    {"tokenizer/ggml-vocab-phi-3.gguf", 0, 26, 726048, "phi3", 32064},
    {"tokenizer/ggml-vocab-qwen2.gguf", 0, 20, 5928704, "qwen2", 151936},
    {"tokenizer/ggml-vocab-qwen35.gguf", 0, 20, 5928704, "qwen2", 151936},
    {"tokenizer/ggml-vocab-starcoder.gguf", 0, 19, 1719360, "starcoder2", 49152},
};

TEST(GgufRefdata, EveryFileParsesDumpsAndReencodesByteIdentically) {
  const std::vector<fs::path> files = refdata_gguf_files();
  if (files.empty()) FAIL() << "no refdata under " << FOLIO_REFDATA_DIR;
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.string());
    Result<GgufFile> f = GgufFile::open(p.string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->file_size(), fs::file_size(p));
    EXPECT_TRUE(f->get_string("general.architecture").ok());
    for (const TensorInfo& t : f->tensors()) {
      EXPECT_EQ(f->tensor_bytes(t).size(), t.nbytes);
      EXPECT_LE(f->data_offset() + t.offset + t.nbytes, f->file_size());
    }
    const std::string dump = dump_gguf(*f);
    EXPECT_NE(dump.find("general.architecture = \""), std::string::npos);
    // Files written by llama.cpp's gguf-py use the writer's layout: the
    // re-encoding is the same bytes.
    Result<GgufWriter> w = GgufWriter::from_file(*f);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    EXPECT_TRUE(w->to_bytes() == read_bytes(p));
  }
}

// The fuzz seed corpus is written by gguf-py (tests/fuzz/make_gguf_corpus.py):
// nested arrays, every value type, quantized and exotic tensor types, a custom
// alignment and a v2 header. folio reads them and re-encodes them to the same
// bytes (the v2 file re-encodes as v3, identical past the version field).
// Without tensors gguf-py pads the header to the alignment and llama.cpp's
// writer (and folio's) does not; both are valid, so that padding is ignored.
TEST(GgufCorpus, GgufPyFilesReencodeByteIdentically) {
  const fs::path dir = fs::path(FOLIO_SOURCE_DIR) / "tests/fuzz/corpus/gguf";
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    SCOPED_TRACE(e.path().string());
    Result<GgufFile> f = GgufFile::open(e.path().string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    Result<GgufWriter> w = GgufWriter::from_file(*f);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    std::vector<uint8_t> original = read_bytes(e.path());
    if (f->version() == 2) original[4] = 3;
    const std::vector<uint8_t> out = w->to_bytes();
    if (f->tensors().empty() && original.size() > out.size()) {
      EXPECT_TRUE(std::all_of(original.begin() + static_cast<ptrdiff_t>(out.size()), original.end(),
                              [](uint8_t b) { return b == 0; }));
      original.resize(out.size());
    }
    EXPECT_TRUE(out == original);
    ++n;
  }
  EXPECT_GE(n, 5u);
}

TEST(GgufRefdata, HeaderFactsMatchGgufPy) {
  for (const Known& k : kKnown) {
    const fs::path p = fs::path(FOLIO_REFDATA_DIR) / k.file;
    SCOPED_TRACE(k.file);
    ASSERT_TRUE(fs::exists(p)) << "refdata file missing: " << p;
    Result<GgufFile> f = GgufFile::open(p.string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->tensors().size(), k.n_tensors);
    EXPECT_EQ(f->metadata().size(), k.n_kv);
    EXPECT_EQ(f->data_offset(), k.data_offset);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(*f->get_string("general.architecture"), k.arch);
    Result<std::span<const std::string>> tokens = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
    EXPECT_EQ(tokens->size(), k.n_tokens);
    Result<std::span<const int32_t>> types = f->get_array_of<int32_t>("tokenizer.ggml.token_type");
    ASSERT_TRUE(types.ok()) << types.status().to_string();
    EXPECT_EQ(types->size(), k.n_tokens);
  }
}

TEST(GgufRefdata, TinyLlamaTensorsMatchGgufPy) {
  const fs::path p = fs::path(FOLIO_REFDATA_DIR) / "models/tiny-llama-f32.gguf";
  if (!fs::exists(p)) FAIL();
  Result<GgufFile> f = GgufFile::open(p.string());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  Result<TensorView> emb = f->tensor_view("token_embd.weight");
  ASSERT_TRUE(emb.ok()) << emb.status().to_string();
  EXPECT_EQ(emb->dtype, DType::F32);
  EXPECT_EQ(emb->ne[0], 128);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->nb[1], 512u);
  // Values gguf-py reads at the same place (file offsets 13344, 275488, 1588768).
  EXPECT_FLOAT_EQ(*emb->at<float>(0, 0), 0.45934927463531494f);
  EXPECT_FLOAT_EQ(*emb->at<float>(1, 0), -1.7872322797775269f);
  EXPECT_FLOAT_EQ(*emb->at<float>(127, 511), 0.7980148f);
  const TensorInfo* norm = f->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(f->data_offset() + norm->offset, 275488u);
  EXPECT_EQ(norm->n_dims, 1u);
  Result<TensorView> down = f->tensor_view("blk.1.ffn_down.weight");
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(
      static_cast<const uint8_t*>(down->data) - static_cast<const uint8_t*>(f->storage()->data()),
      1588768);
  EXPECT_FLOAT_EQ(*down->at<float>(255, 127), 0.11652713f);
  EXPECT_EQ(*f->get_u32("llama.block_count"), 2u);
  EXPECT_EQ(*f->get_u32("llama.embedding_length"), 128u);
}

TEST(GgufFile, TypedGettersConvertIntegersThatFit) {
  std::vector<uint8_t> bytes = small_writer().to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(*f->get_u32("u8"), 200u);
  EXPECT_EQ(*f->get_i32("u16"), 60000);
  EXPECT_EQ(*f->get_u32("u32"), 4000000000u);
  EXPECT_EQ(*f->get_i64("u32"), 4000000000);
  EXPECT_EQ(*f->get_i32("i8"), -100);
  EXPECT_EQ(*f->get_u64("u64"), uint64_t{1} << 40);
  EXPECT_EQ(*f->get_i64("i64"), int64_t{-1} << 40);
  EXPECT_EQ(*f->get_f32("f32"), 1.5f);
  EXPECT_EQ(*f->get_f64("f64"), 0.25);
  EXPECT_EQ(*f->get_f32("f64"), 0.25f);
  EXPECT_TRUE(*f->get_bool("bool"));
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");

  Result<uint32_t> neg = f->get_u32("i8");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(neg.status().message(), "gguf: metadata key 'i8' = i8 -100 does not fit in u32");
  Result<int32_t> big = f->get_i32("u32");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            "gguf: metadata key 'u32' = u32 4000000000 does not fit in i32");
  Result<uint32_t> str = f->get_u32("general.architecture");
  ASSERT_FALSE(str.ok());
  EXPECT_EQ(str.status().message(),
            "gguf: metadata key 'general.architecture' is string, expected an integer (u32)");
  Result<float> notf = f->get_f32("u8");
  ASSERT_FALSE(notf.ok());
  EXPECT_EQ(notf.status().message(),
            "gguf: metadata key 'u8' is u8 200, expected a float (f32 or f64)");
  Result<std::string_view> nots = f->get_string("tokens");
  ASSERT_FALSE(nots.ok());
  EXPECT_EQ(nots.status().message(),
            "gguf: metadata key 'tokens' is array of 4 string, expected string");
  Result<uint32_t> missing = f->get_u32("llama.block_count");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "gguf: metadata key 'llama.block_count' not found");

  // Fallbacks apply only to absent keys.
  EXPECT_EQ(*f->get_u32("absent", 7), 7u);
  EXPECT_EQ(*f->get_f32("absent", 0.5f), 0.5f);
  EXPECT_EQ(*f->get_string("absent", "dflt"), "dflt");
  EXPECT_FALSE(*f->get_bool("absent", false));
  EXPECT_EQ(*f->get_u32("u8", 7), 200u);
  EXPECT_FALSE(f->get_u32("general.architecture", 7).ok());
}

TEST(GgufFile, ArrayGetters) {
  std::vector<uint8_t> bytes = small_writer().to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok());
  Result<std::span<const std::string>> tokens = f->get_string_array("tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 4u);
  EXPECT_EQ((*tokens)[3], "hello");
  Result<std::span<const float>> wrong = f->get_array_of<float>("tokens");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "gguf: metadata key 'tokens' is an array of 4 string, expected an array of f32");
  Result<const Array*> nested = f->get_array("nested");
  ASSERT_TRUE(nested.ok());
  ASSERT_EQ((*nested)->elem_type(), ValueType::kArray);
  const std::vector<Array>& inner = *(*nested)->get_if<Array>();
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_EQ(*inner[0].get_if<int32_t>(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(*inner[1].get_if<std::string>(), (std::vector<std::string>{"x"}));
  EXPECT_FALSE(f->get_array("u8").ok());
  EXPECT_FALSE(f->get_int_array("tokens").ok());

  GgufWriter w;
  ASSERT_TRUE(w.add("heads", Value(Array::of(std::vector<uint16_t>{8, 8, 2}))).ok());
  ASSERT_TRUE(w.add("big", Value(Array::of(std::vector<uint64_t>{1, ~uint64_t{0}}))).ok());
  std::vector<uint8_t> b2 = w.to_bytes();
  Result<GgufFile> g = GgufFile::parse(b2);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g->get_int_array("heads"), (std::vector<int64_t>{8, 8, 2}));
  Result<std::vector<int64_t>> big = g->get_int_array("big");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            "gguf: metadata key 'big': item 1 of the u64 array does not fit in i64");
}

TEST(GgufFile, MetadataAndTensorsKeepFileOrder) {
  std::vector<uint8_t> bytes = small_writer().to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->metadata().size(), 14u);
  EXPECT_EQ(f->metadata()[0].key, "general.architecture");
  EXPECT_EQ(f->metadata()[13].key, "nested");
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "a.weight");
  EXPECT_EQ(f->tensors()[2].name, "c.bias");
  EXPECT_EQ(f->find("absent"), nullptr);
  EXPECT_EQ(f->find_tensor("absent"), nullptr);
  EXPECT_EQ(f->path(), "");
}

TEST(GgufFile, TensorViewChecksSupport) {
  GgufWriter w;
  const int64_t shape[] = {256, 2};
  ASSERT_TRUE(w.add_tensor("exotic", DType::IQ2_XXS, shape, std::vector<uint8_t>(2 * 66)).ok());
  ASSERT_TRUE(w.add_tensor("plain", DType::Q4_K, shape, std::vector<uint8_t>(2 * 144, 1)).ok());
  std::vector<uint8_t> bytes = w.to_bytes();
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();  // exotic types still parse (and dump)
  EXPECT_STREQ(f->tensors()[0].type_name(), "iq2_xxs");
  Result<TensorView> exotic = f->tensor_view("exotic");
  ASSERT_FALSE(exotic.ok());
  EXPECT_EQ(exotic.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(exotic.status().message(), "unsupported tensor type iq2_xxs for tensor 'exotic'");
  Result<TensorView> plain = f->tensor_view("plain");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->dtype, DType::Q4_K);
  EXPECT_EQ(plain->nbytes_contiguous(), 2u * 144u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plain->data) % 32, 0u);
  EXPECT_EQ(static_cast<const uint8_t*>(plain->data)[0], 1);
  Result<TensorView> missing = f->tensor_view("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "gguf: tensor 'nope' not found");
}

TEST(GgufFile, ReadsVersion2) {
  std::vector<uint8_t> bytes = small_writer().to_bytes();
  bytes[4] = 2;  // v2 and v3 share the layout
  Result<GgufFile> f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->tensors().size(), 3u);
}

TEST(GgufFile, OpenErrorsNameThePath) {
  Result<GgufFile> r = GgufFile::open("/nonexistent/x.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_EQ(r.status().message(),
            "gguf: cannot open '/nonexistent/x.gguf': No such file or directory");
  const fs::path dir = fs::temp_directory_path();
  Result<GgufFile> d = GgufFile::open(dir.string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not a regular file"), std::string::npos);

  const fs::path empty = dir / "folio_gguf_empty_test.gguf";
  { std::ofstream(empty.string(), std::ios::binary); }
  Result<GgufFile> e = GgufFile::open(empty.string());
  fs::remove(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "gguf: " + empty.string() +
                ": file is 0 bytes, too small for a GGUF header (magic 'GGUF' at offset 0)");
}

}  // namespace
}  // namespace folio::gguf
