// `folio bench` building blocks: test names and order, statistics, model
// facts (size, parameters, decode bytes), the JSON line external checks
// parse, the table, a real run on the tiny reference models, the
// speculation measurement (with and without, same output), and the STREAM
// triad on small arrays.
#include "bench/bench_runner.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "bench/bench_report.h"
#include "bench/mem_bandwidth.h"
#include "bench/spec_bench.h"
#include "core/aligned.h"
#include "core/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace folio::tools {
namespace bench_runner_test {

const std::string kModels = std::string(FOLIO_REFDATA_DIR) + "/models/";

TEST(BenchTest, NamesFollowLlamaBench) {
  EXPECT_EQ((BenchTest{512, 0, 1}).name(), "pp512");
  EXPECT_EQ((BenchTest{0, 128, 1}).name(), "tg128");
  EXPECT_EQ((BenchTest{0, 128, 8}).name(), "tg128x8");
  EXPECT_EQ((BenchTest{0, 64, 32}).name(), "tg64x32");
  EXPECT_TRUE((BenchTest{512, 0, 1}).is_prefill());
  EXPECT_FALSE((BenchTest{0, 1, 1}).is_prefill());
}

TEST(BenchTest, MakeTestsOrdersPrefillThenGenerationBySeqs) {
  const std::vector<int64_t> p = {512, 0, 128};
  const std::vector<int64_t> n = {128, 0, 32};
  const std::vector<int> s = {1, 8};
  std::vector<std::string> names;
  for (const BenchTest& t : make_bench_tests(p, n, s)) names.push_back(t.name());
  EXPECT_EQ(names,
            (std::vector<std::string>{"pp512", "pp128", "tg128", "tg128x8", "tg32", "tg32x8"}));
  const std::vector<int64_t> none = {0};
  EXPECT_TRUE(make_bench_tests(none, none, s).empty());
}

TEST(BenchStats, MeanAndSampleStddev) {
  const std::vector<double> v = {1, 2, 3, 4};
  const MeanStddev m = mean_stddev(v);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.stddev, 1.2909944487358056, 1e-12);  // sqrt(5/3)
  const std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(mean_stddev(one).mean, 7);
  EXPECT_DOUBLE_EQ(mean_stddev(one).stddev, 0);
  EXPECT_DOUBLE_EQ(mean_stddev({}).mean, 0);
}

TEST(BenchModel, FileTypeNames) {
  EXPECT_STREQ(file_type_name(15), "Q4_K_M");
  EXPECT_STREQ(file_type_name(7), "Q8_0");
  EXPECT_STREQ(file_type_name(2), "Q4_0");
  EXPECT_STREQ(file_type_name(1 | 1024), "F16");  // "guessed" bit
  EXPECT_STREQ(file_type_name(999), "");
}

// Expected facts from the file itself: size and parameters of all tensors;
// decode reads everything but token_embd (one row), plus the full
// token_embd again when the output is tied to it.
void expect_model_info(const std::string& file, bool tied) {
  auto m = model::Model::load(kModels + file);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  uint64_t size = 0, params = 0, embd = 0;
  for (const gguf::TensorInfo& t : (*m)->file().tensors()) {
    size += t.nbytes;
    params += static_cast<uint64_t>(t.nelements());
    if (t.name == "token_embd.weight") embd = t.nbytes;
  }
  ASSERT_GT(embd, 0u);
  const auto n_vocab = static_cast<uint64_t>((*m)->config().n_vocab);
  const BenchModelInfo info = bench_model_info(**m);
  EXPECT_EQ(info.file, file);
  EXPECT_EQ(info.size_bytes, size);
  EXPECT_EQ(info.n_params, params);
  EXPECT_EQ(info.decode_bytes, size - embd + embd / n_vocab + (tied ? embd : 0));
  EXPECT_EQ(info.type.rfind((*m)->config().arch + " ", 0), 0u) << info.type;
  EXPECT_NE(info.type.find("F32"), std::string::npos) << info.type;
  EXPECT_EQ(info.state_bytes, 0u);  // no recurrent layers
}

