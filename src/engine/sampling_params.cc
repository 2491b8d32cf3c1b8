#include "engine/sampling_params.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "core/utf8.h"

namespace folio {

Status SamplingParams::validate(int32_t n_vocab) const {
  if (!(std::isfinite(temperature) && temperature >= 0.0f)) {
    return invalid_argument("temperature must be a finite number >= 0, got {}", temperature);
  }
  if (top_k < 0) return invalid_argument("top_k must be >= 0 (0 = off), got {}", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return invalid_argument("top_p must be in (0, 1], got {}", top_p);
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return invalid_argument("min_p must be in [0, 1], got {}", min_p);
  }
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return invalid_argument("repetition_penalty must be a finite number > 0, got {}",
                            repetition_penalty);
  }
  if (!std::isfinite(presence_penalty)) {
    return invalid_argument("presence_penalty must be finite, got {}", presence_penalty);
  }
  if (!std::isfinite(frequency_penalty)) {
    return invalid_argument("frequency_penalty must be finite, got {}", frequency_penalty);
  }
  if (penalty_last_n < -1) {
    return invalid_argument("penalty_last_n must be >= -1 (-1 = all, 0 = off), got {}",
                            penalty_last_n);
  }
  if (n_vocab <= 0) return invalid_argument("vocabulary size must be > 0, got {}", n_vocab);
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= n_vocab) {
      return invalid_argument("logit_bias token {} is outside the vocabulary [0, {})", token,
                              n_vocab);
    }
    if (std::isnan(bias) || bias == INFINITY) {
      return invalid_argument("logit_bias for token {} must be finite or -infinity (a ban), got {}",
                              token, bias);
    }
  }
  if (max_tokens < -1) {
    return invalid_argument("max_tokens must be >= 0 (or -1 = no limit), got {}", max_tokens);
  }
  if (stop.size() > kMaxStopStrings) {
    return invalid_argument("stop: at most {} stop strings, got {}", kMaxStopStrings, stop.size());
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return invalid_argument("stop[{}] is an empty string", i);
    if (stop[i].size() > kMaxStopStringBytes) {
      return invalid_argument("stop[{}] is {} bytes long, the limit is {}", i, stop[i].size(),
                              kMaxStopStringBytes);
    }
    // Valid UTF-8 only: StopMatcher then never splits a character.
    if (!utf8_valid(stop[i])) return invalid_argument("stop[{}] is not valid UTF-8", i);
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return invalid_argument("top_logprobs must be in [0, {}], got {}", kMaxTopLogprobs,
                            top_logprobs);
  }
  if (top_logprobs > 0 && !logprobs) {
    return invalid_argument("top_logprobs = {} needs logprobs to be enabled", top_logprobs);
  }
  return Status();
}

std::string SamplingParams::to_string() const {
  std::string s = fmt::format(
      "temperature = {}, top_k = {}, top_p = {}, min_p = {}, repetition_penalty = {}, "
      "presence_penalty = {}, frequency_penalty = {}, penalty_last_n = {}, logit_bias = {} "
      "entries, seed = {}, max_tokens = {}, stop = {} strings, logprobs = {}, top_logprobs = {}",
      temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty,
      penalty_last_n, logit_bias.size(), seed ? fmt::format("{}", *seed) : std::string("random"),
      max_tokens, stop.size(), logprobs, top_logprobs);
  return s;
}

}  // namespace folio
