// /metrics rendering: text exposition format 0.0.4 with HELP / TYPE lines,
// cumulative histogram buckets ending in +Inf, _sum and _count; and a small
// parser that checks every line of a full rendering is well formed.
#include "server/prometheus.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

namespace folio::server {
namespace prometheus_test {

ServingMetrics::Snapshot sample_snapshot() {
  ServingMetrics metrics;
  metrics.update([](ServingMetrics::Snapshot& s) {
    s.requests_running = 3;
    s.requests_waiting = 1;
    s.kv_blocks_total = 100;
    s.kv_blocks_used = 25;
    s.kv_blocks_free = 75;
    s.kv_blocks_cached = 10;
    s.kv_usage = 0.25;
    s.requests_total = 12;
    s.prompt_tokens = 345;
    s.generated_tokens = 678;
    s.ttft.observe(0.0005);  // first bucket (<= 0.001)
    s.ttft.observe(0.02);    // <= 0.025
    s.ttft.observe(0.02);
    s.ttft.observe(100.0);  // above every bound: only +Inf
    s.batch_tokens.observe(3);
  });
  return metrics.snapshot();
}

TEST(Prometheus, GaugesAndCounters) {
  const std::string text = render_prometheus(sample_snapshot());
  EXPECT_NE(text.find("# HELP folio:num_requests_running "), std::string::npos);
  EXPECT_NE(text.find("# TYPE folio:num_requests_running gauge\nfolio:num_requests_running 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE folio:kv_cache_usage_perc gauge\nfolio:kv_cache_usage_perc 0.25\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE folio:requests_total counter\nfolio:requests_total 12\n"),
            std::string::npos);
  EXPECT_NE(text.find("folio:generation_tokens_total 678\n"), std::string::npos);
  EXPECT_NE(text.find("folio:kv_cache_blocks_cached 10\n"), std::string::npos);
}

TEST(Prometheus, DeviceStreamCountersOnlyWithADevice) {
  const std::string cpu = render_prometheus(sample_snapshot());
  EXPECT_EQ(cpu.find("device_dispatches_total"), std::string::npos);
  ServingMetrics metrics;
  metrics.update([](ServingMetrics::Snapshot& s) {
    s.device_stream = true;
    s.device_dispatches = 4500;
    s.device_barriers = 3000;
    s.device_submits = 150;
  });
  const std::string text = render_prometheus(metrics.snapshot());
  EXPECT_NE(text.find("# TYPE folio:device_dispatches_total counter\n"
                      "folio:device_dispatches_total 4500\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE folio:device_barriers_total counter\n"
                      "folio:device_barriers_total 3000\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE folio:device_submits_total counter\n"
                      "folio:device_submits_total 150\n"),
            std::string::npos);
}

TEST(Prometheus, HistogramBucketsAreCumulative) {
  const std::string text = render_prometheus(sample_snapshot());
  EXPECT_NE(text.find("# TYPE folio:time_to_first_token_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_bucket{le=\"0.001\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_bucket{le=\"0.01\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_bucket{le=\"0.025\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_bucket{le=\"60\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_bucket{le=\"+Inf\"} 4\n"),
            std::string::npos);
  const double sum = 0.0005 + 0.02 + 0.02 + 100.0;
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_sum " + prometheus_number(sum) + "\n"),
            std::string::npos);
  EXPECT_NE(text.find("folio:time_to_first_token_seconds_count 4\n"), std::string::npos);
  EXPECT_NE(text.find("folio:step_batch_tokens_bucket{le=\"4\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("folio:step_batch_tokens_bucket{le=\"2\"} 0\n"), std::string::npos);
}

TEST(Prometheus, ModelLabelIsEscaped) {
  const std::string text = render_prometheus(sample_snapshot(), "a\"b\\c");
  EXPECT_NE(text.find("folio:num_requests_running{model_name=\"a\\\"b\\\\c\"} 3\n"),
            std::string::npos);
  EXPECT_NE(
      text.find(
          "folio:inter_token_latency_seconds_bucket{model_name=\"a\\\"b\\\\c\",le=\"+Inf\"} 0\n"),
      std::string::npos);
}

// Every line is a comment (HELP / TYPE for a family declared once, before
// its samples) or `name{labels} value`; every histogram's buckets are
// non-decreasing and +Inf equals _count.
TEST(Prometheus, WholeRenderingParses) {
  const std::string text = render_prometheus(sample_snapshot(), "tiny");
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  const std::regex sample_re(R"(^((folio|vllm):[a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$)");
  const std::regex help_re(R"(^# HELP ((folio|vllm):[a-zA-Z0-9_:]+) .+$)");
  const std::regex type_re(R"(^# TYPE ((folio|vllm):[a-zA-Z0-9_:]+) (gauge|counter|histogram)$)");
  std::map<std::string, std::string> types;
  std::map<std::string, double> last_bucket;
  std::map<std::string, double> inf_bucket, counts;
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, help_re)) continue;
    if (std::regex_match(line, m, type_re)) {
      EXPECT_EQ(types.count(m[1]), 0u) << "family declared twice: " << m[1];
      types[m[1]] = m[3];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, m, sample_re)) << "bad line: " << line;
    ++samples;
    std::string name = m[1];
    const double value = std::stod(m[4]);
    std::string family = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
          types.count(name.substr(0, name.size() - s.size()))) {
        family = name.substr(0, name.size() - s.size());
      }
    }
    ASSERT_EQ(types.count(family), 1u) << "sample before its TYPE: " << line;
    if (types[family] == "counter") {
      EXPECT_EQ(family.substr(family.size() - 6), "_total") << family;
    }
    if (types[family] == "histogram" && name == family + "_bucket") {
      EXPECT_GE(value, last_bucket[family]) << line;
      last_bucket[family] = value;
      if (line.find("le=\"+Inf\"") != std::string::npos) inf_bucket[family] = value;
    }
    if (types[family] == "histogram" && name == family + "_count") counts[family] = value;
  }
  EXPECT_GT(samples, 20);
  int histograms = 0;
  for (const auto& [family, type] : types) {
    if (type != "histogram") continue;
    ++histograms;
    ASSERT_TRUE(inf_bucket.count(family)) << family;
    EXPECT_EQ(inf_bucket[family], counts[family]) << family;
  }
  EXPECT_EQ(histograms, 5 + 7);  // folio's and vLLM's
}