TEST(BenchModel, InfoOfUntiedModel) {
  expect_model_info("tiny-llama-f32.gguf", false);
}
TEST(BenchModel, InfoOfTiedModel) {
  expect_model_info("tiny-qwen3-f32.gguf", true);
}

// A decode step reads and writes every DeltaNet layer's conv taps (K - 1
// inputs of each conv channel, from blk.N.ssm_conv1d.weight [K, C]) and its
// state (state_size x inner_size floats), once per sequence.
TEST(BenchModel, InfoOfHybridModelCountsItsState) {
  auto m = model::Model::load(kModels + "tiny-qwen35-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const gguf::GgufFile& f = (*m)->file();
  const Result<uint32_t> s_k = f.get_u32("qwen35.ssm.state_size");
  const Result<uint32_t> inner = f.get_u32("qwen35.ssm.inner_size");
  ASSERT_TRUE(s_k.ok() && inner.ok());
  uint64_t per_step = 0;
  int layers = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.name.ends_with(".ssm_conv1d.weight")) {
      ++layers;
      per_step += static_cast<uint64_t>((t.ne[0] - 1) * t.ne[1]) * 4 + uint64_t{*s_k} * *inner * 4;
    }
  }
  ASSERT_EQ(layers, 3);
  EXPECT_EQ(bench_model_info(**m).state_bytes, 2 * per_step);
}

// A dense model and a hybrid one (DeltaNet state slots beside the paged KV).
class BenchRunnerTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    auto m = model::Model::load(kModels + GetParam());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    ctx_ = model::ForwardContext::cpu(2);
    options_.repetitions = 2;
    options_.n_ubatch = 5;  // 12 prompt tokens: chunks of 5, 5 and 2
    options_.tg_prompt = 3;
    options_.warmup = true;
  }

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<model::ForwardContext> ctx_;
  BenchOptions options_;
};

TEST_P(BenchRunnerTest, RunsEveryTestAndFreesTheCache) {
  const std::vector<int64_t> p = {12};
  const std::vector<int64_t> n = {4};
  const std::vector<int> s = {1, 3};
  const std::vector<BenchTest> tests = make_bench_tests(p, n, s);
  ASSERT_EQ(tests.size(), 3u);
  auto runner = BenchRunner::create(*model_, *ctx_, tests, options_);
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  // Sized for the largest test: 3 sequences of 3 + 4 tokens in blocks of 16.
  EXPECT_EQ((*runner)->cache().n_ctx(), 12);
  EXPECT_EQ((*runner)->cache().block_manager()->pool().n_blocks(), 3 + 1);
  for (const BenchTest& t : tests) {
    auto r = (*runner)->run(t);
    ASSERT_TRUE(r.ok()) << t.name() << ": " << r.status().to_string();
    EXPECT_EQ(r->test.name(), t.name());
    ASSERT_EQ(r->samples_ts.size(), 2u);
    ASSERT_EQ(r->samples_ns.size(), 2u);
    const double tokens = t.is_prefill() ? 12.0 : 4.0 * t.n_seqs;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_GT(r->samples_ns[i], 0);
      EXPECT_NEAR(r->samples_ts[i], tokens / (r->samples_ns[i] * 1e-9), 1e-6 * r->samples_ts[i]);
    }
    EXPECT_DOUBLE_EQ(r->mean_ts, mean_stddev(r->samples_ts).mean);
    EXPECT_DOUBLE_EQ(r->stddev_ts, mean_stddev(r->samples_ts).stddev);
    EXPECT_EQ((*runner)->cache().block_manager()->pool().n_used(), 0) << t.name();
  }
  // A test larger than the runner was made for is refused, not run.
  EXPECT_FALSE((*runner)->run(BenchTest{0, 4, 4}).ok());
  EXPECT_FALSE((*runner)->run(BenchTest{13, 0, 1}).ok());
}

