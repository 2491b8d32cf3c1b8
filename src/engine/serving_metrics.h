// ServingMetrics: what the scheduler counts, in the shape Prometheus wants
// (counters only grow, gauges are current values, histograms have cumulative
// buckets). The scheduler updates it on its step thread; the server's
// /metrics handler takes a Snapshot from any thread and renders it
// (server/prometheus.h). Names follow vLLM's where one exists.
// generated_tokens counts kept tokens (end-of-generation ids excluded), so it
// equals the sum of completion_tokens; prefix_* count every admission (a
// preempted sequence's re-admission too).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace folio {

// A fixed-bucket histogram: counts[i] = observations <= bounds[i] (not
// cumulative here; rendering accumulates), plus one overflow bucket (+Inf).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);

  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // [bounds + 1]
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }
  // Value below which fraction q of observations lie (linear within the
  // bucket); 0 with no observations.
  double quantile(double q) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServingMetrics {
 public:
  struct Snapshot {
    // gauges
    int64_t requests_running = 0;
    int64_t requests_waiting = 0;
    int64_t kv_blocks_total = 0;   // usable blocks (null block excluded)
    int64_t kv_blocks_used = 0;    // referenced by a live sequence
    int64_t kv_blocks_free = 0;    // not referenced (includes cached)
    int64_t kv_blocks_cached = 0;  // free but holding a registered prefix hash
    double kv_usage = 0;           // used / total, in [0, 1]
    // Pages of sliding-window layers (their own pools; 0 without such layers).
    int64_t kv_window_blocks_total = 0;
    int64_t kv_window_blocks_used = 0;
    // counters
    uint64_t requests_total = 0;         // accepted by submit()
    uint64_t requests_finished = 0;      // on_done delivered (any reason)
    uint64_t requests_cancelled = 0;     // ended by cancel()
    uint64_t requests_failed = 0;        // on_done with a non-OK status
    uint64_t prefix_queried_tokens = 0;  // prompt tokens looked up at admission
    uint64_t prefix_hit_tokens = 0;      // of those, taken from the cache
    uint64_t preemptions = 0;
    uint64_t prompt_tokens = 0;     // prompt tokens computed by forwards (after cache hits)
    uint64_t generated_tokens = 0;  // tokens sampled, all choices
    uint64_t steps = 0;
    // histograms (seconds, tokens)
    Histogram ttft{{}};          // submit -> first token
    Histogram itl{{}};           // between consecutive tokens of one choice
    Histogram e2e{{}};           // submit -> done
    Histogram step_time{{}};     // one forward + sampling
    Histogram batch_tokens{{}};  // tokens per step
  };

  ServingMetrics();
  // Step thread: mutate under the lock via update().
  template <typename F>
  void update(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(state_);
  }
  Snapshot snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }

  // Default bucket bounds.
  static std::vector<double> latency_buckets();  // 1 ms .. 60 s
  static std::vector<double> token_buckets();    // 1 .. 8192, powers of two

 private:
  mutable std::mutex mu_;
  Snapshot state_;
};

}  // namespace folio
