// Loading errors name what is wrong: unknown architecture, missing required
// tensor or key, wrong shape, unsupported tensor type, impossible hparams.
// Files are built in memory with the GGUF writer (synthetic_model.h).
#include <gtest/gtest.h>

#include <cmath>

#include "model/model.h"
#include "synthetic_model.h"
#include "test_util.h"

namespace folio::model::testing {
namespace load_errors_test {

Status load(const SyntheticModel& s) {
  Result<gguf::GgufFile> f = s.build();
  if (!f.ok()) return f.status();
  Result<std::unique_ptr<Model>> m = Model::from_gguf(std::move(f).value());
  return m.ok() ? Status() : m.status();
}

// The synthetic llama file with its architecture and `llama.*` keys renamed.
SyntheticModel llama_as(const std::string& arch) {
  SyntheticModel s = SyntheticModel::llama();
  std::vector<std::pair<std::string, gguf::Value>> renamed;
  for (auto& [k, v] : s.metadata) {
    renamed.emplace_back(k.rfind("llama.", 0) == 0 ? arch + "." + k.substr(6) : k, v);
  }
  s.metadata = renamed;
  s.set("general.architecture", arch);
  return s;
}

#define EXPECT_LOAD_ERROR(model, want_code, text)                              \
  do {                                                                         \
    const Status st_ = load(model);                                            \
    EXPECT_EQ(st_.code(), want_code) << st_.to_string();                       \
    EXPECT_NE(st_.message().find(text), std::string::npos) << st_.to_string(); \
  } while (0)

TEST(ModelLoad, SyntheticModelLoadsAndRuns) {
  Result<gguf::GgufFile> f = SyntheticModel::llama().build();
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  Result<std::unique_ptr<Model>> m = Model::from_gguf(std::move(f).value());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_layer, 1);
  EXPECT_EQ(c.head_dim_k, 64);
  EXPECT_EQ(c.n_head_kv_of(0), 2);
  EXPECT_EQ(c.rope.mode, RopeMode::kNormal);
  auto ctx = ForwardContext::cpu(1);
  auto cache = (*m)->make_cache({16, 1, DType::F32});
  ASSERT_TRUE(cache.ok());
  Result<std::vector<float>> logits = eval_all(**m, **cache, *ctx, {1, 2, 3});
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  EXPECT_EQ(logits->size(), 3u * 64u);
  for (float v : *logits) ASSERT_TRUE(std::isfinite(v));
}

TEST(ModelLoad, UnknownArchitecture) {
  SyntheticModel s = SyntheticModel::llama();
  s.set("general.architecture", "mamba9");
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported, "unknown architecture 'mamba9'");
}

TEST(ModelLoad, MissingArchitectureKey) {
  SyntheticModel s = SyntheticModel::llama();
  s.erase_key("general.architecture");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "general.architecture");
}

TEST(ModelLoad, MissingRequiredTensor) {
  SyntheticModel s = SyntheticModel::llama();
  s.erase_tensor("blk.0.attn_k.weight");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "missing required tensor 'blk.0.attn_k.weight'");
}

TEST(ModelLoad, MissingOutputFallsBackToTiedEmbeddings) {
  SyntheticModel s = SyntheticModel::llama();
  s.erase_tensor("output.weight");
  Result<gguf::GgufFile> f = s.build();
  ASSERT_TRUE(f.ok());
  Result<std::unique_ptr<Model>> m = Model::from_gguf(std::move(f).value());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->weights().output.data, (*m)->weights().token_embd.data);
}

TEST(ModelLoad, WrongTensorShape) {
  SyntheticModel s = SyntheticModel::llama();
  s.tensor("blk.0.attn_q.weight").shape = {256, 128};
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument,
                    "tensor 'blk.0.attn_q.weight' has shape [256, 128], expected [256, 256]");
}

TEST(ModelLoad, UnsupportedTensorType) {
  SyntheticModel s = SyntheticModel::llama();
  s.tensor("blk.0.ffn_up.weight").type = DType::IQ2_XXS;
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported,
                    "unsupported tensor type iq2_xxs for tensor 'blk.0.ffn_up.weight'");
}