// The profile counts every op of the timed forwards (no more: without
// warmup or untimed prompt, the context's op counter must agree) per op
// kind; without the option there is none.
TEST_P(BenchRunnerTest, ProfileListsTheOpsOfTheTimedForwards) {
  const std::vector<int64_t> p = {12};
  const std::vector<int64_t> n = {4};
  const std::vector<int> s = {1};
  const std::vector<BenchTest> tests = make_bench_tests(p, n, s);
  options_.warmup = false;
  options_.tg_prompt = 0;
  options_.profile = true;
  auto runner = BenchRunner::create(*model_, *ctx_, tests, options_);
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  for (const BenchTest& t : tests) {
    const uint64_t ops0 = ctx_->ops_run();
    auto r = (*runner)->run(t);
    ASSERT_TRUE(r.ok()) << t.name() << ": " << r.status().to_string();
    const uint64_t ran = ctx_->ops_run() - ops0;
    ASSERT_TRUE(r->profile.has_value()) << t.name();
    const BenchProfile& prof = *r->profile;
    EXPECT_EQ(prof.repetitions, 2);
    EXPECT_EQ(prof.forwards, t.is_prefill() ? 2 * 3 : 2 * 4) << t.name();  // chunks 5, 5, 2
    double wall = 0;
    for (double ns : r->samples_ns) wall += ns;
    EXPECT_DOUBLE_EQ(prof.wall_ns, wall);
    EXPECT_LE(prof.ops_ns(), prof.wall_ns);
    uint64_t calls = 0;
    std::set<std::string> kinds;
    for (const model::OpProfileRow& op : prof.ops) {
      calls += op.count;
      EXPECT_TRUE(kinds.insert(op.name).second) << "kind listed twice: " << op.name;
    }
    EXPECT_EQ(calls, ran) << t.name();
    // Every forward embeds its tokens and multiplies by weights.
    EXPECT_TRUE(kinds.count("get_rows")) << t.name();
    EXPECT_TRUE(kinds.count("mul_mat") || kinds.count("mul_mat_glu")) << t.name();
    for (size_t i = 1; i < prof.ops.size(); ++i) EXPECT_GE(prof.ops[i - 1].ns, prof.ops[i].ns);

    BenchRecord rec;
    rec.threads = 2;
    rec.backend = "cpu";
    rec.result = *r;
    const std::string table = bench_profile_table(rec);
    for (const std::string& k : kinds) {
      EXPECT_NE(table.find("| " + k + " "), std::string::npos) << k << "\n" << table;
    }
    EXPECT_NE(table.find("(outside ops)"), std::string::npos) << table;
    const auto j = nlohmann::json::parse(bench_json_line(rec));
    EXPECT_EQ(j.at("profile").size(), prof.ops.size());
    EXPECT_EQ(j.at("profile_forwards"), prof.forwards);
  }
  options_.profile = false;
  auto plain = BenchRunner::create(*model_, *ctx_, tests, options_);
  ASSERT_TRUE(plain.ok());
  auto r = (*plain)->run(tests[0]);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->profile.has_value());
  BenchRecord rec;
  rec.result = *r;
  EXPECT_EQ(bench_profile_table(rec), "");
  EXPECT_FALSE(nlohmann::json::parse(bench_json_line(rec)).contains("profile"));
}

TEST_P(BenchRunnerTest, RejectsBadOptions) {
  const std::vector<BenchTest> tests = {BenchTest{8, 0, 1}};
  BenchOptions o = options_;
  o.repetitions = 0;
  EXPECT_FALSE(BenchRunner::create(*model_, *ctx_, tests, o).ok());
  o = options_;
  o.n_ubatch = 0;
  EXPECT_FALSE(BenchRunner::create(*model_, *ctx_, tests, o).ok());
  EXPECT_FALSE(BenchRunner::create(*model_, *ctx_, {}, options_).ok());
  const std::vector<BenchTest> bad = {BenchTest{8, 4, 1}};  // both pp and tg
  EXPECT_FALSE(BenchRunner::create(*model_, *ctx_, bad, options_).ok());
}

INSTANTIATE_TEST_SUITE_P(Models, BenchRunnerTest,
                         ::testing::Values("tiny-llama-f32.gguf", "tiny-qwen35-f32.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).find("qwen35") != std::string::npos
                                      ? std::string("hybrid")
                                      : std::string("dense");
                         });

