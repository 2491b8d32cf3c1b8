#include "engine/sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/check.h"

namespace folio {
namespace {

using Candidate = SamplerWorkspace::Candidate;

// top_p without top_k: candidates are binned by (max_logit - logit) into this
// many buckets spanning at most kTopPBucketRange logits below the max (the rest
// share the last bucket; their mass is < e^-32 of the max's). Only the bucket
// where the cumulative mass crosses top_p gets sorted.
constexpr int kTopPBuckets = 1024;
constexpr float kTopPBucketRange = 32.0f;
// top_k: logits binned over [max - range, max] (range <= kTopKBucketRange, the
// rest in the last bucket) to find the k-th best without a sort; the cap keeps
// a few hugely negative (masked) logits from squeezing the rest into bucket 0.
constexpr int kTopKBuckets = 1024;
constexpr float kTopKBucketRange = 64.0f;

// The candidate order everywhere: higher logit first, ties to the lower id.
// A strict total order, so nth_element / sort give one answer.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// NaN -> -inf (never sampled), +inf -> FLT_MAX (keeps exp(l - max) finite).
inline float sanitize(float v) {
  if (v <= FLT_MAX) return v;  // finite or -inf
  return v != v ? -INFINITY : FLT_MAX;
}

// top_k without touching most of the vocabulary: a histogram of logits by
// distance below the max finds the bucket holding the k-th best; only tokens
// up to that bucket are gathered, then nth_element + sort on those few.
// Returns false (cand untouched) when k keeps every finite token.
bool gather_top_k(std::span<const float> logits, float max_logit, int32_t k,
                  std::vector<uint32_t>& counts, std::vector<Candidate>& cand) {
  float min_logit = max_logit;
  size_t n_finite = 0;
  for (float l : logits) {
    if (l > -INFINITY) {
      min_logit = std::min(min_logit, l);
      ++n_finite;
    }
  }
  const auto kk = static_cast<size_t>(k);
  if (kk >= n_finite) return false;

  const float range = std::min(max_logit - min_logit, kTopKBucketRange);
  const float scale = range > 0.0f ? static_cast<float>(kTopKBuckets) / range : 0.0f;
  auto bucket_of = [max_logit, scale](float logit) {  // monotone in logit
    const float x = (max_logit - logit) * scale;
    return x >= static_cast<float>(kTopKBuckets - 1) ? kTopKBuckets - 1 : static_cast<int>(x);
  };
  counts.assign(kTopKBuckets, 0);
  for (float l : logits) {
    if (l > -INFINITY) ++counts[static_cast<size_t>(bucket_of(l))];
  }
  int cross = kTopKBuckets - 1;
  size_t cum = 0;
  for (int b = 0; b < kTopKBuckets; ++b) {
    cum += counts[static_cast<size_t>(b)];
    if (cum >= kk) {
      cross = b;
      break;
    }
  }
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (l > -INFINITY && bucket_of(l) <= cross) {
      cand.push_back({static_cast<int32_t>(i), l, 0.0f});
    }
  }
  FOLIO_CHECK(cand.size() >= kk);
  std::nth_element(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(kk), cand.end(),
                   better);
  cand.resize(kk);
  std::sort(cand.begin(), cand.end(), better);
  return true;
}

// Keeps the smallest most-likely prefix of `cand` (unsorted; weights =
// exp(logit - max)) whose mass reaches `target`. O(n) plus a sort of one
// bucket. The survivors stay in their order, then the crossing bucket's
// survivors follow sorted.
void top_p_by_buckets(std::vector<Candidate>& cand, std::vector<Candidate>& bucket,
                      std::vector<double>& mass, float max_logit, double target) {
  float min_logit = max_logit;
  for (const Candidate& c : cand) min_logit = std::min(min_logit, c.logit);
  const float range = std::min(max_logit - min_logit, kTopPBucketRange);
  const float scale = range > 0.0f ? static_cast<float>(kTopPBuckets) / range : 0.0f;
  // Monotone in logit: a higher logit never lands in a later bucket.
  auto bucket_of = [max_logit, scale](float logit) {
    const float x = (max_logit - logit) * scale;
    return x >= static_cast<float>(kTopPBuckets - 1) ? kTopPBuckets - 1 : static_cast<int>(x);
  };

  mass.assign(kTopPBuckets, 0.0);
  for (const Candidate& c : cand) mass[bucket_of(c.logit)] += c.weight;
  double cum = 0.0;
  int cross = -1;
  for (int b = 0; b < kTopPBuckets; ++b) {
    if (cum + mass[b] >= target) {
      cross = b;
      break;
    }
    cum += mass[b];
  }
  if (cross < 0) return;  // rounding: the whole set is needed

  bucket.clear();
  size_t kept = 0;
  for (const Candidate& c : cand) {
    const int b = bucket_of(c.logit);
    if (b < cross) {
      cand[kept++] = c;
    } else if (b == cross) {
      bucket.push_back(c);
    }
  }
  cand.resize(kept);
  std::sort(bucket.begin(), bucket.end(), better);
  for (const Candidate& c : bucket) {
    cand.push_back(c);
    cum += c.weight;
    if (cum >= target) break;
  }
}

// Log-probabilities over the whole prepared row: the chosen token's, and the
// top_n best (probability > 0) in order.
void fill_logprobs(std::span<const float> logits, float max_logit, int32_t top_n,
                   SampledToken& out) {
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l - max_logit);
  const float log_z = max_logit + static_cast<float>(std::log(sum));
  out.logprob = logits[out.token] - log_z;
  if (top_n <= 0) return;