TEST(ModelLoad, NormWeightMustBeF32) {
  SyntheticModel s = SyntheticModel::llama();
  s.tensor("blk.0.ffn_norm.weight").type = DType::F16;
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported,
                    "tensor 'blk.0.ffn_norm.weight' has type f16, expected f32");
}

TEST(ModelLoad, MissingRequiredHparam) {
  SyntheticModel s = SyntheticModel::llama();
  s.erase_key("llama.attention.head_count");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "missing required key 'llama.attention.head_count'");
  s = SyntheticModel::llama();
  s.erase_key("llama.attention.layer_norm_rms_epsilon");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "llama.attention.layer_norm_rms_epsilon");
  s = SyntheticModel::llama();
  s.erase_key("llama.embedding_length");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "llama.embedding_length");
}

TEST(ModelLoad, ImpossibleHparams) {
  SyntheticModel s = SyntheticModel::llama();
  s.set("llama.attention.head_count_kv", uint32_t{3});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "llama.attention.head_count_kv' = 3");
  s = SyntheticModel::llama();
  s.set("llama.rope.dimension_count", uint32_t{63});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "rope dims 63");
  s = SyntheticModel::llama();
  s.set("llama.block_count", uint32_t{0});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "llama.block_count = 0");
  s = SyntheticModel::llama();
  s.set("llama.attention.head_count", gguf::Array::of(std::vector<uint32_t>{4, 4}));
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "has 2 values, expected one per layer (1)");
  s = SyntheticModel::llama();
  s.set("llama.rope.scaling.type", "longrope");
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported, "rope scaling type 'longrope'");
  s = SyntheticModel::llama();
  s.set("llama.attention.layer_norm_rms_epsilon", -1.0f);
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "layer_norm_rms_epsilon");
  s = SyntheticModel::llama();
  s.set("llama.attention.head_count", "four");
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "llama.attention.head_count");
}

TEST(ModelLoad, Qwen2NeedsItsBiases) {
  SyntheticModel s = llama_as("qwen2");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "missing required tensor 'blk.0.attn_q.bias'");
}

// gpt-oss requires experts, a sliding window and its biases and sinks.
TEST(ModelLoad, GptOssNeedsExpertsWindowBiasesAndSinks) {
  SyntheticModel s = llama_as("gpt-oss");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "missing required key 'gpt-oss.expert_count'");
  s.set("gpt-oss.expert_count", uint32_t{4});
  s.set("gpt-oss.expert_used_count", uint32_t{2});
  s.set("gpt-oss.expert_feed_forward_length", uint32_t{32});
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound,
                    "missing required key 'gpt-oss.attention.sliding_window'");
  s.set("gpt-oss.attention.sliding_window", uint32_t{0});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument,
                    "'gpt-oss.attention.sliding_window' must be positive");
  s.set("gpt-oss.attention.sliding_window", uint32_t{8});
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "missing required tensor 'blk.0.attn_output.bias'");
}

// The released layout, read from the tiny file: layer 0 slides, layer 1 is
// global, both with the same (YaRN) rope scaling.
TEST(ModelLoad, GptOssTraits) {
  Result<std::unique_ptr<Model>> m = Model::load(local_refdata_dir() + "/tiny-gpt-oss-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  EXPECT_TRUE(c.attn_sinks);
  EXPECT_TRUE(c.moe.biases);
  EXPECT_EQ(c.moe.gating, ExpertGating::kSoftmaxWeight);
  EXPECT_EQ(c.ffn_glu, GluKind::kSwiGluOai);
  EXPECT_EQ(c.n_swa, 16);
  EXPECT_TRUE(c.is_swa(0));
  EXPECT_FALSE(c.is_swa(1));
  EXPECT_EQ(c.rope.scaling, RopeScaling::kYarn);
  EXPECT_EQ(c.rope_params(0).freq_scale, c.rope_params(1).freq_scale);
  EXPECT_FLOAT_EQ(c.rope_params(0).freq_scale, 1.0f / 32.0f);
  EXPECT_EQ(c.rope_params(0).freq_base, c.rope_params(1).freq_base);
  EXPECT_FLOAT_EQ(c.kq_scale(), 0.125f);
  EXPECT_FALSE((*m)->weights().layers[1].attn_sinks.empty());
  EXPECT_FALSE((*m)->weights().layers[1].ffn_down_exps_b.empty());
}

// glm4moe requires experts and the shared-expert count; expert groups must
// split the experts and name how many groups are used.
TEST(ModelLoad, Glm4MoeNeedsExpertsAndValidGroups) {
  SyntheticModel s = llama_as("glm4moe");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'glm4moe.expert_count'");
  s.set("glm4moe.expert_count", uint32_t{4});
  s.set("glm4moe.expert_used_count", uint32_t{2});
  s.set("glm4moe.expert_feed_forward_length", uint32_t{32});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "'glm4moe.expert_shared_count'");
  s.set("glm4moe.expert_shared_count", uint32_t{1});
  s.set("glm4moe.expert_group_count", uint32_t{3});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "do not split into");
  s.set("glm4moe.expert_group_count", uint32_t{2});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "'glm4moe.expert_group_used_count' = 0");
  s.set("glm4moe.expert_group_used_count", uint32_t{2});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "'glm4moe.expert_group_used_count' = 2");
}

