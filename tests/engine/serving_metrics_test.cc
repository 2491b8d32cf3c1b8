// Histogram buckets, sums and quantiles; ServingMetrics default buckets and
// thread-safe snapshots.
#include "engine/serving_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace folio {
namespace serving_metrics_test {

TEST(HistogramTest, BucketsAreUpperInclusiveWithOverflow) {
  Histogram h({1, 2, 4});
  for (double v : {0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 9.0}) h.observe(v);
  EXPECT_EQ(h.counts(), (std::vector<uint64_t>{2, 2, 2, 1}));
  EXPECT_EQ(h.count(), 7u);
  EXPECT_DOUBLE_EQ(h.sum(), 21.0);
}

TEST(HistogramTest, QuantileInterpolatesWithinABucket) {
  Histogram h({10, 20, 30});
  EXPECT_EQ(h.quantile(0.5), 0.0);            // no observations
  for (int i = 0; i < 4; ++i) h.observe(15);  // all in (10, 20]
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 15.0);
  EXPECT_DOUBLE_EQ(h.quantile(1.0), 20.0);
  EXPECT_DOUBLE_EQ(h.quantile(0.25), 12.5);
  for (int i = 0; i < 4; ++i) h.observe(100);  // overflow
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 20.0);
  EXPECT_DOUBLE_EQ(h.quantile(0.99), 30.0);  // overflow: the last bound
}

TEST(ServingMetricsTest, DefaultBucketsAndSnapshots) {
  const auto lat = ServingMetrics::latency_buckets();
  ASSERT_FALSE(lat.empty());
  EXPECT_DOUBLE_EQ(lat.front(), 0.001);
  EXPECT_DOUBLE_EQ(lat.back(), 60.0);
  EXPECT_TRUE(std::is_sorted(lat.begin(), lat.end()));
  const auto tok = ServingMetrics::token_buckets();
  EXPECT_EQ(tok.size(), 14u);  // 1 .. 8192
  EXPECT_DOUBLE_EQ(tok.back(), 8192.0);

  ServingMetrics m;
  const ServingMetrics::Snapshot s0 = m.snapshot();
  EXPECT_EQ(s0.ttft.bounds(), lat);
  EXPECT_EQ(s0.batch_tokens.bounds(), tok);
  // Concurrent writers and readers (TSan checks the locking).
  std::thread writer([&] {
    for (int i = 0; i < 1000; ++i) {
      m.update([&](ServingMetrics::Snapshot& s) {
        ++s.steps;
        s.batch_tokens.observe(i % 64 + 1);
      });
    }
  });
  uint64_t last = 0;
  for (int i = 0; i < 200; ++i) {
    const ServingMetrics::Snapshot s = m.snapshot();
    EXPECT_GE(s.steps, last);
    EXPECT_EQ(s.batch_tokens.count(), s.steps);
    last = s.steps;
  }
  writer.join();
  EXPECT_EQ(m.snapshot().steps, 1000u);
}

}  // namespace
}  // namespace folio
