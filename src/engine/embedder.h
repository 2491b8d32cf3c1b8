// Embedder: embedding vectors of token sequences with an embedding model
// (an encoder family: bert, nomic-bert; model::ModelConfig::is_embedding),
// for the server's /v1/embeddings and `folio`'s tools.
//
//   inputs (token ids) --whole sequences packed into forwards of at most
//   max_batch_tokens (Model::embed)--> final hidden states of the output
//   rows --pooling--> [normalisation] --> one vector per input
//
// Each input is its own sequence: with the model's non-causal attention a
// token sees every token of its input and none of the other inputs', so a
// vector does not depend on what else was in the call (up to float
// rounding). Pooling (EmbedderOptions::pooling, else the model's
// pooling_type): mean of the token vectors, the first token's ([CLS]), the
// last token's, or none (every token's vector). Normalisation is L2 (what
// llama-server's /v1/embeddings returns); an all-zero vector stays zero.
//
// K/V live in a paged cache the Embedder owns, without prefix caching (an
// encoder's K/V depend on the tokens after them, so a shared prefix's K/V
// are not reusable), grown when a forward needs more blocks and emptied
// after every forward.
//
// Thread safety: embed() may be called from any number of threads; an
// internal mutex runs one call at a time (each call's forwards then use
// every thread of the Embedder's context). For calls to run in parallel,
// create several Embedders over the same Model (a Model is immutable and
// shared). tokenize() and the accessors are const and lock-free.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "core/status.h"
#include "model/config.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace folio {

struct EmbedderOptions {
  // Pooling; unset: the model's pooling_type. kRank is refused (kUnsupported).
  std::optional<model::PoolingType> pooling;
  // Tokens per forward: inputs are packed whole, in order, into forwards of
  // at most this many tokens; a longer input runs alone.
  int64_t max_batch_tokens = 2048;
  // CPU threads of the Embedder's forward context.
  int n_threads = 1;
  // A device backend (borrowed; must outlive the Embedder) whose memory
  // holds offloaded weights (model::LoadOptions::offload_type); nullptr: CPU.
  Backend* device = nullptr;
};

class Embedder {
 public:
  // `model` and `tokenizer` are borrowed and must outlive the Embedder.
  // kUnsupported: not an embedding model, or rank pooling; kInvalidArgument:
  // max_batch_tokens or n_threads below 1.
  static Result<std::unique_ptr<Embedder>> create(const model::Model& model,
                                                  const tokenizer::Tokenizer& tokenizer,
                                                  const EmbedderOptions& options = {});
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  // The tokens of `text` as the model's embedding input: special tokens
  // added ([CLS] ... [SEP] for WordPiece) and special-token texts parsed, as
  // llama.cpp's embedding tools tokenize.
  std::vector<int32_t> tokenize(std::string_view text) const;

  // One vector per input, in input order: n_embd() floats (pooling none:
  // n_embd() per token of the input, token after token), each L2-normalised
  // when `normalize` (pooling none: each token's vector on its own). Every
  // input is checked before anything runs: no inputs or an empty input:
  // kInvalidArgument; an input longer than the model's training context
  // (n_ctx_train()): kOutOfRange; a token id outside the vocabulary:
  // kInvalidArgument. Each error names the input's index. On success
  // *n_prompt_tokens (when given) receives the tokens processed (the sum of
  // the inputs' lengths, the usage's prompt_tokens).
  Result<std::vector<std::vector<float>>> embed(const std::vector<std::vector<int32_t>>& inputs,
                                                bool normalize,
                                                int64_t* n_prompt_tokens = nullptr);

  model::PoolingType pooling() const { return pooling_; }
  int64_t n_embd() const { return model_.config().n_embd; }
  int64_t n_ctx_train() const { return model_.config().n_ctx_train; }
  const model::Model& model() const { return model_; }

 private:
  Embedder(const model::Model& model, const tokenizer::Tokenizer& tokenizer,
           const EmbedderOptions& options, model::PoolingType pooling,
           std::unique_ptr<model::ForwardContext> ctx);

  // Checks every input (see embed()).
  Status check_inputs(const std::vector<std::vector<int32_t>>& inputs) const;
  // A cache whose pool holds `blocks` blocks (the null block included).
  Status ensure_blocks(int64_t blocks);
  // One forward over inputs [first, last): their vectors into out[first..last).
  Status run_forward(const std::vector<std::vector<int32_t>>& inputs, size_t first, size_t last,
                     bool normalize, std::vector<std::vector<float>>& out);

  const model::Model& model_;
  const tokenizer::Tokenizer& tokenizer_;
  const EmbedderOptions options_;
  const model::PoolingType pooling_;

  std::mutex mu_;  // one embed() at a time; guards what follows
  std::unique_ptr<model::ForwardContext> ctx_;
  std::unique_ptr<cache::KvCache> cache_;
  int64_t cache_blocks_ = 0;  // pool size of cache_ (null block included)
  cache::Batch batch_;
  std::vector<int> seqs_;  // cache sequence of each input of the forward
};

}  // namespace folio