// deepseek2 reads its latent-attention keys as llama.cpp does (q_lora_rank
// required unless the layer count says "lite"; files from before the split
// attn_k_b / attn_v_b refused) and the latent row must be kv_lora_rank +
// rope dims with V its first kv_lora_rank values.
TEST(ModelLoad, Deepseek2LatentAttentionKeys) {
  SyntheticModel s = llama_as("deepseek2");  // head dim 64, rope dims 64
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'deepseek2.attention.kv_lora_rank'");
  s.set("deepseek2.attention.kv_lora_rank", uint32_t{32});
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'deepseek2.attention.q_lora_rank'");
  s.set("deepseek2.attention.q_lora_rank", uint32_t{32});
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported, "joint attn_kv_b");
  s.set("deepseek2.attention.key_length_mla", uint32_t{48});
  s.set("deepseek2.attention.value_length_mla", uint32_t{16});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "'deepseek2.attention.key_length_mla' = 48");
  s.set("deepseek2.rope.dimension_count", uint32_t{32});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "(the latent row)");  // V 64 != 32
  s.set("deepseek2.attention.value_length", uint32_t{32});
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'deepseek2.expert_feed_forward_length'");
}

// The tiny file: the MTP block is dropped, layer 0 is dense, routing and the
// shared expert as GLM-4.5's.
TEST(ModelLoad, Glm4MoeTraits) {
  Result<std::unique_ptr<Model>> m = Model::load(local_refdata_dir() + "/tiny-glm4moe-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_FALSE(c.is_moe(0));
  EXPECT_TRUE(c.is_moe(1));
  EXPECT_EQ(c.moe.gating, ExpertGating::kSigmoid);
  EXPECT_TRUE(c.moe.selection_bias);
  EXPECT_TRUE(c.moe.norm_weights);
  EXPECT_FLOAT_EQ(c.moe.weights_scale, 2.5f);
  EXPECT_EQ(c.n_ff_shexp, 64);
  EXPECT_FALSE(c.shexp_gated);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.rope.n_dims, 16);
  const auto& layers = (*m)->weights().layers;
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_FALSE(layers[0].ffn_gate.empty());
  EXPECT_TRUE(layers[0].ffn_gate_inp.empty());
  EXPECT_FALSE(layers[1].ffn_exp_probs_b.empty());
  EXPECT_TRUE(layers[1].ffn_gate_inp_shexp.empty());
  EXPECT_FALSE(layers[1].bq.empty());
}