BenchRecord sample_record(const BenchTest& t) {
  BenchRecord r;
  r.model.file = "m.gguf";
  r.model.type = "llama 1.1B Q4_0";
  r.model.size_bytes = 600u << 20;
  r.model.n_params = 1100000000;
  r.model.decode_bytes = 500u << 20;
  r.backend = "cpu-avx512";
  r.isa = "avx512";
  r.threads = 2;
  r.kv_type = "f16";
  r.n_ubatch = 512;
  r.tg_prompt = 1;
  r.result.test = t;
  r.result.samples_ts = {10.0, 12.0};
  r.result.samples_ns = {1e9, 0.8e9};
  r.result.mean_ts = 11.0;
  r.result.stddev_ts = 1.4142135623730951;
  return r;
}

TEST(BenchReport, JsonLineHasTheStableKeys) {
  BenchRecord r = sample_record(BenchTest{0, 128, 8});
  const std::string line = bench_json_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("test"), "tg128x8");
  EXPECT_EQ(j.at("n_prompt"), 0);
  EXPECT_EQ(j.at("n_gen"), 128);
  EXPECT_EQ(j.at("n_seqs"), 8);
  EXPECT_EQ(j.at("threads"), 2);
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s").get<double>(), 11.0);
  EXPECT_DOUBLE_EQ(j.at("stddev").get<double>(), 1.4142135623730951);
  EXPECT_EQ(j.at("samples_ts").size(), 2u);
  EXPECT_EQ(j.at("model"), "m.gguf");
  EXPECT_EQ(j.at("model_type"), "llama 1.1B Q4_0");
  EXPECT_EQ(j.at("model_size"), 600u << 20);
  EXPECT_EQ(j.at("n_params"), 1100000000u);
  EXPECT_EQ(j.at("isa"), "avx512");
  EXPECT_EQ(j.at("kv_type"), "f16");
  EXPECT_EQ(j.at("tg_prompt"), 1);
  EXPECT_FALSE(j.contains("bw_fraction"));  // no bandwidth given

  r.bw_gbps = 10.0;
  const auto k = nlohmann::json::parse(bench_json_line(r));
  const double limit = 8 * 10e9 / static_cast<double>(500u << 20);
  EXPECT_DOUBLE_EQ(k.at("bw_limit_tokens_per_s").get<double>(), limit);
  EXPECT_DOUBLE_EQ(k.at("bw_fraction").get<double>(), 11.0 / limit);
  EXPECT_EQ(k.at("state_bytes"), 0u);
  EXPECT_FALSE(k.contains("bw_fraction_with_state"));  // no recurrent state

  // With recurrent state: 8 sequences' states move beside the weights.
  r.model.state_bytes = 10u << 20;
  const auto h = nlohmann::json::parse(bench_json_line(r));
  EXPECT_DOUBLE_EQ(h.at("bw_fraction").get<double>(), 11.0 / limit);
  EXPECT_DOUBLE_EQ(h.at("bw_fraction_with_state").get<double>(),
                   11.0 * static_cast<double>((500u << 20) + 8 * (10u << 20)) / (8 * 10e9));

  // Prefill: no bandwidth fraction even when the bandwidth is known.
  BenchRecord pp = sample_record(BenchTest{512, 0, 1});
  pp.bw_gbps = 10.0;
  const auto q = nlohmann::json::parse(bench_json_line(pp));
  EXPECT_EQ(q.at("test"), "pp512");
  EXPECT_EQ(q.at("n_prompt"), 512);
  EXPECT_EQ(q.at("n_seqs"), 1);
  EXPECT_EQ(q.at("tg_prompt"), 0);
  EXPECT_FALSE(q.contains("bw_fraction"));
}

