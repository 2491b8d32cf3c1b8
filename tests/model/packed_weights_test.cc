// Models loaded through the packed weight buffer types (AMX or CPU_REPACK, then
// CPU: backend/cpu/cpu_buffer_types.h) against the same file loaded plain.
//
// The tiny reference models are F32, which never packs, so each test first
// quantizes their matrices (the reference quantizer, src/quant) into an
// in-memory GGUF: Q8_0 / Q4_0 / Q5_0 for the 128-wide rows, Q4_K / Q6_K
// where rows hold 256 elements, Q8_0 for token_embd (Gemma 3: tied output,
// read by get_rows from the mapping and by mul_mat from a packed copy).
// Then:
//   - placement: every quantized matrix lands in a packed buffer, every F32
//     tensor and the get_rows table stay plain;
//   - logits of a prompt (one batch: AMX tile groups of 16 plus leftovers)
//     and of teacher-forced decode steps are as close to the double-precision
//     reference as the plain load's, and as close to the plain load as the
//     plain AVX2 kernels are (both quantize activations alike and sum the
//     same integers: only float rounding order differs);
//   - packed logits are bit-identical whether the prompt runs as one batch
//     or token by token (the kernels' results do not depend on the batch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_buffer_types.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"
#include "test_util.h"

namespace folio::model::testing {
namespace packed_weights_test {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The format a tensor of the quantized copy gets (F32: left as it is).
DType target_type(const gguf::TensorInfo& t, int layer_parity) {
  const std::string& n = t.name;
  if (t.type_id != static_cast<uint32_t>(DType::F32) || t.n_dims < 2 || t.ne[0] % 32 != 0) {
    return DType::F32;
  }
  if (n == "token_embd.weight" || n == "output.weight") return DType::Q8_0;
  if (ends_with(n, "ffn_gate_inp.weight")) return DType::F32;  // router: keep expert choice stable
  if (t.ne[0] % 256 == 0) return layer_parity == 0 ? DType::Q4_K : DType::Q6_K;
  if (ends_with(n, "attn_k.weight") || ends_with(n, "ffn_gate.weight") ||
      ends_with(n, "ffn_gate_exps.weight")) {
    return DType::Q4_0;
  }
  if (ends_with(n, "attn_v.weight") || ends_with(n, "ffn_up.weight") ||
      ends_with(n, "ffn_up_exps.weight")) {
    return DType::Q5_0;
  }
  return DType::Q8_0;
}

// `path` with its matrices quantized (see the file comment).
Result<gguf::GgufFile> quantized_copy(const std::string& path) {
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(path));
  gguf::GgufWriter w;
  FOLIO_RETURN_IF_ERROR(copy_metadata(f, w));
  int index = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_bytes(t);
    const std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    const DType to = target_type(t, index++ % 2);
    if (to == DType::F32) {
      FOLIO_RETURN_IF_ERROR(
          w.add_tensor(t.name, t.type_id, shape, std::vector<uint8_t>(bytes.begin(), bytes.end())));
      continue;
    }
    const int64_t k = t.ne[0], rows = t.nelements() / k;
    std::vector<uint8_t> q(row_size(to, k) * static_cast<size_t>(rows));
    const float* src = reinterpret_cast<const float*>(bytes.data());
    for (int64_t r = 0; r < rows; ++r) {
      quant::quantize_row_ref(to, src + r * k, q.data() + r * row_size(to, k), k);
    }
    FOLIO_RETURN_IF_ERROR(w.add_tensor(t.name, to, shape, std::move(q)));
  }
  const std::vector<uint8_t> out = w.to_bytes();
  return gguf::GgufFile::parse(out);
}

struct Loaded {
  std::unique_ptr<Model> plain, packed;
};

Loaded load_both(const std::string& path) {
  Loaded l;
  Result<gguf::GgufFile> a = quantized_copy(path), b = quantized_copy(path);
  EXPECT_TRUE(a.ok() && b.ok()) << a.status().to_string();
  if (!a.ok() || !b.ok()) return l;
  Result<std::unique_ptr<Model>> plain = Model::from_gguf(std::move(a).value());
  LoadOptions lo;
  lo.buffer_types = cpu_weight_buffer_types(Isa::kAmx);
  Result<std::unique_ptr<Model>> packed = Model::from_gguf(std::move(b).value(), lo);
  EXPECT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_TRUE(packed.ok()) << packed.status().to_string();
  if (plain.ok()) l.plain = std::move(plain).value();
  if (packed.ok()) l.packed = std::move(packed).value();
  return l;
}

bool packing_available() {
  return cpu_weight_buffer_types(Isa::kAmx).size() > 1;
}

std::vector<std::string> model_paths() {
  return {local_refdata_dir() + "/tiny-gemma3-f32.gguf",
          shared_models_dir() + "/tiny-llama-f32.gguf",
          local_refdata_dir() + "/tiny-qwen3moe-f32.gguf"};
}


class PackedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(PackedModel, PlacementKeepsF32AndEmbeddingsPlain) {
  if (!packing_available()) GTEST_SKIP() << "hardware: no packed buffer types on this machine";
  if (!file_exists(GetParam())) FAIL() << "model missing: " << GetParam();
  Loaded l = load_both(GetParam());
  ASSERT_TRUE(l.packed != nullptr);
  int packed = 0;
  for (const TensorPlacement& p : l.packed->placements()) {
    const bool plain = p.type->name() == "CPU";
    if (p.dtype == DType::F32 || p.name == "token_embd.weight") {
      EXPECT_TRUE(plain && p.mapped) << p.name << " in " << p.type->name();
    } else {
      EXPECT_FALSE(plain) << p.name << " (" << dtype_name(p.dtype) << ") not packed";
      packed += plain ? 0 : 1;
    }
  }
  EXPECT_GT(packed, 0);
  // The weights kernels read carry the packed dtypes.
  const LayerWeights& l0 = l.packed->weights().layers[0];
  EXPECT_TRUE(is_packed(l0.wq.dtype));
  EXPECT_TRUE(is_packed(l.packed->weights().output.dtype));
  EXPECT_FALSE(is_packed(l.packed->weights().token_embd.dtype));
}

std::vector<std::vector<float>> run_logits(const Model& m, ForwardContext& ctx) {
  return prompt_and_decode_logits(m, ctx, layout_test_prompt(m.config().n_vocab));
}

TEST_P(PackedModel, LogitsMatchThePlainLoad) {
  if (!packing_available()) GTEST_SKIP() << "hardware: no packed buffer types on this machine";
  if (!file_exists(GetParam())) FAIL() << "model missing: " << GetParam();
  Loaded l = load_both(GetParam());
  ASSERT_TRUE(l.plain != nullptr && l.packed != nullptr);
  CpuBackend ref_backend(CpuBackendOptions{Isa::kScalar, true, nullptr});
  CpuBackend avx2_backend(CpuBackendOptions{Isa::kAvx2, false, nullptr});
  ForwardContext ref_ctx({&ref_backend}), avx2_ctx({&avx2_backend});
  auto ctx = ForwardContext::cpu(2);
  const auto ref = run_logits(*l.plain, ref_ctx);
  const auto plain = run_logits(*l.plain, *ctx);
  const auto plain_avx2 = run_logits(*l.plain, avx2_ctx);
  const auto packed = run_logits(*l.packed, *ctx);
  float scale = 0;
  for (const auto& r : ref) {
    for (float v : r) scale = std::max(scale, std::fabs(v));
  }
  // As accurate as the plain load against the double-precision reference
  // (both lose the same to 8-bit activations), and no further from the
  // plain AVX-512 kernels than the plain AVX2 kernels are (a different
  // float rounding order can flip one activation quant: tiny-gemma3 moves
  // by 3.7e-2 either way, the others by 1e-6).
  const float e_plain = worst_row_diff(plain, ref), e_packed = worst_row_diff(packed, ref);
  const float spread = worst_row_diff(plain_avx2, plain), d = worst_row_diff(packed, plain);
  EXPECT_LE(e_packed, 1.1f * e_plain + 1e-4f * scale) << "max |logit| " << scale;
  EXPECT_LE(d, std::max(2 * spread, 1e-4f * scale))
      << "packed vs plain " << d << ", plain avx2 vs avx512 " << spread;
}

TEST_P(PackedModel, BatchAndTokenByTokenGiveTheSameBits) {
  if (!packing_available()) GTEST_SKIP() << "hardware: no packed buffer types on this machine";
  if (!file_exists(GetParam())) FAIL() << "model missing: " << GetParam();
  Loaded l = load_both(GetParam());
  ASSERT_TRUE(l.packed != nullptr);
  const Model& m = *l.packed;
  const int64_t nv = m.config().n_vocab;
  const std::vector<int32_t> p = layout_test_prompt(nv);
  auto ctx = ForwardContext::cpu(2);
  auto batch_cache = m.make_cache({64, 1, DType::F32});
  auto step_cache = m.make_cache({64, 1, DType::F32});
  ASSERT_TRUE(batch_cache.ok() && step_cache.ok());
  Result<std::vector<float>> all = eval_all(m, **batch_cache, *ctx, p);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  for (size_t i = 0; i < p.size(); ++i) {
    Result<std::vector<float>> one = eval_one(m, **step_cache, *ctx, p[i]);
    ASSERT_TRUE(one.ok()) << one.status().to_string();
    EXPECT_EQ(0, std::memcmp(one->data(), all->data() + static_cast<int64_t>(i) * nv, nv * 4))
        << "position " << i;
  }
}

std::string path_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(info.param.find_last_of('/') + 1);
  return test_name(s.substr(0, s.find("-f32")));
}

INSTANTIATE_TEST_SUITE_P(Tiny, PackedModel, ::testing::ValuesIn(model_paths()), path_name);

}  // namespace
}  // namespace folio::model::testing
