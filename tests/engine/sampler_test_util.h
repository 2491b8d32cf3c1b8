// Helpers shared by the sampler tests: a sampler the test requires to build,
// a row of normally distributed logits, and the statistics that compare
// sampled frequencies with probabilities (Pearson's chi-square).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Pearson's chi-square statistic of observed counts against probabilities.
inline double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& probs,
                         int64_t n) {
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probs[i] * static_cast<double>(n);
    if (expected == 0.0) {
      EXPECT_EQ(counts[i], 0) << "cell " << i << " has probability 0";
      continue;
    }
    const double d = static_cast<double>(counts[i]) - expected;
    chi2 += d * d / expected;
  }
  return chi2;
}

// softmax(row / temp) in double precision.
inline std::vector<double> softmax(const std::vector<float>& row, double temp) {
  double mx = -INFINITY;
  for (float l : row) mx = std::max(mx, static_cast<double>(l));
  std::vector<double> p;
  double z = 0.0;
  for (float l : row) {
    p.push_back(std::exp((l - mx) / temp));
    z += p.back();
  }
  for (double& x : p) x /= z;
  return p;
}

// The value a chi-square variable with `dof` degrees of freedom exceeds with
// probability 1e-4 (Wilson-Hilferty: (X / dof)^(1/3) is nearly normal; a
// little above the exact quantile for small dof, so slightly lenient).
inline double chi_square_bound_1e4(int dof) {
  const double k = dof;
  const double v = 2.0 / (9.0 * k);
  const double c = 1.0 - v + 3.719 * std::sqrt(v);  // z of the upper 1e-4 tail
  return k * c * c * c;
}

// Cells whose expected count is below `min_expected` pooled into one (the
// chi-square approximation needs a few expected draws per cell). Returns
// the statistic; *dof the pooled cells' degrees of freedom.
inline double pooled_chi_square(const std::vector<int64_t>& counts,
                                const std::vector<double>& probs, int64_t n, double min_expected,
                                int* dof) {
  std::vector<int64_t> c;
  std::vector<double> p;
  int64_t rest_count = 0;
  double rest_prob = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] * static_cast<double>(n) >= min_expected) {
      c.push_back(counts[i]);
      p.push_back(probs[i]);
    } else {
      rest_count += counts[i];
      rest_prob += probs[i];
    }
  }
  if (rest_count > 0 || rest_prob > 0.0) {
    c.push_back(rest_count);
    p.push_back(rest_prob);
  }
  *dof = static_cast<int>(c.size()) - 1;
  return chi_square(c, p, n);
}

}  // namespace folio::sampler_testing
