#include "engine/embedder.h"

#include <algorithm>
#include <cmath>

namespace folio {

namespace {

constexpr int32_t kBlockSize = cache::kDefaultBlockSize;

int64_t blocks_for(int64_t tokens) {
  return (tokens + kBlockSize - 1) / kBlockSize;
}

// x / ||x||_2 in place (double sums); a zero vector stays zero.
void l2_normalize(float* x, int64_t n) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  if (!(ss > 0.0)) return;
  const double inv = 1.0 / std::sqrt(ss);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * inv);
}

// Does pooling `p` need the hidden state of token `i` of an input of `n`?
bool is_output(model::PoolingType p, int64_t i, int64_t n) {
  switch (p) {
    case model::PoolingType::kCls:
      return i == 0;
    case model::PoolingType::kLast:
      return i == n - 1;
    default:
      return true;  // none, mean
  }
}

}  // namespace

Result<std::unique_ptr<Embedder>> Embedder::create(const model::Model& model,
                                                   const tokenizer::Tokenizer& tokenizer,
                                                   const EmbedderOptions& options) {
  const model::ModelConfig& cfg = model.config();
  if (!cfg.is_embedding()) {
    return unsupported(
        "embeddings: '{}' is not an embedding model (folio computes embeddings with the encoder "
        "architectures bert, nomic-bert)",
        cfg.arch);
  }
  const model::PoolingType pooling = options.pooling.value_or(cfg.pooling);
  if (pooling == model::PoolingType::kRank) {
    return unsupported("embeddings: pooling 'rank' (a reranker's score) is not supported");
  }
  if (options.max_batch_tokens < 1) {
    return invalid_argument("embeddings: max_batch_tokens = {} must be at least 1",
                            options.max_batch_tokens);
  }
  if (options.n_threads < 1) {
    return invalid_argument("embeddings: n_threads = {} must be at least 1", options.n_threads);
  }
  std::unique_ptr<model::ForwardContext> ctx =
      model::ForwardContext::with_device(options.device, options.n_threads);
  return std::unique_ptr<Embedder>(new Embedder(model, tokenizer, options, pooling, std::move(ctx)));
}

Embedder::Embedder(const model::Model& model, const tokenizer::Tokenizer& tokenizer,
                   const EmbedderOptions& options, model::PoolingType pooling,
                   std::unique_ptr<model::ForwardContext> ctx)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      pooling_(pooling),
      ctx_(std::move(ctx)) {}

Embedder::~Embedder() = default;

std::vector<int32_t> Embedder::tokenize(std::string_view text) const {
  tokenizer::TokenizeOptions opts;
  opts.add_special = true;
  opts.parse_special = true;
  return tokenizer_.tokenize(text, opts);
}

Status Embedder::check_inputs(const std::vector<std::vector<int32_t>>& inputs) const {
  if (inputs.empty()) return invalid_argument("embeddings: no inputs");
  const int64_t n_vocab = model_.config().n_vocab;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t>& in = inputs[i];
    if (in.empty()) return invalid_argument("embeddings: input {} is empty", i);
    if (static_cast<int64_t>(in.size()) > n_ctx_train()) {
      return out_of_range(
          "embeddings: input {} has {} tokens, more than the model's context of {} tokens", i,
          in.size(), n_ctx_train());
    }
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k] < 0 || in[k] >= n_vocab) {
        return invalid_argument(
            "embeddings: input {}: token id {} at position {} is outside the vocabulary [0, {})",
            i, in[k], k, n_vocab);
      }
    }
  }
  return Status();
}

Status Embedder::ensure_blocks(int64_t blocks) {
  if (cache_ != nullptr && cache_blocks_ >= blocks) return Status();
  // At least one full batch of the default size, so small calls do not
  // regrow the pool one block at a time.
  const int64_t want = std::max(blocks, blocks_for(options_.max_batch_tokens) + 2);
  cache_.reset();
  cache::KvCacheOptions o;
  o.storage = cache::KvStorage::kPaged;
  o.type = DType::F32;
  o.n_ctx = n_ctx_train();
  o.n_seq = 0;
  o.block_size = kBlockSize;
  o.n_blocks = static_cast<int32_t>(std::min<int64_t>(want, int64_t{1} << 30));
  o.prefix_caching = false;
  FOLIO_ASSIGN_OR_RETURN(cache_, model_.make_cache(o));
  cache_blocks_ = o.n_blocks;
  return Status();
}

