// Byte-exact agreement with independent implementations: the committed
// vectors in tests/quant/vectors/ were produced by the gguf package (and by
// ggml's reference quantizers via llama-cpp-python), see
// scripts/gen_quant_vectors.py for the file format and MANIFEST.txt for which
// tool produced each file. Quantize must give identical bytes, dequantize
// identical float bits.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "quant/quant.h"

namespace folio::quant {
namespace vectors_test {

const std::string kVectorDir = std::string(FOLIO_SOURCE_DIR) + "/tests/quant/vectors/";

struct ManifestEntry {
  std::string file;
  std::string type;
  std::string op;  // "quantize" or "dequantize"
  std::string quantize_tool;
  std::string dequantize_tool;
  std::vector<std::string> row_names;  // from "rows=a,b,c" in the note, may be empty
};

// Test names print the file, not the struct bytes.
void PrintTo(const ManifestEntry& e, std::ostream* os) {
  *os << e.file;
}

std::vector<ManifestEntry> load_manifest() {
  std::vector<ManifestEntry> entries;
  std::ifstream in(kVectorDir + "MANIFEST.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    ManifestEntry e;
    ls >> e.file >> e.type >> e.op >> e.quantize_tool >> e.dequantize_tool;
    std::string word;
    while (ls >> word) {
      if (word.rfind("rows=", 0) != 0) continue;
      std::istringstream names(word.substr(5));
      std::string name;
      while (std::getline(names, name, ',')) e.row_names.push_back(name);
    }
    entries.push_back(e);
  }
  return entries;
}

struct VectorFile {
  uint32_t type = 0;
  uint32_t op = 0;
  uint32_t n_rows = 0;
  uint32_t n_per_row = 0;
  std::vector<std::vector<uint8_t>> sections;
};

// Reads and validates one FQV1 file; failures are reported through gtest.
bool read_vector_file(const std::string& path, VectorFile* out) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 24 || std::memcmp(data.data(), "FQV1", 4) != 0) {
    ADD_FAILURE() << path << ": missing or not an FQV1 file";
    return false;
  }
  uint32_t head[5];
  std::memcpy(head, data.data() + 4, sizeof(head));
  out->type = head[0];
  out->op = head[1];
  out->n_rows = head[2];
  out->n_per_row = head[3];
  const uint32_t n_sections = head[4];
  size_t pos = 24 + 8 * static_cast<size_t>(n_sections);
  if (n_sections > 8 || pos > data.size()) {
    ADD_FAILURE() << path << ": bad section table";
    return false;
  }
  for (uint32_t s = 0; s < n_sections; ++s) {
    uint64_t len;
    std::memcpy(&len, data.data() + 24 + 8 * s, 8);
    if (len > data.size() - pos) {
      ADD_FAILURE() << path << ": section " << s << " runs past the end";
      return false;
    }
    out->sections.emplace_back(data.begin() + static_cast<std::ptrdiff_t>(pos),
                               data.begin() + static_cast<std::ptrdiff_t>(pos + len));
    pos += len;
  }
  if (pos != data.size()) {
    ADD_FAILURE() << path << ": trailing bytes";
    return false;
  }
  return true;
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  return f;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Number of float elements whose bits differ; prints the first few.
int count_float_mismatches(const std::vector<float>& got, const std::vector<float>& want,
                           int64_t n_per_row, const std::vector<std::string>& row_names) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (float_bits(got[i]) == float_bits(want[i])) continue;
    if (++bad <= 5) {
      const size_t row = i / static_cast<size_t>(n_per_row);
      ADD_FAILURE() << "element " << i << " (row " << row
                    << (row < row_names.size() ? " '" + row_names[row] + "'" : std::string())
                    << ", col " << i % static_cast<size_t>(n_per_row) << "): got " << got[i]
                    << " (0x" << std::hex << float_bits(got[i]) << "), want " << want[i] << " (0x"
                    << float_bits(want[i]) << ")" << std::dec;
    }
  }
  return bad;
}

class QuantVectors : public ::testing::TestWithParam<ManifestEntry> {};