// nemotron_h: one block per layer by the per-layer keys ("M-M*M-"), the
// RMS norms on attention.layer_norm_epsilon (the only epsilon key of the
// file), no rope, relu^2 FFNs; the FFN layers hold nothing in the cache.
TEST(ModelLoad, NemotronHLayerKinds) {
  Result<std::unique_ptr<Model>> m = Model::load(local_refdata_dir() + "/tiny-nemotron-h-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 6);
  const std::string pattern = "M-M*M-";
  for (int l = 0; l < c.n_layer; ++l) {
    const char kind = pattern[static_cast<size_t>(l)];
    EXPECT_EQ(c.is_recurrent(l), kind == 'M') << l;
    EXPECT_EQ(c.has_attention(l), kind == '*') << l;
    EXPECT_EQ(c.has_ffn(l), kind == '-') << l;
    const cache::LayerGeometry g = c.cache_geometry().layers[static_cast<size_t>(l)];
    EXPECT_EQ(g.stateless, kind == '-') << l;
    EXPECT_EQ(g.recurrent, kind == 'M') << l;
  }
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FALSE(c.attn_rope);
  EXPECT_TRUE(c.ffn_relu_sqr);
  EXPECT_EQ(c.cache_geometry().attention_shapes().size(), 1u);
  const auto& layers = (*m)->weights().layers;
  EXPECT_TRUE(layers[1].ffn_gate.empty());
  EXPECT_FALSE(layers[1].ffn_up_b.empty());
  EXPECT_TRUE(layers[5].ffn_up_b.empty());
  EXPECT_TRUE(layers[1].ffn_norm.empty());
  EXPECT_TRUE(layers[3].ffn_up.empty());
}

// nemotron_h_moe: the RMS epsilon key wins over layer_norm_epsilon; sigmoid
// routing with the selection bias, weights renormalised and scaled; latent
// experts without a gate; an ungated shared expert.
TEST(ModelLoad, NemotronHMoeTraits) {
  Result<std::unique_ptr<Model>> m =
      Model::load(local_refdata_dir() + "/tiny-nemotron-h-moe-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_TRUE(c.is_moe(1));
  EXPECT_FALSE(c.is_moe(0));
  EXPECT_FALSE(c.is_moe(2));
  EXPECT_EQ(c.moe.gating, ExpertGating::kSigmoid);
  EXPECT_TRUE(c.moe.selection_bias);
  EXPECT_TRUE(c.moe.norm_weights);
  EXPECT_FLOAT_EQ(c.moe.weights_scale, 2.5f);
  EXPECT_EQ(c.moe.n_ff_exp, 64);
  EXPECT_EQ(c.moe_latent, 64);
  EXPECT_EQ(c.n_ff_shexp, 96);
  EXPECT_FALSE(c.shexp_gated);
  const LayerWeights& l = (*m)->weights().layers[1];
  EXPECT_TRUE(l.ffn_gate_exps.empty());
  EXPECT_TRUE(l.ffn_gate_shexp.empty());
  EXPECT_EQ(l.ffn_up_exps.ne[0], 64);
  EXPECT_FALSE(l.ffn_latent_down.empty());
}

// nemotron_h requires its epsilon key and its Mamba-2 keys; a nemotron_h_moe
// file without expert_count is a dense one.
TEST(ModelLoad, NemotronHNeedsItsKeys) {
  SyntheticModel s = llama_as("nemotron_h_moe");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'nemotron_h_moe.attention.layer_norm_epsilon'");
  s.set("nemotron_h_moe.attention.layer_norm_epsilon", 1e-5f);
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'nemotron_h_moe.ssm.conv_kernel'");
  for (const char* k : {"ssm.conv_kernel", "ssm.state_size", "ssm.group_count"}) {
    s.set(std::string("nemotron_h_moe.") + k, uint32_t{4});
  }
  s.set("nemotron_h_moe.ssm.inner_size", uint32_t{64});
  s.set("nemotron_h_moe.ssm.time_step_rank", uint32_t{3});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "is not a multiple of");
  s.set("nemotron_h_moe.ssm.time_step_rank", uint32_t{4});
  // Without expert_count the file reads as a dense one, as llama.cpp reads
  // it (llama.cpp's own saver writes such nemotron_h_moe files): the llama
  // layer's FFN tensors serve its FFN.
  EXPECT_TRUE(load(s).ok()) << load(s).to_string();
}

// gemma4's mixture of experts: every layer routed (a layer without its
// router is refused by name), k within the expert count.
TEST(ModelLoad, Gemma4MoeNeedsARouterInEveryLayer) {
  Result<SyntheticModel> base = SyntheticModel::from_file(local_refdata_dir() +
                                                          "/tiny-gemma4-moe-f32.gguf");
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  EXPECT_TRUE(load(*base).ok()) << load(*base).to_string();
  SyntheticModel s = *base;
  s.erase_tensor("blk.1.ffn_gate_inp.weight");
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported, "layer 1 has no ffn_gate_inp.weight");
  s = *base;
  s.set("gemma4.expert_used_count", uint32_t{5});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "gemma4.expert_used_count = 5 are inconsistent");
  s = *base;
  s.erase_tensor("blk.2.ffn_down_exps.scale");  // optional: the experts' outputs unscaled
  EXPECT_TRUE(load(s).ok()) << load(s).to_string();
}

