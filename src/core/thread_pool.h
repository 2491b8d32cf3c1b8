// ThreadPool: a fixed set of workers for data-parallel kernels. parallel_for
// splits [0, n) into contiguous chunks, one per thread, and returns when all
// are done; the calling thread takes chunk 0. No work stealing: kernels are
// written so that equal chunks cost about the same.
#pragma once

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

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Default thread count: hardware concurrency (at least 1).
int default_thread_count();

}  // namespace folio