TEST_P(QuantVectors, MatchesProducer) {
  const ManifestEntry& e = GetParam();
  SCOPED_TRACE(e.file + " (quantize: " + e.quantize_tool + ", dequantize: " + e.dequantize_tool +
               ")");
  VectorFile v;
  ASSERT_TRUE(read_vector_file(kVectorDir + e.file, &v));
  const auto t = dtype_traits_for_id(v.type);
  ASSERT_TRUE(t.has_value()) << "type id " << v.type;
  const auto type = static_cast<DType>(v.type);
  ASSERT_TRUE(parse_dtype(e.type) == type) << "manifest type " << e.type << " vs file " << t->name;
  const int64_t n = static_cast<int64_t>(v.n_rows) * v.n_per_row;
  const size_t packed = row_size(type, n);
  ASSERT_EQ(v.n_per_row % t->block_size, 0);

  if (v.op == 0) {
    ASSERT_EQ(e.op, "quantize");
    ASSERT_EQ(v.sections.size(), 3u);
    const std::vector<float> x = as_floats(v.sections[0]);
    ASSERT_EQ(static_cast<int64_t>(x.size()), n);
    ASSERT_EQ(v.sections[1].size(), packed);
    ASSERT_TRUE(has_quantize(type));
    std::vector<uint8_t> q(packed);
    ASSERT_TRUE(quantize(type, x.data(), n, q.data(), q.size()).ok());
    const size_t row_bytes = row_size(type, v.n_per_row);
    int bad_rows = 0;
    for (size_t r = 0; r < v.n_rows; ++r) {
      const uint8_t* got = q.data() + r * row_bytes;
      const uint8_t* want = v.sections[1].data() + r * row_bytes;
      if (std::memcmp(got, want, row_bytes) == 0) continue;
      size_t first = 0;
      while (got[first] == want[first]) ++first;
      ++bad_rows;
      ADD_FAILURE() << "row " << r << (r < e.row_names.size() ? " '" + e.row_names[r] + "'" : "")
                    << ": bytes differ from byte " << first << " (block " << first / t->type_size
                    << ", offset " << first % t->type_size << "): got " << int(got[first])
                    << ", want " << int(want[first]);
    }
    EXPECT_EQ(bad_rows, 0);
    // Dequantizing the producer's bytes gives the producer's floats.
    if (!v.sections[2].empty()) {
      const std::vector<float> want = as_floats(v.sections[2]);
      ASSERT_EQ(static_cast<int64_t>(want.size()), n);
      std::vector<float> y(static_cast<size_t>(n));
      ASSERT_TRUE(dequantize(type, v.sections[1].data(), packed, y.data(), n).ok());
      EXPECT_EQ(count_float_mismatches(y, want, v.n_per_row, e.row_names), 0);
    }
  } else {
    ASSERT_EQ(e.op, "dequantize");
    ASSERT_EQ(v.sections.size(), 2u);
    ASSERT_EQ(v.sections[0].size(), packed);
    const std::vector<float> want = as_floats(v.sections[1]);
    ASSERT_EQ(static_cast<int64_t>(want.size()), n);
    std::vector<float> y(static_cast<size_t>(n));
    ASSERT_TRUE(dequantize(type, v.sections[0].data(), packed, y.data(), n).ok());
    EXPECT_EQ(count_float_mismatches(y, want, v.n_per_row, {}), 0);
  }
}

std::string entry_name(const ::testing::TestParamInfo<ManifestEntry>& info) {
  std::string s = info.param.file.substr(0, info.param.file.rfind(".bin"));
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Files, QuantVectors, ::testing::ValuesIn(load_manifest()), entry_name);

// Every format folio implements is pinned by at least one independent
// vector file in each implemented direction (F32 quantize is a copy).
TEST(QuantVectorCoverage, EveryImplementedFormatHasVectors) {
  std::set<std::pair<std::string, std::string>> covered;
  for (const auto& e : load_manifest()) covered.insert({e.type, e.op});
  int checked = 0;
  for (uint32_t id = 0; id < kDTypeIdLimit; ++id) {
    const auto t = dtype_traits_for_id(id);
    if (!t) continue;
    std::string name = t->name;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto type = static_cast<DType>(id);
    if (has_dequantize(type)) {
      EXPECT_TRUE(covered.count({name, "dequantize"})) << name << " dequantize";
      ++checked;
    }
    if (has_quantize(type) && type != DType::F32) {
      EXPECT_TRUE(covered.count({name, "quantize"})) << name << " quantize";
      ++checked;
    }
  }
  EXPECT_GE(checked, 28);
}

// The K-quant and Q8_K quantizers are pinned by ggml's own reference
// quantizer, not just by round-trip properties.
TEST(QuantVectorCoverage, KQuantQuantizersCheckedAgainstGgml) {
  std::set<std::string> by_ggml;
  for (const auto& e : load_manifest()) {
    if (e.op == "quantize" && e.quantize_tool.rfind("ggml", 0) == 0) by_ggml.insert(e.type);
  }
  for (const char* t :
       {"q4_k", "q5_k", "q6_k", "q8_k", "q8_1", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}) {
    EXPECT_TRUE(by_ggml.count(t)) << t;
  }
}

}  // namespace
}  // namespace folio::quant