TEST(BenchReport, StreamCountsOnlyWithADevice) {
  BenchRecord r = sample_record(BenchTest{0, 128, 1});
  const auto cpu = nlohmann::json::parse(bench_json_line(r));
  EXPECT_FALSE(cpu.contains("dispatches_per_token"));
  r.result.stream = StreamPerForward{301.0, 240.5, 10.25, 2, 126};
  const auto dev = nlohmann::json::parse(bench_json_line(r));
  EXPECT_EQ(dev.at("recorded_steps").get<int64_t>(), 2);
  EXPECT_EQ(dev.at("replayed_steps").get<int64_t>(), 126);
  EXPECT_DOUBLE_EQ(dev.at("dispatches_per_token").get<double>(), 301.0);
  EXPECT_DOUBLE_EQ(dev.at("barriers_per_token").get<double>(), 240.5);
  EXPECT_DOUBLE_EQ(dev.at("submits_per_token").get<double>(), 10.25);
  const std::string header = bench_table_header(false, true);
  const std::string row = bench_table_row(r, false, true);
  EXPECT_NE(header.find("barr"), std::string::npos);
  EXPECT_NE(row.find("240.5"), std::string::npos) << row;
  auto cells = [](const std::string& s) { return std::count(s.begin(), s.end(), '|'); };
  EXPECT_EQ(cells(header.substr(0, header.find('\n'))), cells(row));
}

TEST(BenchReport, TableRows) {
  const std::string header = bench_table_header(false);
  EXPECT_NE(header.find("| model"), std::string::npos);
  EXPECT_EQ(header.find("% BW"), std::string::npos);
  BenchRecord r = sample_record(BenchTest{0, 128, 1});
  const std::string row = bench_table_row(r, false);
  EXPECT_NE(row.find("tg128"), std::string::npos);
  EXPECT_NE(row.find("11.00 ± 1.41"), std::string::npos) << row;
  EXPECT_NE(row.find("1.10 B"), std::string::npos) << row;
  r.bw_gbps = 10.0;  // limit 10e9 / 500 MiB = 19.07 t/s: 11 is 58%
  const std::string bw_row = bench_table_row(r, true);
  EXPECT_NE(bench_table_header(true).find("% BW"), std::string::npos);
  EXPECT_NE(bw_row.find("500 MiB"), std::string::npos) << bw_row;
  EXPECT_NE(bw_row.find("58%"), std::string::npos) << bw_row;
  // Same number of cells in header and rows.
  auto cells = [](const std::string& s) { return std::count(s.begin(), s.end(), '|'); };
  EXPECT_EQ(cells(bench_table_header(true).substr(0, bench_table_header(true).find('\n'))),
            cells(bw_row));
}

// `folio bench --spec`'s measurement on a dense and a hybrid model: n-gram
// lookup on a prompt that repeats itself, and the model drafting for itself
// (every draft accepted); the output equals plain decoding's and every
// cache ends empty.
class SpecBenchTest : public BenchRunnerTest {
 protected:
  void SetUp() override {
    BenchRunnerTest::SetUp();
    if (HasFatalFailure()) return;
    auto tok = tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
    cache_ = make_paged(*model_, 1, 1, 4);
    ASSERT_NE(cache_, nullptr);
    opts_.repetitions = 2;
    opts_.n_gen = 24;
    opts_.n_batch = 8;
    opts_.spec.draft_max = 4;
    opts_.spec.min_accept = 0.0;  // keep speculating: every step verifies
  }

