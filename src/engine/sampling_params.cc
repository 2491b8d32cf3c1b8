#include "engine/sampling_params.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

namespace folio {
namespace {

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
// Stop strings must be: StopMatcher then never splits a character.
bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace

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
    if (!is_valid_utf8(stop[i])) return invalid_argument("stop[{}] is not valid UTF-8", i);
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
