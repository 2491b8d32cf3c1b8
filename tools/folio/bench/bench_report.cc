#include "bench/bench_report.h"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace folio::tools {

namespace {

std::string size_str(uint64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string params_str(uint64_t n) {
  const auto d = static_cast<double>(n);
  if (d >= 1e9) return fmt::format("{:.2f} B", d / 1e9);
  return fmt::format("{:.2f} M", d / 1e6);
}

constexpr const char* kRowFormat =
    "| {:<28} | {:>10} | {:>9} | {:<16} | {:>7} | {:<4} | {:>4} | {:>12} | {:>20} |";

constexpr const char* kSpecRowFormat =
    "| {:<24} | {:<24} | {:<16} | {:>7} | {:<18} | {:>5} | {:>16} | {:>16} | {:>7} | {:>15} | "
    "{:<4} |";

}  // namespace

double BenchRecord::bw_limit_tokens_per_s() const {
  if (result.test.is_prefill() || bw_gbps <= 0 || model.decode_bytes == 0) return 0;
  return static_cast<double>(result.test.n_seqs) * bw_gbps * 1e9 /
         static_cast<double>(model.decode_bytes);
}

std::string bench_json_line(const BenchRecord& r) {
  const BenchTest& t = r.result.test;
  nlohmann::ordered_json j = {
      {"test", t.name()},
      {"n_prompt", t.n_prompt},
      {"n_gen", t.n_gen},
      {"n_seqs", t.n_seqs},
      {"threads", r.threads},
      {"tokens_per_s", r.result.mean_ts},
      {"stddev", r.result.stddev_ts},
      {"samples_ts", r.result.samples_ts},
      {"samples_ns", r.result.samples_ns},
      {"repetitions", r.result.samples_ts.size()},
      {"model", r.model.file},
      {"model_type", r.model.type},
      {"model_size", r.model.size_bytes},
      {"n_params", r.model.n_params},
      {"backend", r.backend},
      {"isa", r.isa},
      {"repack", r.repack},
      {"kv_type", r.kv_type},
      {"n_ubatch", r.n_ubatch},
      {"tg_prompt", t.is_prefill() ? 0 : r.tg_prompt},
      {"decode_bytes", r.model.decode_bytes},
      {"state_bytes", r.model.state_bytes},
  };
  const double limit = r.bw_limit_tokens_per_s();
  if (limit > 0) {
    j["bw_gbps"] = r.bw_gbps;
    j["bw_limit_tokens_per_s"] = limit;
    j["bw_fraction"] = r.result.mean_ts / limit;
    if (r.model.state_bytes > 0) {  // the weights and every sequence's state
      const double n = static_cast<double>(r.result.test.n_seqs);
      j["bw_fraction_with_state"] = r.result.mean_ts *
                                    (static_cast<double>(r.model.decode_bytes) +
                                     n * static_cast<double>(r.model.state_bytes)) /
                                    (n * r.bw_gbps * 1e9);
    }
  }
  if (r.result.stream) {
    j["dispatches_per_token"] = r.result.stream->dispatches;
    j["barriers_per_token"] = r.result.stream->barriers;
    j["submits_per_token"] = r.result.stream->submits;
    j["recorded_steps"] = r.result.stream->recorded_steps;
    j["replayed_steps"] = r.result.stream->replayed_steps;
  }
  if (r.result.profile) {
    const BenchProfile& p = *r.result.profile;
    j["profile_wall_ns"] = p.wall_ns;
    j["profile_forwards"] = p.forwards;
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const model::OpProfileRow& op : p.ops) {
      ops.push_back({{"op", op.name}, {"calls", op.count}, {"ns", op.ns}});
    }
    j["profile"] = std::move(ops);
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string membench_json_line(const MemBandwidthResult& m) {
  nlohmann::ordered_json j = {{"test", "membench"},
                              {"threads", m.threads},
                              {"triad_gbps", m.triad_gbps},
                              {"read_gbps", m.read_gbps},
                              {"array_bytes", m.array_bytes},
                              {"runs", m.runs},
                              {"pages", m.huge_pages ? "2m" : "4k"}};
  return j.dump();
}

std::string bench_table_header(bool with_bw, bool with_stream) {
  std::string h = fmt::format(fmt::runtime(kRowFormat), "model", "size", "params", "backend",
                              "threads", "kv", "ub", "test", "t/s");
  std::string sep = fmt::format(
      "| {:-<28} | {:->10}:| {:->9}:| {:-<16} | {:->7}:| {:-<4} | {:->4}:| "
      "{:->12}:| {:->20}:|",
      "", "", "", "", "", "", "", "", "");
  if (with_bw) {
    h += fmt::format(" {:>9} | {:>5} |", "B/tok", "% BW");
    sep += fmt::format(" {:->9}:| {:->5}:|", "", "");
  }
  if (with_stream) {
    h += fmt::format(" {:>7} | {:>7} | {:>6} |", "disp", "barr", "subm");
    sep += fmt::format(" {:->7}:| {:->7}:| {:->6}:|", "", "", "");
  }
  return h + "\n" + sep;
}

std::string bench_table_row(const BenchRecord& r, bool with_bw, bool with_stream) {
  std::string row = fmt::format(
      fmt::runtime(kRowFormat), r.model.type, size_str(r.model.size_bytes),
      params_str(r.model.n_params), r.backend, r.threads, r.kv_type, r.n_ubatch,
      r.result.test.name(), fmt::format("{:.2f} ± {:.2f}", r.result.mean_ts, r.result.stddev_ts));
  if (with_bw) {
    const double limit = r.bw_limit_tokens_per_s();
    if (limit > 0) {
      const double per_token =
          static_cast<double>(r.model.decode_bytes) / static_cast<double>(r.result.test.n_seqs);
      row += fmt::format(" {:>9} | {:>5} |", fmt::format("{:.0f} MiB", per_token / (1 << 20)),
                         fmt::format("{:.0f}%", 100.0 * r.result.mean_ts / limit));
    } else {
      row += fmt::format(" {:>9} | {:>5} |", "", "");
    }
  }
  if (with_stream) {
    if (r.result.stream) {
      row += fmt::format(" {:>7.1f} | {:>7.1f} | {:>6.2f} |", r.result.stream->dispatches,
                         r.result.stream->barriers, r.result.stream->submits);
    } else {
      row += fmt::format(" {:>7} | {:>7} | {:>6} |", "", "", "");
    }
  }
  return row;
}

std::string bench_profile_table(const BenchRecord& r) {
  if (!r.result.profile) return "";
  const BenchProfile& p = *r.result.profile;
  const double fwd = static_cast<double>(std::max<int64_t>(p.forwards, 1));
  const double wall = std::max(p.wall_ns, 1.0);
  std::string out = fmt::format(
      "op profile: {}, {} threads, {}: {} repetitions, {} timed forwards, {:.2f} ms\n",
      r.result.test.name(), r.threads, r.backend, p.repetitions, p.forwards, p.wall_ns * 1e-6);
  constexpr const char* kProfileRow = "| {:<20} | {:>9} | {:>8} | {:>10} | {:>9} | {:>6} |\n";
  out += fmt::format(fmt::runtime(kProfileRow), "op", "calls/fwd", "calls", "ms", "us/call",
                     "share");
  out += fmt::format("| {:-<20} | {:->9}:| {:->8}:| {:->10}:| {:->9}:| {:->6}:|\n", "", "", "", "",
                     "", "");
  for (const model::OpProfileRow& op : p.ops) {
    out += fmt::format(fmt::runtime(kProfileRow), op.name,
                       fmt::format("{:.1f}", static_cast<double>(op.count) / fwd), op.count,
                       fmt::format("{:.3f}", op.ns * 1e-6),
                       fmt::format("{:.2f}", op.ns * 1e-3 / static_cast<double>(op.count)),
                       fmt::format("{:.1f}%", 100.0 * op.ns / wall));
  }
  const double outside = std::max(0.0, p.wall_ns - p.ops_ns());
  out += fmt::format(fmt::runtime(kProfileRow), "(outside ops)", "", "",
                     fmt::format("{:.3f}", outside * 1e-6), "",
                     fmt::format("{:.1f}%", 100.0 * outside / wall));
  out += fmt::format(fmt::runtime(kProfileRow), "(total)", "", "",
                     fmt::format("{:.3f}", p.wall_ns * 1e-6), "", "100.0%");
  return out;
}

std::string spec_bench_json_line(const SpecBenchRecord& r) {
  const SpecBenchResult& s = r.result;
  nlohmann::ordered_json j = {
      {"test", "spec"},
      {"spec_type", r.spec_type},
      {"prompt", s.prompt},
      {"n_prompt", s.n_prompt},
      {"n_gen", s.n_gen},
      {"n_generated", s.n_generated},
      {"threads", r.threads},
      {"model", r.model.file},
      {"model_type", r.model.type},
      {"draft_model", r.draft_model},
      {"draft_max", r.draft_max},
      {"backend", r.backend},
      {"isa", r.isa},
      {"kv_type", r.kv_type},
      {"repetitions", s.base_ts.size()},
      {"base_tokens_per_s", s.base.mean},
      {"base_stddev", s.base.stddev},
      {"base_samples_ts", s.base_ts},
      {"spec_tokens_per_s", s.spec.mean},
      {"spec_stddev", s.spec.stddev},
      {"spec_samples_ts", s.spec_ts},
      {"speedup", s.speedup},
      {"verifications", s.counts.drafts},
      {"draft_tokens", s.counts.draft_tokens},
      {"accepted_tokens", s.counts.accepted_tokens},
      {"acceptance", s.counts.acceptance()},
      {"accepted_per_pos", s.counts.accepted_per_pos},
      {"identical", s.identical},
  };
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string spec_bench_table_header() {
  std::string h = fmt::format(fmt::runtime(kSpecRowFormat), "model", "draft", "backend",
                              "threads", "prompt", "n", "t/s without", "t/s with", "speedup",
                              "accepted", "same");
  std::string sep = fmt::format(
      "| {:-<24} | {:-<24} | {:-<16} | {:->7}:| {:-<18} | {:->5}:| {:->16}:| {:->16}:| {:->7}:| "
      "{:->15}:| {:-<4} |",
      "", "", "", "", "", "", "", "", "", "", "");
  return h + "\n" + sep;
}

std::string spec_bench_table_row(const SpecBenchRecord& r) {
  const SpecBenchResult& s = r.result;
  const std::string draft =
      r.draft_model.empty() ? fmt::format("{} <= {}", r.spec_type, r.draft_max)
                            : fmt::format("{} <= {}", r.draft_model, r.draft_max);
  return fmt::format(
      fmt::runtime(kSpecRowFormat), r.model.type, draft, r.backend, r.threads, s.prompt,
      s.n_generated, fmt::format("{:.2f} ± {:.2f}", s.base.mean, s.base.stddev),
      fmt::format("{:.2f} ± {:.2f}", s.spec.mean, s.spec.stddev),
      fmt::format("{:.2f}x", s.speedup),
      fmt::format("{:.1f}% of {}", 100.0 * s.counts.acceptance(), s.counts.draft_tokens),
      s.identical ? "yes" : "NO");
}

}  // namespace folio::tools
