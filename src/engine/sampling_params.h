// SamplingParams: everything one request says about how its tokens are chosen
// and when its generation ends. The server fills it from an OpenAI request, the
// CLI from flags; validate() is the input boundary (every impossible value is
// an kInvalidArgument error naming the parameter and the value).
//
// Defaults are llama.cpp's (common_params_sampling): temperature 0.8, top_k 40,
// top_p 0.95, min_p 0.05, no penalties, penalty window 64. A server that wants
// OpenAI's defaults (temperature 1, top_p 1, no top_k / min_p) sets them.
//
// The sampler applies these in llama.cpp's default chain order (sampler.h has
// the details):
//   logit_bias -> penalties -> [logprobs taken here] -> top_k -> top_p -> min_p
//   -> temperature -> draw
// temperature == 0 is greedy: argmax after bias and penalties, ties to the
// lowest token id.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace folio {

// OpenAI's limit for top_logprobs.
inline constexpr int32_t kMaxTopLogprobs = 20;
// Limits on stop strings: enough for any chat template's end markers.
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopStringBytes = 1024;

struct SamplingParams {
  // 0 = greedy. Otherwise logits are divided by it just before the draw (after
  // truncation, as llama.cpp does: top_p / min_p see temperature-1 probabilities).
  float temperature = 0.8f;
  // Keep only the k most likely tokens; 0 = off.
  int32_t top_k = 40;
  // Keep the smallest set of most likely tokens whose probability (temperature
  // 1, renormalised over what top_k kept) reaches top_p; 1 = off. In (0, 1].
  float top_p = 0.95f;
  // Keep tokens whose probability is at least min_p times the most likely
  // one's; 0 = off. In [0, 1].
  float min_p = 0.05f;

  // Penalties (llama.cpp's penalties sampler) over the last `penalty_last_n`
  // tokens passed to Sampler::accept(); what goes in is the caller's choice
  // (llama.cpp's server feeds the prompt too, then every generated token).
  // For a token seen `count` > 0 times in that window:
  //   logit = logit <= 0 ? logit * repetition_penalty : logit / repetition_penalty
  //   logit -= frequency_penalty * count + presence_penalty
  float repetition_penalty = 1.0f;  // 1 = off; > 0
  float presence_penalty = 0.0f;    // 0 = off (OpenAI's range is [-2, 2])
  float frequency_penalty = 0.0f;   // 0 = off (OpenAI's range is [-2, 2])
  int32_t penalty_last_n = 64;      // -1 = every accepted token, 0 = penalties off

  // Added to the logits before anything else; -infinity bans a token.
  std::map<int32_t, float> logit_bias;

  // Seed of this sequence's own RNG; unset = drawn from std::random_device
  // (Sampler::seed() reports the one used).
  std::optional<uint64_t> seed;

  // Generation ends after this many tokens; -1 = no limit (the context's).
  int32_t max_tokens = -1;
  // Generation ends when the text contains one of these; the stop string and
  // everything after it are not returned (StopMatcher).
  std::vector<std::string> stop;

  // Return the log-probability of each chosen token, and of the top_logprobs
  // most likely tokens (top_logprobs > 0 needs logprobs). The distribution is
  // log_softmax of the logits after logit_bias and penalties, before
  // truncation and temperature (the model's own view of the candidates).
  bool logprobs = false;
  int32_t top_logprobs = 0;

  bool greedy() const { return temperature == 0.0f; }

  // Checks every field; logit_bias ids must lie in [0, n_vocab).
  Status validate(int32_t n_vocab) const;

  // One line with every field, for logs and the CLI.
  std::string to_string() const;
};

}  // namespace folio
