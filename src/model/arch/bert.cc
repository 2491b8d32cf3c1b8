// bert and nomic-bert: the encoder (embedding) families, as llama.cpp names
// and converts them (convert_hf_to_gguf.py: BertModel, NomicBertModel).
//
//   bert        learned absolute positions (position_embd), q/k/v and output
//               projections with biases, FFN up/down with biases and GELU
//               (BERT, MiniLM, bge, e5, gte, ... and RoBERTa with a BPE vocab);
//   nomic-bert  rope (neox pairs) instead of learned positions, one fused
//               attn_qkv without biases, SwiGLU FFN without biases.
//
// Both: token-type embeddings (segment 0 is added to every token), layer
// norms with biases (attention.layer_norm_epsilon) after each residual, no
// LM head. attention.causal is required (false in every converted file);
// pooling_type says how the Embedder (engine/embedder.h) pools the final
// hidden states: optional for bert (default none), required for nomic-bert,
// as in llama.cpp. rank (a reranker's classification head) is refused.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/config.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

// The keys both families read.
Status configure_encoder(const gguf::GgufFile& file, ModelConfig& c, bool pooling_required) {
  const std::string causal_key = arch_key(c, "attention.causal");
  if (!file.has(causal_key)) return not_found("model: missing required key '{}'", causal_key);
  Result<bool> causal = file.get_bool(causal_key);
  if (!causal.ok()) return invalid_argument("model: key '{}': {}", causal_key, causal.status().message());
  c.causal_attn = *causal;

  const std::string pooling_key = arch_key(c, "pooling_type");
  c.pooling = PoolingType::kNone;
  if (file.has(pooling_key)) {
    Result<int64_t> p = file.get_i64(pooling_key);
    if (!p.ok()) return invalid_argument("model: key '{}': {}", pooling_key, p.status().message());
    if (*p < 0 || *p > static_cast<int64_t>(PoolingType::kRank)) {
      return invalid_argument(
          "model: key '{}' = {} is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)",
          pooling_key, *p);
    }
    c.pooling = static_cast<PoolingType>(*p);
    if (c.pooling == PoolingType::kRank) {
      return unsupported(
          "model: key '{}' = 4 (rank: a reranker's classification head) is not supported; "
          "folio computes embeddings with pooling none, mean, cls or last",
          pooling_key);
    }
  } else if (pooling_required) {
    return not_found("model: missing required key '{}'", pooling_key);
  }

  constexpr char kTypesKey[] = "tokenizer.ggml.token_type_count";
  if (!file.has(kTypesKey)) {
    return not_found("model: missing required key '{}' (rows of token_types.weight)", kTypesKey);
  }
  Result<int64_t> types = file.get_i64(kTypesKey);
  if (!types.ok()) return invalid_argument("model: key '{}': {}", kTypesKey, types.status().message());
  if (*types < 1 || *types > (1 << 16)) {
    return invalid_argument("model: key '{}' = {} is out of range [1, 65536]", kTypesKey, *types);
  }
  c.n_token_types = *types;
  if (c.head_dim_k != c.head_dim_v) {
    return invalid_argument("model: {} needs equal key and value head dims ({} / {})", c.arch,
                            c.head_dim_k, c.head_dim_v);
  }
  return Status();
}

Status configure_bert(const gguf::GgufFile& file, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_encoder(file, c, /*pooling_required=*/false));
  c.learned_pos = true;
  c.qkv_bias = BiasMode::kRequired;
  c.out_bias = BiasMode::kRequired;
  c.ffn_gated = false;
  return Status();
}

Status configure_nomic_bert(const gguf::GgufFile& file, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_encoder(file, c, /*pooling_required=*/true));
  c.rope.mode = RopeMode::kNeox;
  c.fused_qkv = true;
  c.ffn_gated = true;
  c.ffn_glu = GluKind::kSwiGlu;
  return Status();
}

constexpr ArchFamily kBert[] = {
    {"bert", configure_bert, post_norm_encoder, /*encoder=*/true},
    {"nomic-bert", configure_nomic_bert, post_norm_encoder, /*encoder=*/true},
};

}  // namespace

std::span<const ArchFamily> bert_archs() {
  return kBert;
}

}  // namespace folio::model
