#include "server/prometheus.h"

#include <fmt/format.h>

#include <cmath>

namespace folio::server {

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

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
  // `prefix` ("folio:", "vllm:") starts every name; `labels` (already
  // rendered, e.g. model_name="m") go on every sample.
  Writer(std::string_view prefix, std::string labels) : prefix_(prefix), labels_(std::move(labels)) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += fmt::format("# HELP {}{} {}\n# TYPE {}{} {}\n", prefix_, name, help, prefix_, name, type);
  }

  void sample(std::string_view name, double v, std::string_view extra_label = "") {
    out_ += prefix_;
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
  std::string_view prefix_;
  std::string labels_;
  std::string out_;
};

// The families routers and dashboards built for vLLM read by name, with
// vLLM's names, types, labels (model_name, engine) and meanings
// (vllm/v1/metrics/loggers.py). Counters carry the _total suffix that
// prometheus_client adds. The histograms share folio's buckets.
std::string render_vllm_families(const ServingMetrics::Snapshot& s,
                                 const std::string& model_label) {
  Writer w("vllm:", model_label.empty() ? std::string("engine=\"0\"")
                                        : model_label + ",engine=\"0\"");
  w.gauge("num_requests_running", static_cast<double>(s.requests_running),
          "Number of requests in model execution batches.");
  w.gauge("num_requests_waiting", static_cast<double>(s.requests_waiting),
          "Number of requests waiting to be processed.");
  w.gauge("kv_cache_usage_perc", s.kv_usage, "KV-cache usage. 1 means 100 percent usage.");
  w.gauge("gpu_cache_usage_perc", s.kv_usage,
          "KV-cache usage. 1 means 100 percent usage. DEPRECATED: use vllm:kv_cache_usage_perc.");
  w.counter("prefix_cache_queries_total", static_cast<double>(s.prefix_queried_tokens),
            "Prefix cache queries, in terms of number of queried tokens.");
  w.counter("prefix_cache_hits_total", static_cast<double>(s.prefix_hit_tokens),
            "Prefix cache hits, in terms of number of cached tokens.");
  w.counter("num_preemptions_total", static_cast<double>(s.preemptions),
            "Cumulative number of preemption from the engine.");
  w.counter("prompt_tokens_total", static_cast<double>(s.request_prompt_tokens),
            "Number of prefill tokens processed.");
  w.counter("generation_tokens_total", static_cast<double>(s.generated_tokens),
            "Number of generation tokens processed.");
  w.family("request_success_total", "counter", "Count of successfully processed requests.");
  w.sample("request_success_total", static_cast<double>(s.choices_stopped),
           "finished_reason=\"stop\"");
  w.sample("request_success_total", static_cast<double>(s.choices_length),
           "finished_reason=\"length\"");
  w.sample("request_success_total", static_cast<double>(s.choices_aborted),
           "finished_reason=\"abort\"");
  w.sample("request_success_total", static_cast<double>(s.requests_failed),
           "finished_reason=\"error\"");
  w.histogram("time_to_first_token_seconds", s.ttft, "Histogram of time to first token in seconds.");
  w.histogram("inter_token_latency_seconds", s.itl, "Histogram of inter-token latency in seconds.");
  w.histogram("time_per_output_token_seconds", s.itl,
              "Histogram of time per output token in seconds.");
  w.histogram("e2e_request_latency_seconds", s.e2e,
              "Histogram of e2e request latency in seconds.");
  w.histogram("request_prompt_tokens", s.request_prompt, "Number of prefill tokens processed.");
  w.histogram("request_generation_tokens", s.request_generation,
              "Number of generation tokens processed.");
  w.histogram("iteration_tokens_total", s.batch_tokens,
              "Histogram of number of tokens per engine_step.");
  if (s.spec_enabled) {  // vllm/v1/spec_decode/metrics.py
    w.counter("spec_decode_num_drafts_total", static_cast<double>(s.spec.drafts),
              "Number of spec decoding drafts.");
    w.counter("spec_decode_num_draft_tokens_total", static_cast<double>(s.spec.draft_tokens),
              "Number of draft tokens.");
    w.counter("spec_decode_num_accepted_tokens_total", static_cast<double>(s.spec.accepted_tokens),
              "Number of accepted tokens.");
    w.family("spec_decode_num_accepted_tokens_per_pos_total", "counter",
             "Accepted tokens per draft position.");
    for (size_t i = 0; i < s.spec.accepted_per_pos.size(); ++i) {
      w.sample("spec_decode_num_accepted_tokens_per_pos_total",
               static_cast<double>(s.spec.accepted_per_pos[i]), fmt::format("position=\"{}\"", i));
    }
  }
  // An info metric as vLLM writes it: a gauge fixed at 1 whose labels carry
  // the cache configuration.
  w.family("cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  w.sample("cache_config_info", 1,
           fmt::format("block_size=\"{}\",num_gpu_blocks=\"{}\",enable_prefix_caching=\"{}\"",
                       s.kv_block_size, s.kv_blocks_total, s.kv_block_size > 0 ? "True" : "False"));
  return w.take();
}

}  // namespace

std::string render_prometheus(const ServingMetrics::Snapshot& s, std::string_view model,
                              const TransportStats* http) {
  const std::string model_label =
      model.empty() ? std::string() : fmt::format("model_name=\"{}\"", escape_label(model));
  Writer w("folio:", model_label);
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
  if (s.device_stream) {
    w.counter("device_dispatches_total", static_cast<double>(s.device_dispatches),
              "Compute dispatches the device recorded.");
    w.counter("device_barriers_total", static_cast<double>(s.device_barriers),
              "Pipeline barriers the device recorded (each waits for all work before it).");
    w.counter("device_submits_total", static_cast<double>(s.device_submits),
              "Command buffers the device submitted to its queue.");
  }
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
  return w.take() + render_vllm_families(s, model_label);
}

}  // namespace folio::server
