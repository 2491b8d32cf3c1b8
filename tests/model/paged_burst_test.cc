// A burst through the paged KV cache, driven the way a scheduler will drive
// it: 40 requests of random lengths (many sharing prompt prefixes) through a
// pool too small for all of them at once. Each step takes every running
// sequence's next piece (a prefill chunk of up to 16 tokens, or one decode
// token) into one batch. Along the way:
//   - admission takes cached prefix blocks (take_cached_prefix);
//   - a batch that does not fit (kResourceExhausted) preempts the most
//     recently admitted running sequence, which later resumes by recompute;
//   - random early ends (cancels mid-prefill or mid-decode);
//   - forks of decoding sequences, the child continuing from another token
//     (copy-on-write of the shared partial block).
// Greedy throughout. Afterwards the pool is pristine (no leaked block,
// invariants hold) and every request's generated tokens equal its solo run
// on a contiguous cache (exactly: see paged_kv_cache_test.cc for why paged,
// batched and chunked runs are bit-identical to solo ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>

#include "cache/paged_kv_cache.h"
#include "test_util.h"

namespace folio::model::testing {
namespace paged_burst_test {

struct Request {
  std::vector<int32_t> prompt;  // tokens given to it (a fork's include its parent's)
  std::vector<int32_t> tokens;  // prompt, then greedy tokens
  size_t n_target = 0;          // tokens to generate before it ends
  int seq = -1;                 // cache sequence while running
  uint64_t admitted = 0;        // admission order, for preemption
  bool cancelled = false;
  size_t n_generated() const { return tokens.size() - prompt.size(); }
};

std::vector<int32_t> solo_greedy(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                                 const std::vector<int32_t>& prompt, size_t n) {
  cache.clear();
  std::vector<int32_t> out;
  Result<std::vector<float>> all = eval_all(m, cache, ctx, prompt);
  EXPECT_TRUE(all.ok()) << all.status().to_string();
  if (!all.ok()) return out;
  const int64_t nv = m.config().n_vocab;
  std::vector<float> row(all->end() - nv, all->end());
  for (size_t k = 0; k < n; ++k) {
    out.push_back(argmax(row.data(), nv));
    if (k + 1 == n) break;
    Result<std::vector<float>> next = eval_one(m, cache, ctx, out.back());
    EXPECT_TRUE(next.ok()) << next.status().to_string();
    if (!next.ok()) return out;
    row = *next;
  }
  return out;
}

TEST(PagedBurst, ManySequencesThroughASmallPool) {
  const std::string path = shared_models_dir() + "/tiny-qwen3-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  Result<std::unique_ptr<Model>> loaded = Model::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const Model& m = **loaded;
  const auto nv = static_cast<int32_t>(m.config().n_vocab);
  std::mt19937 rng(1234);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  // Requests: a third start with one of three shared prefixes.
  std::vector<std::vector<int32_t>> prefixes(3);
  for (auto& p : prefixes) {
    p.resize(static_cast<size_t>(uniform(12, 26)));
    for (int32_t& t : p) t = uniform(0, nv - 1);
  }
  std::vector<Request> reqs;
  for (int i = 0; i < 40; ++i) {
    Request r;
    if (i % 3 == 0) r.prompt = prefixes[static_cast<size_t>(uniform(0, 2))];
    const int n = uniform(1, 30);
    for (int k = 0; k < n; ++k) r.prompt.push_back(uniform(0, nv - 1));
    r.tokens = r.prompt;
    r.n_target = static_cast<size_t>(uniform(1, 24));
    reqs.push_back(std::move(r));
  }

  constexpr int kBlockSize = 8;
  constexpr size_t kMaxRunning = 12;
  constexpr size_t kChunk = 16;
  cache::KvCacheOptions o;
  o.type = DType::F16;
  o.block_size = kBlockSize;
  o.n_blocks = 30;
  o.n_ctx = 256;
  o.n_seq = 0;
  Result<std::unique_ptr<cache::PagedKvCache>> made =
      cache::PagedKvCache::create(m.config().cache_geometry(), o);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  cache::PagedKvCache& cache = **made;
  auto ctx = ForwardContext::cpu(2);

  std::deque<size_t> waiting;
  for (size_t i = 0; i < reqs.size(); ++i) waiting.push_back(i);
  std::vector<size_t> running;
  uint64_t n_admitted = 0;
  int n_preempted = 0, n_forks = 0, n_cow_forks = 0, n_cancels = 0;
  int64_t n_cached_tokens = 0;
  size_t n_copies = 0;
  auto finish = [&](size_t r) {
    ASSERT_TRUE(cache.remove_sequence(reqs[r].seq).ok());
    reqs[r].seq = -1;
    running.erase(std::find(running.begin(), running.end(), r));
  };

  bool admit = true;  // no admission right after a preemption (it would come straight back)
  int step = 0;
  for (; step < 2000 && (!waiting.empty() || !running.empty()); ++step) {
    while (admit && running.size() < kMaxRunning && !waiting.empty()) {
      // Admission keeps room for the prompt and a block of growth for each
      // running sequence (cached prefix blocks not counted: conservative).
      const size_t r = waiting.front();
      const int32_t need =
          cache::blocks_for(static_cast<int64_t>(reqs[r].tokens.size()), kBlockSize);
      if (cache.manager().pool().n_free() < need + static_cast<int32_t>(running.size())) break;
      waiting.pop_front();
      Result<int> seq = cache.add_sequence();
      ASSERT_TRUE(seq.ok());
      reqs[r].seq = *seq;
      reqs[r].admitted = n_admitted++;
      Result<int64_t> cached = cache.take_cached_prefix(*seq, reqs[r].tokens);
      ASSERT_TRUE(cached.ok()) << cached.status().to_string();
      n_cached_tokens += *cached;
      running.push_back(r);
    }
    // A fork of a decoding sequence; the child goes on from another token.
    if (n_forks < 6 && running.size() < kMaxRunning + 2 && uniform(0, 9) == 0) {
      for (size_t r : running) {
        Request& p = reqs[r];
        if (cache.seq_len(p.seq) + 1 != static_cast<int64_t>(p.tokens.size()) ||
            p.n_generated() == 0 || p.n_generated() + 2 > p.n_target) {
          continue;
        }
        Result<int> child = cache.fork_sequence(p.seq);
        ASSERT_TRUE(child.ok());
        Request c;
        c.prompt = p.tokens;
        c.prompt.back() = (c.prompt.back() + uniform(1, nv - 1)) % nv;
        c.tokens = c.prompt;
        c.n_target = static_cast<size_t>(uniform(1, 12));
        c.seq = *child;
        c.admitted = p.admitted;  // part of its parent's request
        n_cow_forks += cache.seq_len(p.seq) % kBlockSize != 0;
        reqs.push_back(std::move(c));
        running.push_back(reqs.size() - 1);
        ++n_forks;
        break;
      }
    }
    // A random early end.
    if (n_cancels < 5 && running.size() > 1 && uniform(0, 24) == 0) {
      const size_t r =
          running[static_cast<size_t>(uniform(0, static_cast<int>(running.size()) - 1))];
      reqs[r].cancelled = true;
      finish(r);
      ++n_cancels;
    }

    // One batch: every running sequence's next piece.
    cache::Batch batch;
    std::vector<std::pair<size_t, int64_t>> outputs;  // (request, batch row)
    for (size_t r : running) {
      const Request& q = reqs[r];
      const auto len = static_cast<size_t>(cache.seq_len(q.seq));
      const size_t end = std::min(q.tokens.size(), len + kChunk);
      for (size_t i = len; i < end; ++i) {
        const bool out = i + 1 == q.tokens.size();
        if (out) outputs.emplace_back(r, batch.n_outputs());
        batch.add(q.tokens[i], static_cast<int32_t>(i), q.seq, out);
      }
    }
    if (batch.size() == 0) {
      admit = true;
      continue;
    }
    Result<TensorView> logits = m.forward(batch, cache, *ctx);
    if (logits.status().code() == StatusCode::kResourceExhausted) {
      ASSERT_GT(ctx->kv_plan().pages.n_missing_blocks, 0);
      ASSERT_GT(running.size(), 1u) << "one sequence alone does not fit the pool";
      // Preempt the most recently admitted sequence (recompute later).
      const auto newest = std::max_element(running.begin(), running.end(), [&](size_t a, size_t b) {
        return reqs[a].admitted < reqs[b].admitted;
      });
      const size_t r = *newest;
      finish(r);
      waiting.push_front(r);
      ++n_preempted;
      admit = false;
      continue;
    }
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    admit = true;
    n_copies += ctx->kv_plan().pages.copies.size();
    for (const auto& [r, row] : outputs) {
      Request& q = reqs[r];
      q.tokens.push_back(argmax(logits->row<const float>(row), nv));
      if (q.n_generated() >= q.n_target) finish(r);
    }
    ASSERT_TRUE(cache.check_invariants().ok()) << "step " << step;
  }
  ASSERT_TRUE(waiting.empty() && running.empty()) << "burst did not finish in " << step << " steps";

  // The pool is pristine: every block free, no sequence left.
  const cache::BlockPool& pool = cache.manager().pool();
  EXPECT_EQ(cache.manager().n_sequences(), 0);
  EXPECT_TRUE(pool.idle());
  EXPECT_EQ(pool.n_free(), pool.n_usable());
  EXPECT_TRUE(cache.check_invariants().ok());
  EXPECT_LE(cache.manager().peak_used(), pool.n_usable());
  EXPECT_TRUE(cache.defrag());
  // The burst exercised what it is meant to.
  EXPECT_GT(n_preempted, 0);
  EXPECT_GT(n_forks, 0);
  EXPECT_GT(n_cow_forks, 0);
  EXPECT_GT(n_copies, 0u);
  EXPECT_GT(n_cancels, 0);
  EXPECT_GT(n_cached_tokens, 0);
  std::printf(
      "[ burst ] %zu requests, %d steps, %d preemptions, %d forks (%zu block copies), "
      "%d cancels, %lld cached prompt tokens, peak %d of %d blocks\n",
      reqs.size(), step, n_preempted, n_forks, n_copies, n_cancels,
      static_cast<long long>(n_cached_tokens), cache.manager().peak_used(), pool.n_usable());

  // Every request's tokens equal its solo run.
  auto solo_cache = m.make_cache({256, 1, DType::F16});
  ASSERT_TRUE(solo_cache.ok());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& q = reqs[i];
    if (q.n_generated() == 0) continue;
    const std::vector<int32_t> want = solo_greedy(m, **solo_cache, *ctx, q.prompt, q.n_generated());
    const std::vector<int32_t> got(q.tokens.begin() + static_cast<int64_t>(q.prompt.size()),
                                   q.tokens.end());
    EXPECT_EQ(got, want) << "request " << i << (q.cancelled ? " (cancelled)" : "");
  }
}

}  // namespace
}  // namespace folio::model::testing