// The vLLM-named families: vLLM's labels (model_name, engine), finished
// requests by reason, prompt tokens counted as vLLM does (hits included), the
// cache configuration as an info gauge.
TEST(Prometheus, VllmFamilies) {
  ServingMetrics metrics;
  metrics.update([](ServingMetrics::Snapshot& s) {
    s.requests_running = 2;
    s.requests_waiting = 5;
    s.kv_usage = 0.5;
    s.kv_blocks_total = 64;
    s.kv_block_size = 16;
    s.prompt_tokens = 10;  // computed after hits
    s.request_prompt_tokens = 40;
    s.prefix_queried_tokens = 40;
    s.prefix_hit_tokens = 30;
    s.choices_stopped = 3;
    s.choices_length = 2;
    s.choices_aborted = 1;
    s.requests_failed = 4;
    s.ttft.observe(0.02);
  });
  const std::string text = render_prometheus(metrics.snapshot(), "m");
  const std::string l = "{model_name=\"m\",engine=\"0\"";
  for (const std::string& want :
       {"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running" + l + "} 2\n",
        "vllm:num_requests_waiting" + l + "} 5\n", "vllm:kv_cache_usage_perc" + l + "} 0.5\n",
        "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total" + l + "} 40\n",
        "vllm:prefix_cache_queries_total" + l + "} 40\n",
        "vllm:prefix_cache_hits_total" + l + "} 30\n",
        "vllm:request_success_total" + l + ",finished_reason=\"stop\"} 3\n",
        "vllm:request_success_total" + l + ",finished_reason=\"length\"} 2\n",
        "vllm:request_success_total" + l + ",finished_reason=\"abort\"} 1\n",
        "vllm:request_success_total" + l + ",finished_reason=\"error\"} 4\n",
        "vllm:time_to_first_token_seconds_bucket" + l + ",le=\"0.025\"} 1\n",
        "vllm:cache_config_info" + l +
            ",block_size=\"16\",num_gpu_blocks=\"64\",enable_prefix_caching=\"True\"} 1\n"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want;
  }
  // Without a model name the engine label stays.
  EXPECT_NE(render_prometheus(metrics.snapshot()).find("vllm:num_requests_running{engine=\"0\"} 2\n"),
            std::string::npos);
}

// Speculative decoding's counters, with vLLM's names, only where the
// scheduler speculates.
TEST(Prometheus, SpecDecodeFamilies) {
  ServingMetrics metrics;
  EXPECT_EQ(render_prometheus(metrics.snapshot(), "m").find("spec_decode"), std::string::npos);
  metrics.update([](ServingMetrics::Snapshot& s) {
    s.spec_enabled = true;
    s.spec.record(3, 2);
    s.spec.record(2, 1);
  });
  const std::string text = render_prometheus(metrics.snapshot(), "m");
  const std::string l = "{model_name=\"m\",engine=\"0\"";
  for (const std::string& want :
       {"# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total" + l +
            "} 2\n",
        "vllm:spec_decode_num_draft_tokens_total" + l + "} 5\n",
        "vllm:spec_decode_num_accepted_tokens_total" + l + "} 3\n",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total" + l + ",position=\"0\"} 2\n",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total" + l + ",position=\"1\"} 1\n",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total" + l + ",position=\"2\"} 0\n"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want;
  }
}

TEST(Prometheus, Numbers) {
  EXPECT_EQ(prometheus_number(3), "3");
  EXPECT_EQ(prometheus_number(0.25), "0.25");
  EXPECT_EQ(prometheus_number(1e-3), "0.001");
  EXPECT_EQ(prometheus_number(1.0 / 0.0), "+Inf");
  EXPECT_EQ(prometheus_number(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(prometheus_number(0.0 / 0.0), "NaN");
}

}  // namespace
}  // namespace folio::server
