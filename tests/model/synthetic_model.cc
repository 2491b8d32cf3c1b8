#include "synthetic_model.h"

#include <cstring>

#include "core/check.h"
#include "gguf/gguf_writer.h"

namespace folio::model::testing {

SyntheticModel SyntheticModel::llama() {
  constexpr int64_t e = 256, hq = 4, hkv = 2, d = 64, ff = 512, nv = 64;
  SyntheticModel m;
  m.set("general.architecture", "llama");
  m.set("llama.context_length", uint32_t{256});
  m.set("llama.embedding_length", uint32_t{e});
  m.set("llama.block_count", uint32_t{1});
  m.set("llama.feed_forward_length", uint32_t{ff});
  m.set("llama.attention.head_count", uint32_t{hq});
  m.set("llama.attention.head_count_kv", uint32_t{hkv});
  m.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  m.set("llama.rope.freq_base", 10000.0f);
  m.set("llama.vocab_size", uint32_t{nv});
  m.tensors = {
      {"token_embd.weight", DType::F32, {e, nv}},
      {"output_norm.weight", DType::F32, {e}},
      {"output.weight", DType::F32, {e, nv}},
      {"blk.0.attn_norm.weight", DType::F32, {e}},
      {"blk.0.attn_q.weight", DType::F32, {e, hq * d}},
      {"blk.0.attn_k.weight", DType::F32, {e, hkv * d}},
      {"blk.0.attn_v.weight", DType::F32, {e, hkv * d}},
      {"blk.0.attn_output.weight", DType::F32, {hq * d, e}},
      {"blk.0.ffn_norm.weight", DType::F32, {e}},
      {"blk.0.ffn_gate.weight", DType::F32, {e, ff}},
      {"blk.0.ffn_up.weight", DType::F32, {e, ff}},
      {"blk.0.ffn_down.weight", DType::F32, {ff, e}},
  };
  return m;
}

void SyntheticModel::set(const std::string& key, gguf::Value value) {
  for (auto& [k, v] : metadata) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata.emplace_back(key, std::move(value));
}

void SyntheticModel::erase_key(const std::string& key) {
  std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
}

void SyntheticModel::erase_tensor(const std::string& name) {
  std::erase_if(tensors, [&](const Tensor& t) { return t.name == name; });
}

SyntheticModel::Tensor& SyntheticModel::tensor(const std::string& name) {
  for (Tensor& t : tensors) {
    if (t.name == name) return t;
  }
  FOLIO_CHECK_MSG(false, "no tensor {}", name);
  return tensors.front();
}

Result<SyntheticModel> SyntheticModel::from_file(const std::string& path) {
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(path));
  SyntheticModel m;
  for (const gguf::KeyValue& kv : f.metadata()) m.metadata.emplace_back(kv.key, kv.value);
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.type_id != 0) return unsupported("{}: tensor {} is not F32", path, t.name);
    m.tensors.push_back({t.name, DType::F32, {t.ne.begin(), t.ne.begin() + t.n_dims}});
  }
  return m;
}

Result<gguf::GgufFile> SyntheticModel::build() const {
  gguf::GgufWriter w;
  for (const auto& [k, v] : metadata) FOLIO_RETURN_IF_ERROR(w.add(k, v));
  uint32_t seed = 12345;
  for (const Tensor& t : tensors) {
    int64_t rows = 1;
    for (size_t i = 1; i < t.shape.size(); ++i) rows *= t.shape[i];
    std::vector<uint8_t> data(row_size(t.type, t.shape[0]) * static_cast<size_t>(rows), 0);
    if (t.type == DType::F32) {
      const bool norm = t.shape.size() == 1;
      for (size_t i = 0; i < data.size() / 4; ++i) {
        seed = seed * 1664525u + 1013904223u;
        const float r =
            static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) - 0.5f;  // [-0.5, 0.5)
        const float v = norm ? 1.0f + 0.1f * r : 0.2f * r;
        std::memcpy(data.data() + 4 * i, &v, 4);
      }
    }
    FOLIO_RETURN_IF_ERROR(w.add_tensor(t.name, t.type, t.shape, std::move(data)));
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  return gguf::GgufFile::parse(bytes);
}

}  // namespace folio::model::testing
