// Helpers shared by the sampler tests: a sampler the test requires to build,
// and a row of normally distributed logits.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "engine/sampler.h"

namespace folio::sampler_testing {

inline Sampler make_sampler(const SamplingParams& p, int32_t n_vocab) {
  auto s = Sampler::create(p, n_vocab);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

// n logits drawn from N(0, scale²), the same for the same seed.
inline std::vector<float> random_row(int32_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace folio::sampler_testing