  // A paged cache of 256 tokens; n_seq sequences made, room for max_seqs.
  static std::unique_ptr<cache::KvCache> make_paged(const model::Model& m, int n_seq,
                                                    int max_seqs, int draft_slots) {
    cache::KvCacheOptions o;
    o.storage = cache::KvStorage::kPaged;
    o.type = DType::F32;
    o.block_size = 16;
    o.n_ctx = 256;
    o.n_blocks = static_cast<int32_t>(max_seqs * 16 + 1);
    o.n_seq = n_seq;
    o.max_seqs = max_seqs;
    o.max_step_tokens = 64;
    o.draft_slots = draft_slots;
    auto c = m.make_cache(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::vector<int32_t> prompt() const {
    tokenizer::TokenizeOptions to;
    to.add_special = true;
    return tok_->tokenize("1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,", to);
  }

  void expect_result(const SpecBenchResult& r, const std::vector<int32_t>& p) const {
    EXPECT_EQ(r.prompt, "p");
    EXPECT_EQ(r.n_prompt, static_cast<int64_t>(p.size()));
    EXPECT_EQ(r.n_gen, 24);
    EXPECT_GT(r.n_generated, 0);
    EXPECT_LE(r.n_generated, 24);
    ASSERT_EQ(r.base_ts.size(), 2u);
    ASSERT_EQ(r.spec_ts.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_GT(r.base_ts[i], 0);
      EXPECT_GT(r.spec_ts[i], 0);
    }
    EXPECT_DOUBLE_EQ(r.base.mean, mean_stddev(r.base_ts).mean);
    EXPECT_DOUBLE_EQ(r.spec.mean, mean_stddev(r.spec_ts).mean);
    EXPECT_DOUBLE_EQ(r.speedup, r.spec.mean / r.base.mean);
    EXPECT_TRUE(r.identical);
    EXPECT_LE(r.counts.accepted_tokens, r.counts.draft_tokens);
    uint64_t per_pos = 0;
    for (uint64_t a : r.counts.accepted_per_pos) per_pos += a;
    EXPECT_EQ(per_pos, r.counts.accepted_tokens);
    const cache::KvCacheManager* m = cache_->block_manager();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->pool().n_used(), 0);
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<cache::KvCache> cache_;
  SpecBenchOptions opts_;
};

TEST_P(SpecBenchTest, NgramLookupGivesThePlainOutput) {
  opts_.spec.type = SpecType::kNgram;
  const std::vector<int32_t> p = prompt();
  auto r = run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, p, "p", opts_);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  expect_result(*r, p);
  // The dense model continues the count, so its n-grams recur and drafts
  // are verified; the hybrid one's text does not repeat the prompt.
  if (std::string(GetParam()).find("qwen35") == std::string::npos) {
    EXPECT_GT(r->counts.drafts, 0u);
    EXPECT_GT(r->counts.accepted_tokens, 0u);
  }
}

TEST_P(SpecBenchTest, SelfDraftIsAlwaysAccepted) {
  auto draft_cache = make_paged(*model_, 0, 2, 0);
  ASSERT_NE(draft_cache, nullptr);
  auto draft_ctx = model::ForwardContext::cpu(1);
  opts_.spec.type = SpecType::kDraft;
  opts_.spec.draft.model = model_.get();
  opts_.spec.draft.cache = draft_cache.get();
  opts_.spec.draft.ctx = draft_ctx.get();
  opts_.spec.draft.max_batch_tokens = 8;
  const std::vector<int32_t> p = prompt();
  auto r = run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, p, "p", opts_);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  expect_result(*r, p);
  EXPECT_GT(r->counts.draft_tokens, 0u);
  EXPECT_EQ(r->counts.accepted_tokens, r->counts.draft_tokens);
  EXPECT_EQ(draft_cache->block_manager()->pool().n_used(), 0);
  EXPECT_EQ(draft_cache->block_manager()->n_sequences(), 0);
}

TEST_P(SpecBenchTest, RejectsBadOptions) {
  const std::vector<int32_t> p = prompt();
  SpecBenchOptions o = opts_;  // type none
  EXPECT_FALSE(run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, p, "p", o).ok());
  o.spec.type = SpecType::kNgram;
  o.repetitions = 0;
  EXPECT_FALSE(run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, p, "p", o).ok());
  o.repetitions = 1;
  o.n_gen = 0;
  EXPECT_FALSE(run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, p, "p", o).ok());
  o.n_gen = 256;  // the prompt and 256 tokens exceed the 256-token context
  auto r = run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, p, "p", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("do not fit the context"), std::string::npos);
  o.n_gen = 4;
  EXPECT_FALSE(run_spec_bench(*model_, *tok_, *ctx_, *cache_, 0, {}, "p", o).ok());
}

INSTANTIATE_TEST_SUITE_P(Models, SpecBenchTest,
                         ::testing::Values("tiny-llama-f32.gguf", "tiny-qwen35-f32.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).find("qwen35") != std::string::npos
                                      ? std::string("hybrid")
                                      : std::string("dense");
                         });

