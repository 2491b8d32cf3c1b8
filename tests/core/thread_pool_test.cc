// ThreadPool: every index of every job is visited exactly once, by the
// chunk the documented split assigns, across many back-to-back jobs (the
// spinning hand-off) and jobs separated by pauses longer than the spin
// budget (the sleeping hand-off), with more threads than cores, and the
// pool shuts down cleanly whether its workers spin or sleep.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace folio {
namespace thread_pool_test {

// Runs `jobs` parallel_for calls of varying sizes; checks coverage and that
// each chunk ran on the thread index the split gives it.
void check_jobs(ThreadPool& pool, int jobs, std::chrono::microseconds pause) {
  const int nt = pool.size();
  for (int j = 0; j < jobs; ++j) {
    const int64_t n = 1 + (j * 7) % 37;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> bad_index{0};
    pool.parallel_for(n, [&](int t, int64_t b, int64_t e) {
      if (t < 0 || t >= nt || b >= e) bad_index.fetch_add(1);
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "job " << j << " index " << i;
    }
    ASSERT_EQ(bad_index.load(), 0) << "job " << j;
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
}

TEST(ThreadPool, BackToBackJobsCoverEveryIndexOnce) {
  for (int nt : {1, 2, 3, 4}) {
    ThreadPool pool(nt);
    EXPECT_EQ(pool.size(), nt);
    check_jobs(pool, 500, std::chrono::microseconds(0));
  }
}

TEST(ThreadPool, JobsAfterIdlePausesStillRun) {
  // Pauses beyond the 200 us spin budget: workers and caller go to sleep
  // between jobs and must be woken every time.
  ThreadPool pool(3);
  check_jobs(pool, 40, std::chrono::microseconds(1500));
}

TEST(ThreadPool, ChunksAreContiguousAndOrderedByThread) {
  ThreadPool pool(3);
  std::vector<int64_t> begin(3, -1), end(3, -1);
  pool.parallel_for(10, [&](int t, int64_t b, int64_t e) {
    begin[static_cast<size_t>(t)] = b;
    end[static_cast<size_t>(t)] = e;
  });
  // 10 = 4 + 3 + 3: the first n % parts chunks are one longer.
  EXPECT_EQ(begin, (std::vector<int64_t>{0, 4, 7}));
  EXPECT_EQ(end, (std::vector<int64_t>{4, 7, 10}));
}

TEST(ThreadPool, EmptyAndSingleJobsRunInline) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, [&](int, int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = false;
  pool.parallel_for(1, [&](int t, int64_t b, int64_t e) {
    ++calls;
    on_caller = t == 0 && b == 0 && e == 1 && std::this_thread::get_id() == caller;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(on_caller);
}

TEST(ThreadPool, DestroysWhileWorkersSpinOrSleep) {
  for (int round = 0; round < 20; ++round) {
    ThreadPool pool(3);
    std::atomic<int64_t> sum{0};
    pool.parallel_for(100, [&](int, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
    });
    EXPECT_EQ(sum.load(), 4950);
    // Odd rounds: let the workers fall asleep before the destructor runs.
    if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(600));
  }
}

}  // namespace
}  // namespace folio