Status Embedder::run_forward(const std::vector<std::vector<int32_t>>& inputs, size_t first,
                             size_t last, bool normalize, std::vector<std::vector<float>>& out) {
  int64_t blocks = 1;  // the null block
  for (size_t i = first; i < last; ++i) blocks += blocks_for(static_cast<int64_t>(inputs[i].size()));
  FOLIO_RETURN_IF_ERROR(ensure_blocks(blocks));

  seqs_.clear();
  batch_.clear();
  Status s;
  for (size_t i = first; i < last && s.ok(); ++i) {
    Result<int> seq = cache_->add_sequence();
    if (!seq.ok()) {
      s = seq.status();
      break;
    }
    seqs_.push_back(*seq);
    const std::vector<int32_t>& in = inputs[i];
    const int64_t n = static_cast<int64_t>(in.size());
    for (int64_t k = 0; k < n; ++k) {
      batch_.add(in[static_cast<size_t>(k)], static_cast<int32_t>(k), *seq,
                 is_output(pooling_, k, n));
    }
  }
  Result<TensorView> hidden = s.ok() ? model_.embed(batch_, *cache_, *ctx_) : Result<TensorView>(s);
  for (int seq : seqs_) (void)cache_->remove_sequence(seq);  // always: the cache ends empty
  if (!hidden.ok()) return hidden.status();

  // hidden: F32 [n_embd, n_outputs], rows in batch order (inputs in order).
  const int64_t e = n_embd();
  const float* row = static_cast<const float*>(hidden->data);
  for (size_t i = first; i < last; ++i) {
    const int64_t n = static_cast<int64_t>(inputs[i].size());
    std::vector<float>& v = out[i];
    switch (pooling_) {
      case model::PoolingType::kNone: {
        v.assign(row, row + n * e);
        row += n * e;
        if (normalize) {
          for (int64_t k = 0; k < n; ++k) l2_normalize(v.data() + k * e, e);
        }
        continue;
      }
      case model::PoolingType::kMean: {
        std::vector<double> sum(static_cast<size_t>(e), 0.0);
        for (int64_t k = 0; k < n; ++k, row += e) {
          for (int64_t j = 0; j < e; ++j) sum[static_cast<size_t>(j)] += row[j];
        }
        v.resize(static_cast<size_t>(e));
        for (int64_t j = 0; j < e; ++j) {
          v[static_cast<size_t>(j)] = static_cast<float>(sum[static_cast<size_t>(j)] / n);
        }
        break;
      }
      default:  // cls, last: the input's one output row
        v.assign(row, row + e);
        row += e;
        break;
    }
    if (normalize) l2_normalize(v.data(), e);
  }
  return Status();
}

Result<std::vector<std::vector<float>>> Embedder::embed(
    const std::vector<std::vector<int32_t>>& inputs, bool normalize, int64_t* n_prompt_tokens) {
  FOLIO_RETURN_IF_ERROR(check_inputs(inputs));
  std::lock_guard lock(mu_);
  std::vector<std::vector<float>> out(inputs.size());
  int64_t total = 0;
  for (size_t first = 0; first < inputs.size();) {
    // Whole inputs, in order, up to max_batch_tokens (at least one).
    size_t last = first;
    int64_t tokens = 0;
    while (last < inputs.size()) {
      const int64_t n = static_cast<int64_t>(inputs[last].size());
      if (last > first && tokens + n > options_.max_batch_tokens) break;
      tokens += n;
      ++last;
    }
    FOLIO_RETURN_IF_ERROR(run_forward(inputs, first, last, normalize, out));
    total += tokens;
    first = last;
  }
  if (n_prompt_tokens != nullptr) *n_prompt_tokens = total;
  return out;
}

}  // namespace folio
