#include "server/prometheus.h"

#include <fmt/format.h>

#include <cmath>

namespace folio::server {

namespace {

// Label values escape backslash, double quote and newline.
std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

class Writer {
 public:
  explicit Writer(std::string_view model)
      : labels_(model.empty() ? std::string()
                              : fmt::format("model_name=\"{}\"", escape_label(model))) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += fmt::format("# HELP folio:{} {}\n# TYPE folio:{} {}\n", name, help, name, type);
  }

  void sample(std::string_view name, double v, std::string_view extra_label = "") {
    out_ += "folio:";
    out_ += name;
    if (!labels_.empty() || !extra_label.empty()) {
      out_ += '{';
      out_ += labels_;
      if (!labels_.empty() && !extra_label.empty()) out_ += ',';
      out_ += extra_label;
      out_ += '}';
    }
    out_ += ' ';
    out_ += prometheus_number(v);
    out_ += '\n';
  }

  void gauge(std::string_view name, double v, std::string_view help) {
    family(name, "gauge", help);
    sample(name, v);
  }

  void counter(std::string_view name, double v, std::string_view help) {
    family(name, "counter", help);
    sample(name, v);
  }

  void histogram(std::string_view name, const Histogram& h, std::string_view help) {
    family(name, "histogram", help);
    const std::string bucket = fmt::format("{}_bucket", name);
    uint64_t cumulative = 0;
    const auto& bounds = h.bounds();
    const auto& counts = h.counts();
    for (size_t i = 0; i < bounds.size(); ++i) {
      cumulative += i < counts.size() ? counts[i] : 0;
      sample(bucket, static_cast<double>(cumulative),
             fmt::format("le=\"{}\"", prometheus_number(bounds[i])));
    }
    // +Inf holds every observation, whatever the overflow bucket says.
    sample(bucket, static_cast<double>(h.count()), "le=\"+Inf\"");
    sample(fmt::format("{}_sum", name), h.sum());
    sample(fmt::format("{}_count", name), static_cast<double>(h.count()));
  }

  std::string take() { return std::move(out_); }

 private:
  std::string labels_;
  std::string out_;
};

}  // namespace

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string render_prometheus(const ServingMetrics::Snapshot& s, std::string_view model,
                              const TransportStats* http) {
  Writer w(model);
  w.gauge("num_requests_running", static_cast<double>(s.requests_running),
          "Requests whose sequences are in the running batch.");
  w.gauge("num_requests_waiting", static_cast<double>(s.requests_waiting),
          "Requests queued for admission (new or preempted).");
  w.gauge("kv_cache_blocks_total", static_cast<double>(s.kv_blocks_total),
          "Usable KV cache blocks in the pool.");
  w.gauge("kv_cache_blocks_used", static_cast<double>(s.kv_blocks_used),
          "KV cache blocks referenced by a live sequence.");
  w.gauge("kv_cache_blocks_free", static_cast<double>(s.kv_blocks_free),
          "KV cache blocks not referenced by any sequence (cached ones included).");
  w.gauge("kv_cache_blocks_cached", static_cast<double>(s.kv_blocks_cached),
          "Free KV cache blocks still holding a reusable prefix.");
  w.gauge("kv_cache_usage_perc", s.kv_usage, "Fraction of KV cache blocks in use (0 to 1).");
  w.gauge("kv_cache_window_blocks_total", static_cast<double>(s.kv_window_blocks_total),
          "Usable blocks of the sliding-window layers' pages (0: no such layers).");
  w.gauge("kv_cache_window_blocks_used", static_cast<double>(s.kv_window_blocks_used),
          "Blocks of the sliding-window layers' pages holding positions still in a window.");
  w.counter("requests_total", static_cast<double>(s.requests_total), "Requests accepted.");
  w.counter("requests_finished_total", static_cast<double>(s.requests_finished),
            "Requests finished for any reason.");
  w.counter("requests_cancelled_total", static_cast<double>(s.requests_cancelled),
            "Requests cancelled (client disconnected or server stopping).");
  w.counter("prefix_cache_queries_total", static_cast<double>(s.prefix_queried_tokens),
            "Prompt tokens looked up in the prefix cache.");
  w.counter("prefix_cache_hits_total", static_cast<double>(s.prefix_hit_tokens),
            "Prompt tokens found in the prefix cache.");
  w.counter("num_preemptions_total", static_cast<double>(s.preemptions),
            "Sequences preempted (recomputed later) for lack of KV blocks.");
  w.counter("prompt_tokens_total", static_cast<double>(s.prompt_tokens),
            "Prompt tokens computed by forward passes (after prefix-cache hits).");
  w.counter("generation_tokens_total", static_cast<double>(s.generated_tokens),
            "Tokens generated, all choices.");
  w.counter("steps_total", static_cast<double>(s.steps), "Scheduler steps (forward passes).");
  w.histogram("time_to_first_token_seconds", s.ttft,
              "Time from submission to the first generated token.");
  w.histogram("inter_token_latency_seconds", s.itl,
              "Time between consecutive tokens of one choice.");
  w.histogram("e2e_request_latency_seconds", s.e2e, "Time from submission to the end.");
  w.histogram("step_duration_seconds", s.step_time, "Duration of one step (forward + sampling).");
  w.histogram("step_batch_tokens", s.batch_tokens, "Tokens in one step's batch.");
  if (http != nullptr) {
    w.gauge("http_connections_open", static_cast<double>(http->open_connections),
            "Open HTTP connections (idle, reading, answering).");
    w.counter("http_connections_total", static_cast<double>(http->accepted_total),
              "HTTP connections accepted (rejected ones included).");
    w.counter("http_connections_rejected_total", static_cast<double>(http->rejected_total),
              "HTTP connections answered 503 for being over a connection limit.");
    w.counter("http_requests_total", static_cast<double>(http->requests_total),
              "HTTP request heads read.");
  }
  return w.take();
}

}  // namespace folio::server
