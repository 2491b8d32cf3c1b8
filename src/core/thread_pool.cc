#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace folio {

namespace {

// How long a waiting thread spins before it blocks, adapted per waiter
// (additive increase after a wait the spin caught, halving after one it did
// not): a decode step's parallel ops come tens of microseconds apart, and a
// futex wake-up of a sleeping thread costs about as much as one of them; but
// on an oversubscribed machine the other thread is often not running at all,
// spinning for it only burns the time slice it needs, and the budget then
// falls towards kMinSpin.
constexpr int64_t kMaxSpinNs = 200'000;
constexpr int64_t kMinSpinNs = 2'000;
constexpr int64_t kSpinStepNs = kMaxSpinNs / 16;

void chunk(int64_t n, int parts, int i, int64_t* b, int64_t* e) {
  const int64_t per = n / parts, rem = n % parts;
  *b = i * per + std::min<int64_t>(i, rem);
  *e = *b + per + (i < rem ? 1 : 0);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or *budget_ns is spent; true if done() held. Adapts
// the budget to the outcome.
template <typename Done>
bool spin_until(const Done& done, int64_t* budget_ns) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(*budget_ns);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) {
        *budget_ns = std::min(kMaxSpinNs, *budget_ns + kSpinStepNs);
        return true;
      }
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  *budget_ns = std::max(kMinSpinNs, *budget_ns / 2);
  return done();
}

}  // namespace

int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)), caller_spin_ns_(kMaxSpinNs) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

// Sleeping uses the Dekker pattern on seq_cst atomics: a waiter announces
// itself (sleeping_workers_ / caller_sleeping_) before it re-checks its
// condition under mu_, and the other side changes the condition before it
// reads the announcement, so at least one of them sees the other; the
// notifying side takes mu_ first, so a waiter between its check and its
// wait cannot miss the notification.
uint64_t ThreadPool::wait_for_job(uint64_t seen, int64_t* spin_ns) {
  uint64_t g = seen;
  const auto changed = [&] {
    g = generation_.load(std::memory_order_acquire);
    return g != seen;
  };
  if (spin_until(changed, spin_ns)) return g;
  std::unique_lock<std::mutex> lock(mu_);
  sleeping_workers_.fetch_add(1);
  start_cv_.wait(lock, changed);
  sleeping_workers_.fetch_sub(1);
  return g;
}

void ThreadPool::wait_until_done() {
  const auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done, &caller_spin_ns_)) return;
  std::unique_lock<std::mutex> lock(mu_);
  caller_sleeping_.store(true);
  done_cv_.wait(lock, done);
  caller_sleeping_.store(false);
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  int64_t spin_ns = kMaxSpinNs;
  for (;;) {
    seen = wait_for_job(seen, &spin_ns);
    if (stop_.load(std::memory_order_acquire)) return;
    int64_t b, e;
    chunk(job_n_, n_threads_, index, &b, &e);
    if (b < e) (*job_)(index, b, e);
    // After this decrement the job (and the caller's fn) may be gone.
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1) {
    fn(0, 0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: publishes the job (release) before the read below
  if (sleeping_workers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    start_cv_.notify_all();
  }
  int64_t b, e;
  chunk(n, n_threads_, 0, &b, &e);
  if (b < e) fn(0, b, e);
  wait_until_done();
  job_ = nullptr;
}

}  // namespace folio
