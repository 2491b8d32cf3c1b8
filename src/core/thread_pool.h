// ThreadPool: a fixed set of workers for data-parallel kernels. parallel_for
// splits [0, n) into contiguous chunks, one per thread, and returns when all
// are done; the calling thread takes chunk 0. No work stealing: kernels are
// written so that equal chunks cost about the same.
//
// Hand-off: a decode step runs a hundred or more parallel ops of tens to
// hundreds of microseconds each, so waking sleeping threads for every op (a
// futex wake and a reschedule per op and thread, about as long as a small
// op) would cost a large part of the step. Workers therefore spin
// on an atomic job counter (with pause) for a while after each job, and
// only then sleep on a condition variable; the caller waits for the last
// worker the same way. Spin budgets adapt (at most 200 us, shrinking when
// spins keep failing, as on an oversubscribed machine); a pool idle for
// longer than the budget costs no CPU.
//
// One caller at a time: parallel_for must not be called concurrently on the
// same pool, nor from inside one of its jobs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace folio {

class ThreadPool {
 public:
  // n_threads total, including the caller (1 = run inline, no workers).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(thread_index, begin, end) for each non-empty chunk of [0, n).
  void parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn);

 private:
  void worker(int index);
  // Waits until generation_ differs from `seen` (or stop); returns the new
  // value. *spin_ns: the waiter's spin budget (adapted).
  uint64_t wait_for_job(uint64_t seen, int64_t* spin_ns);
  void wait_until_done();

  int n_threads_;
  std::vector<std::thread> workers_;
  // The current job, published by the release increment of generation_.
  const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};           // workers still running the current job
  std::atomic<int> sleeping_workers_{0};  // workers blocked on start_cv_
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  int64_t caller_spin_ns_;  // the caller's spin budget (one caller at a time)
  std::mutex mu_;           // guards the condition-variable waits only
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
};

// Default thread count: hardware concurrency (at least 1).
int default_thread_count();

}  // namespace folio