// nemotron_h: an FFN layer needs its up and down projections, an attention
// layer its projections; per-layer keys that disagree with the tensors (every
// layer declared an FFN) name the first missing tensor.
TEST(ModelLoad, NemotronHLayersNeedTheirTensors) {
  Result<SyntheticModel> base =
      SyntheticModel::from_file(local_refdata_dir() + "/tiny-nemotron-h-f32.gguf");
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  EXPECT_TRUE(load(*base).ok()) << load(*base).to_string();
  SyntheticModel s = *base;
  s.erase_tensor("blk.5.ffn_down.weight");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "blk.5.ffn_down.weight");
  s = *base;
  s.erase_tensor("blk.3.attn_k.weight");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "blk.3.attn_k.weight");
  s = *base;
  s.set("nemotron_h.feed_forward_length", uint32_t{192});  // every layer an FFN alone
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'blk.0.ffn_up.weight'");
}

TEST(ModelLoad, UnreadableFileNamesThePath) {
  Result<std::unique_ptr<Model>> m = Model::load("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos)
      << m.status().to_string();
}

// Values llama.cpp's own saver writes (tests/model/refdata/llama-archs holds
// whole files; these edit the refdata's models one key at a time):
// expert_gating_func 0 is "not set" (the family's gating), a per-layer
// head_count of 0 is a layer without attention, and keys llama.cpp reads
// only for other families change nothing.
TEST(ModelLoad, ReadsKeysAsLlamaCppDoes) {
  for (const char* name : {"tiny-phi3", "tiny-gpt-oss", "tiny-mistral3", "tiny-glm4moe"}) {
    Result<SyntheticModel> base =
        SyntheticModel::from_file(local_refdata_dir() + "/" + name + "-f32.gguf");
    ASSERT_TRUE(base.ok()) << base.status().to_string();
    SyntheticModel s = *base;
    std::string arch;
    for (const auto& [k, v] : s.metadata) {
      if (k == "general.architecture") if (v.string() != nullptr) arch = *v.string();
    }
    s.set(arch + ".expert_gating_func", uint32_t{0});
    s.set(arch + ".final_logit_softcapping", 30.0f);
    s.set(arch + ".rope.scaling.yarn_ext_factor", -1.0f);
    EXPECT_TRUE(load(s).ok()) << name << ": " << load(s).to_string();
  }
  Result<SyntheticModel> granite =
      SyntheticModel::from_file(local_refdata_dir() + "/tiny-granitehybrid-f32.gguf");
  ASSERT_TRUE(granite.ok()) << granite.status().to_string();
  Result<gguf::GgufFile> f = granite->build();
  ASSERT_TRUE(f.ok());
  Result<std::vector<int64_t>> kv = f->get_int_array("granitehybrid.attention.head_count_kv");
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  std::vector<uint32_t> heads;
  Result<int64_t> h = f->get_i64("granitehybrid.attention.head_count");
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  for (int64_t x : *kv) heads.push_back(x == 0 ? 0u : static_cast<uint32_t>(*h));
  SyntheticModel s = *granite;
  s.set("granitehybrid.attention.head_count", gguf::Array::of(heads));
  Result<ModelConfig> cfg = ModelConfig::from_gguf(*s.build());
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  for (size_t l = 0; l < heads.size(); ++l) {
    EXPECT_EQ(cfg->is_recurrent(static_cast<int>(l)), heads[l] == 0) << "layer " << l;
  }
}

// A gated expert_gating_func (lfm2moe reads it, with no default): 0 is
// refused there, naming the key; an unknown value too.
TEST(ModelLoad, ExpertGatingWithoutDefaultMustBeSet) {
  Result<SyntheticModel> base =
      SyntheticModel::from_file(local_refdata_dir() + "/tiny-lfm2moe-f32.gguf");
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  SyntheticModel s = *base;
  s.set("lfm2moe.expert_gating_func", uint32_t{0});
  EXPECT_LOAD_ERROR(s, StatusCode::kInvalidArgument, "lfm2moe.expert_gating_func' = 0");
  s.set("lfm2moe.expert_gating_func", uint32_t{7});
  EXPECT_LOAD_ERROR(s, StatusCode::kUnsupported, "lfm2moe.expert_gating_func' = 7");
  s.erase_key("lfm2moe.expert_gating_func");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "lfm2moe.expert_gating_func");
}

