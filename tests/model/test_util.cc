#include "test_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace folio::model::testing {

Result<NpyF32> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open {}", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return data_loss("{}: not a .npy file", path);
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return data_loss("{}: truncated header", path);
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return data_loss("{}: unsupported .npy version {}", path, major);
  }
  if (header_start + header_len > bytes.size()) return data_loss("{}: truncated header", path);
  const std::string header = bytes.substr(header_start, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos)
    return unsupported("{}: not little-endian float32: {}", path, header);
  if (header.find("'fortran_order': False") == std::string::npos)
    return unsupported("{}: not C order", path);
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos)
    return data_loss("{}: no shape", path);
  NpyF32 out;
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  std::string item;
  int64_t count = 1;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    out.shape.push_back(std::stoll(item));
    count *= out.shape.back();
  }
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != static_cast<size_t>(count) * 4) {
    return data_loss("{}: {} data bytes for {} floats", path, bytes.size() - data_start, count);
  }
  out.data.resize(static_cast<size_t>(count));
  std::memcpy(out.data.data(), bytes.data() + data_start, out.data.size() * 4);
  return out;
}

Result<std::vector<int32_t>> read_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open {}", path);
  std::string line;
  std::getline(in, line);
  std::vector<int32_t> ids;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(static_cast<int32_t>(std::stol(item)));
  return ids;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string shared_models_dir() {
  return std::string(FOLIO_REFDATA_DIR) + "/models";
}
std::string local_refdata_dir() {
  return std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata";
}

int32_t argmax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

float max_abs_diff(const float* a, const float* b, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float d = std::fabs(a[i] - b[i]);
    if (!(d <= m)) m = d;  // NaN propagates
  }
  return m;
}

Result<std::vector<float>> eval_all(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                                    const std::vector<int32_t>& tokens, int seq) {
  cache::Batch b;
  const int64_t start = cache.seq_len(seq);
  for (size_t i = 0; i < tokens.size(); ++i) {
    b.add(tokens[i], static_cast<int32_t>(start + static_cast<int64_t>(i)), seq, true);
  }
  FOLIO_ASSIGN_OR_RETURN(TensorView logits, m.forward(b, cache, ctx));
  const float* p = static_cast<const float*>(logits.data);
  return std::vector<float>(p, p + logits.nelements());
}

Result<std::vector<float>> eval_one(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                                    int32_t token, int seq) {
  return eval_all(m, cache, ctx, {token}, seq);
}

std::vector<int32_t> layout_test_prompt(int64_t n_vocab) {
  std::vector<int32_t> p;
  for (int i = 0; i < 20; ++i) p.push_back(static_cast<int32_t>((i * 53 + 7) % n_vocab));
  return p;
}

std::vector<std::vector<float>> prompt_and_decode_logits(const Model& m, ForwardContext& ctx,
                                                         const std::vector<int32_t>& prompt,
                                                         Backend* device) {
  const int64_t nv = m.config().n_vocab;
  std::vector<std::vector<float>> rows;
  auto cache = device == nullptr
                   ? m.make_cache({64, 1, DType::F32})
                   : m.make_cache(cache_options(DType::F32, 64, 1, /*paged=*/false, device));
  EXPECT_TRUE(cache.ok());
  if (!cache.ok()) return rows;
  Result<std::vector<float>> pre = eval_all(m, **cache, ctx, prompt);
  EXPECT_TRUE(pre.ok()) << pre.status().to_string();
  if (!pre.ok()) return rows;
  for (size_t i = 0; i < prompt.size(); ++i) {
    rows.emplace_back(pre->begin() + static_cast<int64_t>(i) * nv,
                      pre->begin() + static_cast<int64_t>(i + 1) * nv);
  }
  for (int32_t t : {3, 77, 5, 120}) {
    Result<std::vector<float>> r = eval_one(m, **cache, ctx, t % static_cast<int32_t>(nv));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok()) rows.push_back(*r);
  }
  return rows;
}

float worst_row_diff(const std::vector<std::vector<float>>& a,
                     const std::vector<std::vector<float>>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst =
        std::max(worst, max_abs_diff(a[i].data(), b[i].data(), static_cast<int64_t>(a[i].size())));
  }
  return worst;
}

std::string test_name(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

Status copy_metadata(const gguf::GgufFile& f, gguf::GgufWriter& w) {
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (kv.key == "general.alignment") continue;
    FOLIO_RETURN_IF_ERROR(w.add(kv.key, kv.value));
  }
  return Status();
}

Result<gguf::GgufFile> quantized_ffn_copy(const std::string& path, DType to, bool dequantize_back) {
  auto is_ffn_matrix = [](const gguf::TensorInfo& t) {
    const std::string& n = t.name;
    return t.type_id == static_cast<uint32_t>(DType::F32) && t.n_dims >= 2 &&
           (n.find(".ffn_gate.") != std::string::npos || n.find(".ffn_up.") != std::string::npos ||
            n.find(".ffn_down.") != std::string::npos || n.find("_exps.") != std::string::npos);
  };
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(path));
  gguf::GgufWriter w;
  FOLIO_RETURN_IF_ERROR(copy_metadata(f, w));
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_bytes(t);
    const std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (!is_ffn_matrix(t)) {
      FOLIO_RETURN_IF_ERROR(
          w.add_tensor(t.name, t.type_id, shape, std::vector<uint8_t>(bytes.begin(), bytes.end())));
      continue;
    }
    const int64_t k = t.ne[0], rows = t.nelements() / k;
    const size_t qrow = row_size(to, k);
    std::vector<uint8_t> q(qrow * static_cast<size_t>(rows));
    const float* src = reinterpret_cast<const float*>(bytes.data());
    for (int64_t r = 0; r < rows; ++r)
      quant::quantize_row_ref(to, src + r * k, q.data() + r * qrow, k);
    if (!dequantize_back) {
      FOLIO_RETURN_IF_ERROR(w.add_tensor(t.name, to, shape, std::move(q)));
      continue;
    }
    std::vector<uint8_t> back(bytes.size());
    float* dst = reinterpret_cast<float*>(back.data());
    for (int64_t r = 0; r < rows; ++r)
      quant::dequantize_row_ref(to, q.data() + r * qrow, dst + r * k, k);
    FOLIO_RETURN_IF_ERROR(w.add_tensor(t.name, t.type_id, shape, std::move(back)));
  }
  const std::vector<uint8_t> out = w.to_bytes();
  return gguf::GgufFile::parse(out);
}

Result<std::unique_ptr<Model>> load_offloaded(const std::string& path, Backend* device) {
  LoadOptions lo;
  lo.offload_type = &device->default_buffer_type();
  lo.offload_layers = -1;  // every layer and the output head
  return Model::load(path, lo);
}

cache::KvCacheOptions cache_options(DType type, int64_t n_ctx, int n_seq, bool paged,
                                    Backend* device) {
  cache::KvCacheOptions o;
  o.storage = paged ? cache::KvStorage::kPaged : cache::KvStorage::kContiguous;
  o.type = type;
  o.n_ctx = n_ctx;
  o.n_seq = n_seq;
  o.max_checkpoints = 0;
  if (device != nullptr) {
    const BufferType* buffers = &device->default_buffer_type();
    o.alloc = [buffers](size_t bytes) { return buffers->alloc(bytes); };
  }
  return o;
}

}  // namespace folio::model::testing