  // Insertion into a short sorted list: one comparison per token once full.
  std::vector<Candidate> top;
  top.reserve(static_cast<size_t>(top_n) + 1);
  for (size_t i = 0; i < logits.size(); ++i) {
    const Candidate c{static_cast<int32_t>(i), logits[i], 0.0f};
    if (c.logit == -INFINITY) continue;
    if (top.size() == static_cast<size_t>(top_n) && !better(c, top.back())) continue;
    top.insert(std::upper_bound(top.begin(), top.end(), c, better), c);
    if (top.size() > static_cast<size_t>(top_n)) top.pop_back();
  }
  out.top_logprobs.clear();
  for (const Candidate& c : top) out.top_logprobs.push_back({c.id, c.logit - log_z});
}

}  // namespace

Sampler::Sampler(SamplingParams params, int32_t n_vocab, uint64_t seed)
    : params_(std::move(params)),
      n_vocab_(n_vocab),
      seed_(seed),
      rng_(seed),
      window_(params_.penalty_last_n) {}

Result<Sampler> Sampler::create(SamplingParams params, int32_t n_vocab) {
  FOLIO_RETURN_IF_ERROR(params.validate(n_vocab));
  uint64_t seed = 0;
  if (params.seed) {
    seed = *params.seed;
  } else {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
  }
  return Sampler(std::move(params), n_vocab, seed);
}

void Sampler::reset() {
  window_.clear();
  rng_.seed(seed_);
}

Result<int32_t> Sampler::prepare(std::span<const float> logits, SamplerWorkspace& ws,
                                 const std::vector<uint64_t>* allowed) const {
  if (logits.size() != static_cast<size_t>(n_vocab_)) {
    return invalid_argument("logits row has {} entries, the vocabulary has {}", logits.size(),
                            n_vocab_);
  }
  ws.logits_.resize(logits.size());
  float* l = ws.logits_.data();
  for (size_t i = 0; i < logits.size(); ++i) l[i] = sanitize(logits[i]);

  for (const auto& [token, bias] : params_.logit_bias) l[token] = sanitize(l[token] + bias);

  const float rep = params_.repetition_penalty;
  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  if (rep != 1.0f || presence != 0.0f || frequency != 0.0f) {
    for (const auto& [token, count] : window_.counts()) {
      if (token < 0 || token >= n_vocab_) continue;  // accepted ids outside this vocabulary
      float v = l[token];
      v = v <= 0.0f ? v * rep : v / rep;
      v -= static_cast<float>(count) * frequency + presence;
      l[token] = sanitize(v);
    }
  }

  if (allowed != nullptr) {
    const size_t words = allowed->size();
    for (int32_t i = 0; i < n_vocab_; ++i) {
      const size_t w = static_cast<size_t>(i) >> 6;
      if (w >= words || !(((*allowed)[w] >> (i & 63)) & 1)) l[i] = -INFINITY;
    }
  }

  int32_t best = 0;
  float best_logit = l[0];
  for (int32_t i = 1; i < n_vocab_; ++i) {
    if (l[i] > best_logit) {  // strict: ties keep the lowest id
      best_logit = l[i];
      best = i;
    }
  }
  if (best_logit == -INFINITY) {
    return invalid_argument(
        "no token can be sampled: every logit is -inf or NaN after logit_bias, penalties{}",
        allowed != nullptr ? " and the grammar" : "");
  }
  return best;
}