TEST(BenchReport, SpecRowsAndJson) {
  SpecBenchRecord r;
  r.model.file = "t.gguf";
  r.model.type = "gemma3 268M Q8_0";
  r.draft_model = "d.gguf";
  r.spec_type = "draft";
  r.draft_max = 8;
  r.backend = "cpu-avx512";
  r.isa = "avx512";
  r.threads = 2;
  r.kv_type = "f16";
  r.result.prompt = "code_edit.txt";
  r.result.n_prompt = 120;
  r.result.n_gen = 128;
  r.result.n_generated = 100;
  r.result.base_ts = {20.0, 22.0};
  r.result.spec_ts = {40.0, 44.0};
  r.result.base = mean_stddev(r.result.base_ts);
  r.result.spec = mean_stddev(r.result.spec_ts);
  r.result.speedup = 2.0;
  r.result.counts.drafts = 10;
  r.result.counts.draft_tokens = 80;
  r.result.counts.accepted_tokens = 60;
  r.result.counts.accepted_per_pos = {10, 10, 10, 10, 5, 5, 5, 5};
  const auto j = nlohmann::json::parse(spec_bench_json_line(r));
  EXPECT_EQ(j.at("test"), "spec");
  EXPECT_EQ(j.at("spec_type"), "draft");
  EXPECT_EQ(j.at("prompt"), "code_edit.txt");
  EXPECT_EQ(j.at("n_generated"), 100);
  EXPECT_EQ(j.at("draft_model"), "d.gguf");
  EXPECT_EQ(j.at("repetitions"), 2);
  EXPECT_DOUBLE_EQ(j.at("base_tokens_per_s").get<double>(), 21.0);
  EXPECT_DOUBLE_EQ(j.at("spec_tokens_per_s").get<double>(), 42.0);
  EXPECT_DOUBLE_EQ(j.at("speedup").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j.at("acceptance").get<double>(), 0.75);
  EXPECT_EQ(j.at("accepted_per_pos").size(), 8u);
  EXPECT_EQ(j.at("identical"), true);
  const std::string header = spec_bench_table_header();
  const std::string row = spec_bench_table_row(r);
  EXPECT_NE(row.find("21.00 ± 1.41"), std::string::npos) << row;
  EXPECT_NE(row.find("2.00x"), std::string::npos) << row;
  EXPECT_NE(row.find("75.0% of 80"), std::string::npos) << row;
  EXPECT_NE(row.find("d.gguf <= 8"), std::string::npos) << row;
  EXPECT_NE(row.find("| yes"), std::string::npos) << row;
  auto cells = [](const std::string& s) { return std::count(s.begin(), s.end(), '|'); };
  EXPECT_EQ(cells(header.substr(0, header.find('\n'))), cells(row));
  EXPECT_EQ(cells(header.substr(header.find('\n') + 1)), cells(row));
  r.result.identical = false;
  EXPECT_NE(spec_bench_table_row(r).find("| NO"), std::string::npos);
}

TEST(MemBandwidth, TriadOnSmallArrays) {
  ThreadPool pool(2);
  MemBandwidthOptions o;
  o.array_bytes = 1 << 20;
  o.runs = 2;
  auto r = measure_mem_bandwidth(pool, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_GT(r->triad_gbps, 0);
  EXPECT_GT(r->read_gbps, 0);
  EXPECT_EQ(r->array_bytes, size_t{1} << 20);
  EXPECT_EQ(r->threads, 2);
  const auto j = nlohmann::json::parse(membench_json_line(*r));
  EXPECT_EQ(j.at("test"), "membench");
  EXPECT_DOUBLE_EQ(j.at("triad_gbps").get<double>(), r->triad_gbps);
  EXPECT_FALSE(r->huge_pages);
  EXPECT_EQ(j.at("pages"), "4k");

  // The same arrays advised as huge pages, where the kernel gives them.
  o.huge_pages = true;
  auto h = measure_mem_bandwidth(pool, o);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_GT(h->triad_gbps, 0);
  EXPECT_EQ(h->huge_pages, huge_pages_available());
  EXPECT_EQ(nlohmann::json::parse(membench_json_line(*h)).at("pages"),
            huge_pages_available() ? "2m" : "4k");
  o.huge_pages = false;

  o.runs = 0;
  EXPECT_FALSE(measure_mem_bandwidth(pool, o).ok());
  o.runs = 1;
  o.array_bytes = 64;
  EXPECT_FALSE(measure_mem_bandwidth(pool, o).ok());
  EXPECT_GE(default_array_bytes(), size_t{64} << 20);
}

}  // namespace bench_runner_test
}  // namespace folio::tools