// A tensor llama.cpp would apply and folio does not read (a per-tensor scale,
// an FFN bias, an LM-head bias where the family has none) is refused by name
// rather than silently left out of the computation.
TEST(ModelLoad, RefusesTensorsLlamaCppWouldApply) {
  SyntheticModel s = SyntheticModel::llama();
  ASSERT_TRUE(load(s).ok()) << load(s).to_string();
  for (const char* name : {"blk.0.attn_q.scale", "blk.0.ffn_up.bias", "output.bias"}) {
    SyntheticModel t = s;
    t.tensors.push_back({name, DType::F32, {name[0] == 'o' ? int64_t{64} : int64_t{1}}});
    EXPECT_LOAD_ERROR(t, StatusCode::kUnsupported, std::string("'") + name + "'");
  }
}

// hunyuan-dense: q/k norms after the rope, neox rope; rope.scaling.alpha
// raises the base to base * alpha^(D / (D - 2)) as llama.cpp does at load;
// expert_count <= 1 is a dense model.
TEST(ModelLoad, HunyuanDenseKeys) {
  SyntheticModel s = llama_as("hunyuan-dense");  // head dim 64, base 10000
  Result<ModelConfig> c = ModelConfig::from_gguf(*s.build());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope.mode, RopeMode::kNeox);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_TRUE(c->qk_norm_after_rope);
  EXPECT_FLOAT_EQ(c->rope.freq_base, 10000.0f);
  s.set("hunyuan-dense.rope.scaling.alpha", 1000.0f);
  s.set("hunyuan-dense.expert_count", uint32_t{1});
  c = ModelConfig::from_gguf(*s.build());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FLOAT_EQ(c->rope.freq_base, 10000.0f * std::pow(1000.0f, 64.0f / 62.0f));
  EXPECT_EQ(c->moe.n_expert, 0);
  s.set("hunyuan-dense.rope.scaling.alpha", -1.0f);
  c = ModelConfig::from_gguf(*s.build());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().to_string();
  EXPECT_NE(c.status().message().find("'hunyuan-dense.rope.scaling.alpha'"), std::string::npos);
}

// ernie4_5-moe reads its keys as llama.cpp: expert width and
// interleave_moe_layer_step required; a layer after the leading dense ones
// that the step leaves unrouted has no FFN weights in llama.cpp, so the
// file is refused; softmax routing, renormalised weights, ungated shared
// expert, adjacent-pair rope. ernie4_5 ignores the expert keys.
TEST(ModelLoad, Ernie45MoeKeys) {
  SyntheticModel s = llama_as("ernie4_5-moe");
  s.set("ernie4_5-moe.block_count", uint32_t{2});
  s.set("ernie4_5-moe.expert_count", uint32_t{4});
  s.set("ernie4_5-moe.expert_used_count", uint32_t{2});
  auto cfg = [&s] { return ModelConfig::from_gguf(*s.build()); };
  Result<ModelConfig> c = cfg();
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound) << c.status().to_string();
  EXPECT_NE(c.status().message().find("'ernie4_5-moe.expert_feed_forward_length'"),
            std::string::npos);
  s.set("ernie4_5-moe.expert_feed_forward_length", uint32_t{32});
  c = cfg();
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound) << c.status().to_string();
  EXPECT_NE(c.status().message().find("'ernie4_5-moe.interleave_moe_layer_step'"),
            std::string::npos);
  s.set("ernie4_5-moe.interleave_moe_layer_step", uint32_t{2});
  c = cfg();  // layer 0 would be an unrouted layer without dense weights
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported) << c.status().to_string();
  EXPECT_NE(c.status().message().find("layer 0"), std::string::npos);
  s.set("ernie4_5-moe.leading_dense_block_count", uint32_t{1});
  c = cfg();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->is_moe(0));
  EXPECT_TRUE(c->is_moe(1));
  EXPECT_EQ(c->rope.mode, RopeMode::kNormal);
  EXPECT_EQ(c->moe.gating, ExpertGating::kSoftmax);
  EXPECT_TRUE(c->moe.norm_weights);
  EXPECT_FLOAT_EQ(c->moe.weights_scale, 1.0f);
  EXPECT_EQ(c->n_ff_shexp, 0);
  EXPECT_FALSE(c->shexp_gated);
  EXPECT_EQ(c->out_bias, BiasMode::kIgnored);

  SyntheticModel d = s;
  std::vector<std::pair<std::string, gguf::Value>> renamed;
  for (auto& [k, v] : d.metadata) {
    renamed.emplace_back(k.rfind("ernie4_5-moe.", 0) == 0 ? "ernie4_5." + k.substr(13) : k, v);
  }
  d.metadata = renamed;
  d.set("general.architecture", "ernie4_5");
  c = ModelConfig::from_gguf(*d.build());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->is_moe(1));
}