double Sampler::truncate(SamplerWorkspace& ws, float max_logit) const {
  const std::span<const float> logits(ws.logits_);
  std::vector<Candidate>& cand = ws.cand_;
  cand.clear();
  cand.reserve(static_cast<size_t>(n_vocab_));

  // top_k: cand becomes the k best, sorted. Otherwise every finite token.
  bool sorted = false;
  if (params_.top_k > 0 && gather_top_k(logits, max_logit, params_.top_k, ws.counts_, cand)) {
    sorted = true;
  } else {
    for (int32_t i = 0; i < n_vocab_; ++i) {
      if (logits[i] > -INFINITY) cand.push_back({i, logits[i], 0.0f});
    }
  }

  // top_p's mass is normalised over what top_k kept, before min_p filters.
  const bool use_top_p = params_.top_p < 1.0f;
  double z = 0.0;
  if (use_top_p) {
    for (Candidate& c : cand) {
      c.weight = std::exp(c.logit - max_logit);
      z += c.weight;
    }
  }
  if (params_.min_p > 0.0f) {
    const float threshold = max_logit + std::log(params_.min_p);
    std::erase_if(cand, [threshold](const Candidate& c) { return c.logit < threshold; });
  }
  if (use_top_p) {
    const double target = static_cast<double>(params_.top_p) * z;
    if (sorted) {
      double cum = 0.0;
      for (size_t i = 0; i < cand.size(); ++i) {
        cum += cand[i].weight;
        if (cum >= target) {
          cand.resize(i + 1);
          break;
        }
      }
    } else {
      top_p_by_buckets(cand, ws.bucket_, ws.bucket_mass_, max_logit, target);
    }
  }
  FOLIO_CHECK(!cand.empty());

  // Temperature, then unnormalised weights for the draw.
  const float temp = params_.temperature;
  double total = 0.0;
  for (Candidate& c : cand) {
    c.weight = std::exp((c.logit - max_logit) / temp);
    total += c.weight;
  }
  return total;
}

Result<SampledToken> Sampler::sample(std::span<const float> logits, SamplerWorkspace& ws,
                                     const std::vector<uint64_t>* allowed) {
  FOLIO_ASSIGN_OR_RETURN(const int32_t best, prepare(logits, ws, allowed));
  SampledToken out;
  out.token = best;
  if (!is_greedy()) {
    const double total = truncate(ws, ws.logits_[best]);
    // 53 random bits -> u in [0, 1); the same sum order as `total`, so the
    // walk always ends on a token with weight > 0.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    const double target = u * total;
    double cum = 0.0;
    for (const Candidate& c : ws.cand_) {
      cum += c.weight;
      if (cum > target) {
        out.token = c.id;
        break;
      }
    }
  }
  if (params_.logprobs) {
    fill_logprobs(ws.logits_, ws.logits_[best], params_.top_logprobs, out);
  }
  return out;
}

Result<std::vector<TokenProb>> Sampler::distribution(std::span<const float> logits,
                                                     SamplerWorkspace& ws) const {
  FOLIO_ASSIGN_OR_RETURN(const int32_t best, prepare(logits, ws));
  std::vector<TokenProb> out;
  if (is_greedy()) {
    out.push_back({best, 1.0f});
    return out;
  }
  const double total = truncate(ws, ws.logits_[best]);
  std::vector<Candidate> cand = ws.cand_;
  std::sort(cand.begin(), cand.end(), better);
  out.reserve(cand.size());
  for (const Candidate& c : cand) {
    out.push_back({c.id, static_cast<float>(static_cast<double>(c.weight) / total)});
  }
  return out;
}

}  // namespace folio
