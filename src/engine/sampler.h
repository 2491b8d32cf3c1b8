// Sampler: picks the next token of one sequence from its logits row.
//
// Chain (llama.cpp's default order; every stage is a no-op at its "off" value):
//   1. logit_bias      logit[t] += bias[t]   (-inf bans t)
//   2. penalties       over the tokens passed to accept() (SamplingParams)
//   -- logprobs are taken here: log_softmax over the whole vocabulary --
//   3. greedy?         temperature == 0 (or top_k == 1): argmax, ties to the
//                      lowest id; no RNG draw
//   4. top_k           the k highest logits (ties to the lower id)
//   5. top_p           smallest most-likely set with softmax mass >= top_p,
//                      probabilities at temperature 1 over what top_k kept
//   6. min_p           logit >= max_logit + log(min_p)
//   7. temperature     logit / temperature
//   8. draw            one uniform double from this sequence's mt19937_64,
//                      inverted through the cumulative distribution
// (llama.cpp adds the logit-bias sampler in front of its chain, so bias comes
// before penalties here too.)
//
// Cost on a [n_vocab] row: one copy plus O(distinct tokens in the penalty
// window) for 1-2; O(n_vocab) for greedy and logprobs; top_k finds the k-th
// best through a histogram of logits and sorts only the few tokens above it;
// top_p without top_k buckets the candidates by logit and sorts only the one
// bucket where the cumulative mass crosses top_p, so no stage sorts the
// vocabulary. min_p is applied before top_p when both are on: each keeps a
// prefix of the sorted candidates and top_p's mass is normalised before
// either, so the intersection is the same and the min_p filter is O(n).
//
// Determinism: a Sampler owns its RNG (seeded from SamplingParams::seed, or a
// random seed it reports), draws exactly one number per non-greedy token, and
// orders candidates only by (logit, id). The same seed and the same sequence
// of logits rows give the same tokens, whatever other sequences do.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/penalty_window.h"
#include "engine/sampling_params.h"

namespace folio {

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct TokenProb {
  int32_t token = -1;
  float prob = 0.0f;
};

struct SampledToken {
  int32_t token = -1;
  // Only when SamplingParams::logprobs: log-probability of `token` (see
  // SamplingParams::logprobs for the distribution).
  float logprob = 0.0f;
  // The top_logprobs most likely tokens, best first (ties: lower id first);
  // tokens with probability 0 (banned, -inf) are left out.
  std::vector<TokenLogprob> top_logprobs;
};

// Scratch memory for Sampler, O(n_vocab) (about 16 bytes per token). One per
// thread, shared by every sequence that thread samples; Samplers themselves
// stay small.
class SamplerWorkspace {
 public:
  struct Candidate {
    int32_t id;
    float logit;
    float weight;  // exp(logit - max) at the stage that needs it
  };

 private:
  friend class Sampler;
  std::vector<float> logits_;        // [n_vocab] after bias and penalties
  std::vector<Candidate> cand_;      // [<= n_vocab] surviving candidates
  std::vector<Candidate> bucket_;    // top_p: the bucket that crosses top_p
  std::vector<double> bucket_mass_;  // top_p: softmax mass per logit bucket
  std::vector<uint32_t> counts_;     // top_k: tokens per logit bucket
};

class Sampler {
 public:
  // Validates params (SamplingParams::validate) for a vocabulary of n_vocab.
  static Result<Sampler> create(SamplingParams params, int32_t n_vocab);

  // Picks the next token from logits ([n_vocab], the model's row for this
  // sequence; read, not modified). Does not accept() it. Errors when the
  // row's size is wrong or no token has a finite logit (e.g. everything
  // banned by logit_bias). NaN logits count as -inf.
  // `allowed` (grammar-constrained sampling): a bitmask over token ids
  // (bit id % 64 of word id / 64); tokens outside it, or past its end, get
  // -inf before every other stage. Null: no constraint.
  Result<SampledToken> sample(std::span<const float> logits, SamplerWorkspace& ws,
                              const std::vector<uint64_t>* allowed = nullptr);

  // The distribution the draw would use for this row (after every stage,
  // temperature included), normalised, most likely first (ties: lower id).
  // Diagnostic / test hook: sorts the surviving set. Does not touch the RNG.
  Result<std::vector<TokenProb>> distribution(std::span<const float> logits,
                                              SamplerWorkspace& ws) const;

  // Adds tokens to the penalty window (the prompt, if the caller wants it
  // penalised, then each generated token).
  void accept(int32_t token) { window_.push(token); }
  void accept(std::span<const int32_t> tokens) { window_.push(tokens); }

  // Forgets the penalty window and rewinds the RNG to seed(): the next
  // tokens repeat a fresh run's.
  void reset();

  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }
  const PenaltyWindow& window() const { return window_; }

 private:
  Sampler(SamplingParams params, int32_t n_vocab, uint64_t seed);

  // ws.logits_ = logits + bias, then penalties. Returns the argmax (ties to
  // the lowest id) or an error when every logit is -inf.
  Result<int32_t> prepare(std::span<const float> logits, SamplerWorkspace& ws,
                          const std::vector<uint64_t>* allowed = nullptr) const;
  // Stages 4-7 on ws.logits_: ws.cand_ holds the surviving tokens with
  // unnormalised weights at the sampling temperature; returns their sum.
  double truncate(SamplerWorkspace& ws, float max_logit) const;
  // The greedy decision: temperature 0 or top_k 1.
  bool is_greedy() const { return params_.temperature == 0.0f || params_.top_k == 1; }

  SamplingParams params_;
  int32_t n_vocab_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  PenaltyWindow window_;
};

}  // namespace folio
