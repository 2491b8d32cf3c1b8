#include "engine/serving_metrics.h"

#include <algorithm>

namespace folio {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double v) {
  const auto i =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  ++counts_[i];
  sum_ += v;
  ++count_;
}

double Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double target = q * static_cast<double>(count_);
  double below = 0;  // observations in earlier buckets
  for (size_t i = 0; i < counts_.size(); ++i) {
    const auto c = static_cast<double>(counts_[i]);
    if (c > 0 && below + c >= target) {
      if (i == bounds_.size()) return bounds_.empty() ? 0 : bounds_.back();  // overflow bucket
      const double lo = i == 0 ? std::min(0.0, bounds_[0]) : bounds_[i - 1];
      const double hi = bounds_[i];
      return lo + (hi - lo) * std::clamp((target - below) / c, 0.0, 1.0);
    }
    below += c;
  }
  return bounds_.empty() ? 0 : bounds_.back();
}

ServingMetrics::ServingMetrics() {
  state_.ttft = Histogram(latency_buckets());
  state_.itl = Histogram(latency_buckets());
  state_.e2e = Histogram(latency_buckets());
  state_.step_time = Histogram(latency_buckets());
  state_.batch_tokens = Histogram(token_buckets());
  state_.request_prompt = Histogram(token_buckets());
  state_.request_generation = Histogram(token_buckets());
}

std::vector<double> ServingMetrics::latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.25, 0.5,
          0.75,  1.0,    2.5,   5.0,  7.5,   10.0, 20.0,  30.0, 60.0};
}

std::vector<double> ServingMetrics::token_buckets() {
  std::vector<double> b;
  for (double v = 1; v <= 8192; v *= 2) b.push_back(v);
  return b;
}

}  // namespace folio
