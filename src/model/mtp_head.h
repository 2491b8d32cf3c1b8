// MtpHead: one MTP (next-token-prediction, `nextn`) block of a model that
// carries them (qwen35, qwen35moe, qwen3next, glm4moe files with
// nextn_predict_layers > 0, loaded with LoadOptions::load_mtp), run as a
// small model of its own beside the target (llama.cpp's
// LLM_GRAPH_TYPE_DECODER_MTP). For a token x at position p and a hidden
// state h (the target's final hidden state after output_norm at p - 1,
// model/hidden_states.h, or the head's own output at p - 1 when drafts
// chain):
//   e = embed_tokens[x] (the block's nextn.embed_tokens, else token_embd)
//   y = eh_proj [rms_norm(e) * enorm ; rms_norm(h) * hnorm]     [2 E] -> [E]
//   y = the block's decoder layer (ArchFamily::mtp_layer: attention over
//       the head's own K/V cache of earlier positions, then the FFN)
//   g = rms_norm(y) * (shared_head_norm, else output_norm)
//   logits = (shared_head_head, else output) g: the guess for position p + 1;
//   g is the hidden state the next chained position takes.
// Position 0 has no previous state: h = 0 there (as llama.cpp's).
// The head's K/V cache (make_cache) holds one attention layer per position
// of each sequence, like the target's caches (paged or contiguous).
#pragma once

#include <memory>
#include <span>

#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "core/status.h"
#include "model/config.h"
#include "model/forward_context.h"
#include "model/weights.h"

namespace folio::model {

class Model;

class MtpHead {
 public:
  // Block `block` of `model` (borrowed: it must outlive the head).
  // kInvalidArgument when the model has no loaded MTP blocks (naming why).
  static Result<std::unique_ptr<MtpHead>> create(const Model& model, int block = 0);

  const ModelConfig& config() const { return cfg_; }  // the block as a one-layer model
  int64_t n_embd() const { return cfg_.n_embd; }
  int64_t n_vocab() const { return cfg_.n_vocab; }
  // A K/V cache for the head (one attention layer).
  Result<std::unique_ptr<cache::KvCache>> make_cache(const cache::KvCacheOptions& options) const;

  struct Output {
    TensorView logits;  // F32 [n_vocab, n_out] of the flagged rows, in batch order (host)
    TensorView hidden;  // F32 [E, n_out] their g (host)
  };
  // Runs `batch` (its tokens at its positions in the head's `cache`) with
  // `hidden` F32 [E, batch.size()] row-major: row i is the state paired with
  // token i. The views live in ctx's arena until its next forward. The
  // cache's plan is applied only on success.
  Result<Output> forward(const cache::Batch& batch, std::span<const float> hidden,
                         cache::KvCache& cache, ForwardContext& ctx) const;

 private:
  MtpHead() = default;
  ModelConfig cfg_;   // the block as a one-layer model (ModelConfig::mtp_block_config)
  ModelWeights w_;    // the model's globals, layers = {the block's layer}
  MtpWeights m_;      // the block's projection and head
  TensorView head_norm_;  // [E] shared_head_norm or output_norm
  TensorView head_;       // [E, n_vocab] shared_head_head or output
  TensorView embed_;      // [E, n_vocab] embed_tokens or token_embd
};

}  // namespace folio::model
