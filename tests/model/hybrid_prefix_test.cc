// Prefix caching for hybrid models: recurrent-state checkpoints at KV block
// boundaries (cache/hybrid_kv_cache.h). A prompt reuses a cached prefix only
// where a checkpoint for exactly that prefix exists, and the continuation's
// logits then equal a cold run's bit for bit (the DeltaNet prefill runs token
// by token here, TestContexts::token_by_token, so that splitting a prompt
// differently changes no bit).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "hybrid_test_util.h"

namespace folio::model::testing {
namespace hybrid_prefix_test {

struct Admitted {
  int seq = -1;
  int64_t n_cached = 0;
  std::vector<float> last;  // logits of the last prompt token
};

// A new sequence for `prompt`: its cached prefix, then the rest as one batch.
Admitted admit(const Model& m, cache::HybridKvCache& cache, ForwardContext& ctx,
               const std::vector<int32_t>& prompt) {
  Admitted a;
  Result<int> seq = cache.add_sequence();
  EXPECT_TRUE(seq.ok()) << seq.status().to_string();
  a.seq = *seq;
  Result<int64_t> cached = cache.take_cached_prefix(a.seq, prompt);
  EXPECT_TRUE(cached.ok()) << cached.status().to_string();
  a.n_cached = *cached;
  EXPECT_EQ(cache.seq_len(a.seq), a.n_cached);
  std::vector<int32_t> rest(prompt.begin() + a.n_cached, prompt.end());
  Result<std::vector<float>> logits = eval_all(m, cache, ctx, rest, a.seq);
  EXPECT_TRUE(logits.ok()) << logits.status().to_string();
  const int64_t nv = m.config().n_vocab;
  a.last.assign(logits->end() - nv, logits->end());
  return a;
}

std::vector<float> cold(const Model& m, ForwardContext& ctx, const std::vector<int32_t>& prompt) {
  auto cache = test_cache(m, true, 1);
  return admit(m, *cache, ctx, prompt).last;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class HybridPrefix : public ::testing::TestWithParam<std::string> {};

// A: S + qa computes everything (its KV blocks of S become cached, but no
// checkpoint at S's end exists yet). B: S + qb finds S's blocks but no
// checkpoint: it recomputes, saving one at the branch point. C: S + qc
// resumes there.
TEST_P(HybridPrefix, SharedSystemPromptHitsFromTheThirdPrompt) {
  auto m = load_hybrid(GetParam());
  if (m == nullptr) FAIL() << "model missing";
  const int64_t nv = m->config().n_vocab;
  TestContexts contexts;
  auto ctx = contexts.token_by_token();
  auto cache = test_cache(*m, true, 2, /*max_checkpoints=*/8, /*checkpoint_interval=*/0);
  const std::vector<int32_t> sys = test_tokens(45, 1, nv);  // 2 full blocks + 13
  const std::vector<int32_t> pa = concat(sys, test_tokens(11, 2, nv));
  const std::vector<int32_t> pb = concat(sys, test_tokens(14, 3, nv));
  const std::vector<int32_t> pc = concat(sys, test_tokens(9, 4, nv));

  const Admitted a = admit(*m, *cache, *ctx, pa);
  EXPECT_EQ(a.n_cached, 0);
  ASSERT_TRUE(cache->remove_sequence(a.seq).ok());
  const Admitted b = admit(*m, *cache, *ctx, pb);
  EXPECT_EQ(b.n_cached, 0);  // KV of S is cached, a checkpoint of it is not
  ASSERT_TRUE(cache->remove_sequence(b.seq).ok());
  const Admitted c = admit(*m, *cache, *ctx, pc);
  EXPECT_EQ(c.n_cached, 32);  // S's last full block
  EXPECT_TRUE(same_bits(c.last, cold(*m, *ctx, pc)));
  EXPECT_TRUE(same_bits(b.last, cold(*m, *ctx, pb)));
  // Greedy continuation from the restored state equals the cold one too.
  Result<std::vector<float>> next = eval_one(*m, *cache, *ctx, argmax(c.last.data(), nv), c.seq);
  auto fresh = test_cache(*m, true, 1);
  const Admitted cc = admit(*m, *fresh, *ctx, pc);
  Result<std::vector<float>> next_cold =
      eval_one(*m, *fresh, *ctx, argmax(cc.last.data(), nv), cc.seq);
  ASSERT_TRUE(next.ok() && next_cold.ok());
  EXPECT_TRUE(same_bits(*next, *next_cold));

  const cache::HybridCacheStats st = cache->stats();
  EXPECT_EQ(st.prefix_hits, 1u);
  EXPECT_EQ(st.prefix_hit_tokens, 32u);
  EXPECT_EQ(st.prefix_misses, 2u);      // A (nothing cached) and B
  EXPECT_GE(st.checkpoints_saved, 3u);  // A's and B's prompt ends, B's branch point
  EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();
  std::printf(
      "[ prefix ] %s: shared 45-token prompt, third prompt reuses %lld tokens; %llu "
      "checkpoints saved, %d cached, slot %zu bytes\n",
      GetParam().c_str(), static_cast<long long>(c.n_cached),
      static_cast<unsigned long long>(st.checkpoints_saved), st.checkpoints_cached, st.slot_bytes);
}

// A conversation's next turn (prompt + generated tokens + more) resumes at
// the checkpoint its decode steps saved (every block here).
TEST_P(HybridPrefix, NextTurnResumesFromDecodeCheckpoint) {
  auto m = load_hybrid(GetParam());
  if (m == nullptr) FAIL() << "model missing";
  const int64_t nv = m->config().n_vocab;
  TestContexts contexts;
  auto ctx = contexts.token_by_token();
  auto cache = test_cache(*m, true, 1, /*max_checkpoints=*/4, /*checkpoint_interval=*/1);
  std::vector<int32_t> turn = test_tokens(10, 5, nv);
  Admitted a = admit(*m, *cache, *ctx, turn);
  std::vector<float> last = a.last;
  for (int i = 0; i < 30; ++i) {  // 10 + 30 tokens: boundaries 16 and 32 crossed by decode
    turn.push_back(argmax(last.data(), nv));
    Result<std::vector<float>> r = eval_one(*m, *cache, *ctx, turn.back(), a.seq);
    ASSERT_TRUE(r.ok());
    last = *r;
  }
  ASSERT_TRUE(cache->remove_sequence(a.seq).ok());
  const std::vector<int32_t> next = concat(turn, test_tokens(6, 6, nv));
  const Admitted b = admit(*m, *cache, *ctx, next);
  EXPECT_EQ(b.n_cached, 32);
  EXPECT_TRUE(same_bits(b.last, cold(*m, *ctx, next)));
  EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();
}

INSTANTIATE_TEST_SUITE_P(Refdata, HybridPrefix, ::testing::ValuesIn(kRefdataHybridModels),
                         [](const auto& info) { return test_name(info.param); });

TEST(HybridPrefixCache, CheckpointsAreBoundedAndEvictedLeastRecentlyUsed) {
  auto m = load_hybrid("tiny-qwen35");
  if (m == nullptr) FAIL() << "model missing";
  const int64_t nv = m->config().n_vocab;
  TestContexts contexts;
  auto ctx = contexts.fused();
  auto cache = test_cache(*m, true, 1, /*max_checkpoints=*/2, /*checkpoint_interval=*/1);
  // 100 tokens cross 6 boundaries; only 2 free slots: the prompt end (rank
  // before the interval ones) and the first interval boundary.
  Admitted a = admit(*m, *cache, *ctx, test_tokens(100, 7, nv));
  EXPECT_EQ(cache->stats().checkpoints_cached, 2);
  EXPECT_EQ(cache->stats().checkpoints_saved, 2u);
  ASSERT_TRUE(cache->remove_sequence(a.seq).ok());
  // Another prompt evicts them (least recently used first) for its own.
  a = admit(*m, *cache, *ctx, test_tokens(40, 8, nv));
  const cache::HybridCacheStats st = cache->stats();
  EXPECT_EQ(st.checkpoints_cached, 2);
  EXPECT_GE(st.checkpoints_evicted, 1u);
  EXPECT_EQ(cache->state_pool().n_slots(), 3);
  EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();
}

TEST(HybridPrefixCache, TruncateToACheckpointedBoundary) {
  auto m = load_hybrid("tiny-qwen3next");
  if (m == nullptr) FAIL() << "model missing";
  const int64_t nv = m->config().n_vocab;
  TestContexts contexts;
  auto ctx = contexts.token_by_token();
  auto cache = test_cache(*m, true, 1, /*max_checkpoints=*/4, /*checkpoint_interval=*/1);
  const std::vector<int32_t> p = test_tokens(50, 9, nv);
  const Admitted a = admit(*m, *cache, *ctx, p);  // checkpoints at 16, 32, 48
  EXPECT_EQ(cache->truncation_point(a.seq, 40), 32);
  EXPECT_EQ(cache->truncation_point(a.seq, 20), 16);
  EXPECT_EQ(cache->truncation_point(a.seq, 10), 0);
  EXPECT_EQ(cache->truncation_point(a.seq, 50), 50);
  EXPECT_EQ(cache->truncate(a.seq, 40).code(), StatusCode::kUnsupported);
  ASSERT_TRUE(cache->truncate(a.seq, 32).ok());
  EXPECT_EQ(cache->seq_len(a.seq), 32);
  Result<std::vector<float>> again =
      eval_all(*m, *cache, *ctx, std::vector<int32_t>(p.begin() + 32, p.end()), a.seq);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(same_bits(std::vector<float>(again->end() - nv, again->end()), a.last));
  EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();
}

TEST(HybridPrefixCache, FailedForwardRegistersNoCheckpoint) {
  auto m = load_hybrid("tiny-qwen35");
  if (m == nullptr) FAIL() << "model missing";
  const int64_t nv = m->config().n_vocab;
  TestContexts contexts;
  auto ctx = contexts.fused();
  auto broken = contexts.failing(OpKind::kSsmConv);
  auto cache = test_cache(*m, true, 1, /*max_checkpoints=*/1, /*checkpoint_interval=*/0);
  Admitted a = admit(*m, *cache, *ctx, test_tokens(20, 10, nv));  // checkpoint at 16
  EXPECT_EQ(cache->stats().checkpoints_cached, 1);
  ASSERT_TRUE(cache->remove_sequence(a.seq).ok());
  // The only free slots: the released plain one (taken by the next sequence)
  // and the checkpoint, which the failing forward's plan picks and may
  // overwrite: its registration must go.
  const int seq = *cache->add_sequence();
  const std::vector<int32_t> q = test_tokens(20, 11, nv);
  Result<std::vector<float>> r = eval_all(*m, *cache, *broken, q, seq);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(cache->stats().checkpoints_cached, 0);
  EXPECT_EQ(cache->seq_len(seq), 0);
  Result<int64_t> hit = cache->take_cached_prefix(seq, test_tokens(20, 10, nv));
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(*hit, 0);
  EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();
}

}  // namespace
}  // namespace folio::model::testing