// qwen3vl needs rope.dimension_sections and ropes with the interleaved
// multi-section mode (text: positions t, h, w = the token's, e = 0).
TEST(ModelLoad, Qwen3vlNeedsRopeSections) {
  SyntheticModel s = llama_as("qwen3vl");
  Result<ModelConfig> c = ModelConfig::from_gguf(*s.build());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound) << c.status().to_string();
  EXPECT_NE(c.status().message().find("'qwen3vl.rope.dimension_sections'"), std::string::npos);
  s.set("qwen3vl.rope.dimension_sections", gguf::Array::of(std::vector<int32_t>{8, 8, 8, 8}));
  c = ModelConfig::from_gguf(*s.build());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope.mode, RopeMode::kImrope);
  EXPECT_EQ(c->rope.sections, (std::array<int, 4>{8, 8, 8, 8}));
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->qk_norm_after_rope);
}

// falcon-h1: every layer recurrent and attending (K/V and state in the
// cache), its pre-FFN norm named blk.N.ffn_norm without ".weight", ssm_norm
// optional, rope_freqs and attn_output.bias loaded by llama.cpp and unused
// by its graph (so by folio's); the Mamba-2 keys required.
TEST(ModelLoad, FalconH1Traits) {
  const std::string path = local_refdata_dir() + "/llama-archs/falcon-h1-dense.gguf";
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 2);
  for (int l = 0; l < c.n_layer; ++l) {
    EXPECT_TRUE(c.is_recurrent(l)) << l;
    EXPECT_TRUE(c.has_attention(l)) << l;
    EXPECT_TRUE(c.has_ffn(l)) << l;
    const cache::LayerGeometry g = c.cache_geometry().layers[static_cast<size_t>(l)];
    EXPECT_TRUE(g.recurrent && g.with_kv) << l;
  }
  EXPECT_EQ(c.cache_geometry().attention_shapes().size(), 2u);
  EXPECT_EQ(c.rope.mode, RopeMode::kNeox);
  const ModelWeights& w = (*m)->weights();
  EXPECT_TRUE(w.rope_freqs.empty());
  EXPECT_TRUE(w.layers[0].bo.empty());
  EXPECT_FALSE(w.layers[0].bo_ignored.empty());
  EXPECT_FALSE(w.layers[0].bq.empty());
  EXPECT_FALSE(w.layers[1].ffn_norm.empty());
  EXPECT_FALSE(w.layers[1].ssm_norm.empty());

  Result<SyntheticModel> base = SyntheticModel::from_file(path);
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  SyntheticModel s = *base;
  s.erase_tensor("blk.1.ssm_norm.weight");  // optional
  EXPECT_TRUE(load(s).ok()) << load(s).to_string();
  s.tensor("blk.1.ffn_norm").name = "blk.1.ffn_norm.weight";  // not the name llama.cpp reads
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "blk.1.ffn_norm");
  s = *base;
  s.erase_key("falcon-h1.ssm.group_count");
  EXPECT_LOAD_ERROR(s, StatusCode::kNotFound, "'falcon-h1.ssm.group_count'");
}

}  // namespace
}  // namespace folio::model::testing
