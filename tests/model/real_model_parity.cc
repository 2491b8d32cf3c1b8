#include "real_model_parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "model/forward_context.h"
#include "test_util.h"

namespace folio::model::testing {
namespace {

struct DiffStats {
  double max_abs = 0;
  double sum_sq = 0;
  int64_t n = 0;
  double rms() const { return n == 0 ? 0.0 : std::sqrt(sum_sq / static_cast<double>(n)); }
  void add(double d) {
    max_abs = std::max(max_abs, std::abs(d));
    sum_sq += d * d;
    ++n;
  }
  void merge(const DiffStats& o) {
    max_abs = std::max(max_abs, o.max_abs);
    sum_sq += o.sum_sq;
    n += o.n;
  }
};

// Differences of one folio row from one llama.cpp record.
DiffStats compare_record(const float* row, int64_t n_vocab, const std::vector<int32_t>& sample_ids,
                         const nlohmann::json& rec) {
  DiffStats s;
  const auto top_ids = rec["top_ids"].get<std::vector<int32_t>>();
  const auto top = rec["top_logits"].get<std::vector<float>>();
  const auto sample = rec["sample_logits"].get<std::vector<float>>();
  EXPECT_EQ(top_ids.size(), top.size());
  EXPECT_EQ(sample_ids.size(), sample.size());
  for (size_t k = 0; k < top_ids.size() && k < top.size(); ++k) {
    EXPECT_LT(top_ids[k], n_vocab);
    if (top_ids[k] < n_vocab) s.add(static_cast<double>(row[top_ids[k]]) - top[k]);
  }
  for (size_t k = 0; k < sample_ids.size() && k < sample.size(); ++k) {
    if (sample_ids[k] < n_vocab) s.add(static_cast<double>(row[sample_ids[k]]) - sample[k]);
  }
  return s;
}

}  // namespace

void expect_llamacpp_parity(const Model& m, const nlohmann::json& prompts,
                            const nlohmann::json& logits, const ParityLimits& limits,
                            const char* tag) {
  const int64_t nv = m.config().n_vocab;
  const auto sample_ids = logits["sample_ids"].get<std::vector<int32_t>>();
  for (int32_t id : sample_ids) ASSERT_LT(id, nv) << "sample id beyond the vocabulary";
  std::map<std::string, const nlohmann::json*> records;
  for (const nlohmann::json& p : logits["prompts"]) {
    records[p["name"].get<std::string>()] = &p["logits"];
  }
  auto ctx = ForwardContext::cpu(2);
  int full = 0;
  size_t total_agree = 0;
  size_t total_steps = 0;
  DiffStats all;
  for (const nlohmann::json& p : prompts) {
    const std::string name = p["name"].get<std::string>();
    const auto prompt = p["prompt_tokens"].get<std::vector<int32_t>>();
    const auto gen = p["gen_tokens"].get<std::vector<int32_t>>();
    const auto margins = p["step_margins"].get<std::vector<float>>();
    ASSERT_EQ(margins.size(), gen.size()) << name;
    ASSERT_TRUE(records.count(name)) << name << ": no logits records";
    std::map<size_t, const nlohmann::json*> by_step;
    for (const nlohmann::json& rec : *records[name]) by_step[rec["step"].get<size_t>()] = &rec;
    ASSERT_FALSE(by_step.empty()) << name;
    ASSERT_LT(by_step.rbegin()->first, gen.size()) << name << ": a record past the tokens";

    auto cache = m.make_cache({static_cast<int64_t>(prompt.size() + gen.size()), 1, DType::F32});
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    Result<std::vector<float>> pre = eval_all(m, **cache, *ctx, prompt);
    ASSERT_TRUE(pre.ok()) << pre.status().to_string();
    std::vector<float> row(pre->end() - nv, pre->end());
    size_t matched = 0;  // leading steps equal: folio's own greedy continuation
    size_t agree = 0;    // steps whose argmax equals llama.cpp's token
    bool diverged = false;
    float max_flip = 0;  // largest llama.cpp margin among the differing steps
    DiffStats mine;
    for (size_t i = 0; i < gen.size(); ++i) {
      const int32_t top = argmax(row.data(), nv);
      if (top == gen[i]) {
        ++agree;
        if (!diverged) ++matched;
      } else {
        if (!diverged) {
          std::printf(
              "[ %s ] %s: first differs at step %zu: folio %d, llama.cpp %d (llama.cpp margin "
              "%.4g)\n",
              tag, name.c_str(), i, top, gen[i], margins[i]);
        }
        diverged = true;
        max_flip = std::max(max_flip, margins[i]);
        EXPECT_LT(margins[i], limits.flip_margin) << name << " step " << i << ": folio's argmax "
                                                  << top << ", llama.cpp's confident " << gen[i];
      }
      if (auto it = by_step.find(i); it != by_step.end()) {
        mine.merge(compare_record(row.data(), nv, sample_ids, *it->second));
      }
      if (i + 1 == gen.size()) break;
      Result<std::vector<float>> next = eval_one(m, **cache, *ctx, gen[i]);
      ASSERT_TRUE(next.ok()) << next.status().to_string();
      row = std::move(next).value();
    }
    std::printf(
        "[ %s ] %s: greedy %zu/%zu equal to llama.cpp's%s, %zu/%zu steps agree (largest "
        "margin among the others %.4g); logits at %zu steps: max |d| %.4f, rms %.4f\n",
        tag, name.c_str(), matched, gen.size(), diverged ? " (then diverges)" : "", agree,
        gen.size(), max_flip, by_step.size(), mine.max_abs, mine.rms());
    full += matched == gen.size();
    total_agree += agree;
    total_steps += gen.size();
    all.merge(mine);
  }
  std::printf(
      "[ %s ] all prompts: %d fully equal, %zu/%zu steps agree; logits (%lld values) "
      "max |d| %.4f, rms %.4f\n",
      tag, full, total_agree, total_steps, static_cast<long long>(all.n), all.max_abs, all.rms());
  EXPECT_GE(full, limits.min_full_prompts) << "prompts whose greedy tokens all equal llama.cpp's";
  EXPECT_GE(static_cast<double>(total_agree), limits.min_step_agreement * total_steps)
      << "teacher-forced steps whose argmax equals llama.cpp's token";
  EXPECT_LE(all.max_abs, limits.logit_max_abs) << "largest logit difference from llama.cpp";
  EXPECT_LE(all.rms(), limits.logit_rms) << "rms logit difference from llama.cpp";
}

}  // namespace folio::model::testing
