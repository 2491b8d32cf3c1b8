// ForwardContext: where a forward pass runs. Eager, op by op, no graph: each
// helper allocates its output in the activation arena, builds one Op and runs
// it on the first backend of the priority list that selects a kernel for it
// (route_op: one validation and one selection per op). Views (strides) make
// reshapes and slices free; only ops move data.
//
// Errors are sticky: the first failing op (or arena allocation) records its
// Status, every later helper is skipped and returns a correctly shaped view
// without data, and the caller checks status() once at the end. This keeps
// the model code a readable sequence of ops, like a graph builder, while
// running eagerly.
//
// One context serves one forward at a time (it is not thread-safe); several
// contexts may run forwards of the same (immutable) Model concurrently.
//
// Profiling: with the environment variable FOLIO_PROFILE=1 every op is timed
// (wall clock around the whole op, threads included) and, when the context
// is destroyed, the totals per kernel (mul_mat also per weight shape) are
// logged at info level, largest first. Off by default: the only cost is one
// branch per op.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/op.h"
#include "cache/kv_cache.h"
#include "core/status.h"
#include "model/arena.h"
#include "tensor/tensor_view.h"

namespace folio {
class ThreadPool;
}

namespace folio::model {

class ForwardContext {
 public:
  // Runs ops on `backends` (priority order, borrowed; must outlive this).
  explicit ForwardContext(std::vector<Backend*> backends);
  // A context owning a CpuBackend (best ISA) with a ThreadPool of n_threads.
  static std::unique_ptr<ForwardContext> cpu(int n_threads);
  ~ForwardContext();
  ForwardContext(const ForwardContext&) = delete;
  ForwardContext& operator=(const ForwardContext&) = delete;

  const std::vector<Backend*>& backends() const { return backends_; }
  int n_threads() const { return n_threads_; }

  // Starts a forward call: frees the arena, clears the error.
  void begin();
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Records `s` if it is the first error (no-op for OK).
  void fail(const Status& s);

  // --- memory ------------------------------------------------------------
  // A contiguous tensor in the arena (contents undefined). On failure the
  // view has its shape but no data, and the error is recorded.
  TensorView tensor(DType type, std::array<int64_t, kMaxDims> ne);
  TensorView f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
    return tensor(DType::F32, {ne0, ne1, ne2, ne3});
  }
  // An I32 [n] tensor holding `values`.
  TensorView upload_i32(std::span<const int32_t> values);
  Arena::Mark mark() const { return arena_.mark(); }
  void release(Arena::Mark m) { arena_.release(m); }
  const Arena& arena() const { return arena_; }

  // --- ops (semantics: backend/op.h) ---------------------------------------
  // Outputs are new arena tensors unless `dst` is given (in-place use where
  // the op allows aliasing).
  TensorView get_rows(const TensorView& table, const TensorView& ids);
  TensorView mul_mat(const TensorView& w, const TensorView& x);
  TensorView mul_mat_id(const TensorView& w, const TensorView& x, const TensorView& ids);
  TensorView add(const TensorView& a, const TensorView& b, TensorView dst = {});
  TensorView mul(const TensorView& a, const TensorView& b, TensorView dst = {});
  TensorView scale(const TensorView& x, float s, float bias = 0.0f, TensorView dst = {});
  TensorView rms_norm(const TensorView& x, const TensorView& w, float eps, TensorView dst = {});
  // sum = a + b; norm = rms_norm(sum) * w. Both outputs given (may alias a/b).
  void add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& w, float eps,
                    const TensorView& sum, const TensorView& norm);
  TensorView rope(const TensorView& x, const TensorView& pos, const RopeParams& p,
                  const TensorView& freq_factors = {});
  TensorView soft_max(const TensorView& x, float scale = 1.0f);
  TensorView unary(const TensorView& x, UnaryKind kind, TensorView dst = {});
  TensorView glu(const TensorView& gate, const TensorView& up, GluKind kind);
  TensorView top_k(const TensorView& x, int k);
  void set_rows(const TensorView& table, const TensorView& rows, const TensorView& slots);
  // q [D, Hq, T]; k/v cache views; metadata I32. Returns [Dv, Hq, T].
  TensorView flash_attn(const TensorView& q, const TensorView& k, const TensorView& v,
                        const TensorView& seq_idx, const TensorView& pos, const TensorView& kv_len,
                        const TensorView& block_table, const AttentionParams& p);

  // Runs a prepared op (skipped after an error).
  void run(const Op& op);
  // Runs `op` like run() if some backend selects a kernel for it and returns
  // true; returns false, recording nothing, when none does (the caller then
  // takes another path, e.g. unfused ops).
  bool run_if_supported(const Op& op);

  // Number of ops run since construction (for tests and stats).
  uint64_t ops_run() const { return ops_run_; }
  // The KV plan of the current forward (reused: no allocation per step).
  cache::KvPlan& kv_plan() { return kv_plan_; }

 private:
  class Profile;  // per-kernel op timers (FOLIO_PROFILE=1)

  // Runs `op` as routed (skipped after an error; kUnsupported if `route` is
  // empty). `t0`: when routing began, for the profile.
  void execute(const RoutedOp& route, const Op& op, std::chrono::steady_clock::time_point t0);

  std::unique_ptr<ThreadPool> owned_pool_;
  std::unique_ptr<Backend> owned_backend_;
  std::vector<Backend*> backends_;
  int n_threads_ = 1;
  Arena arena_;
  Status status_;
  uint64_t ops_run_ = 0;
  cache::KvPlan kv_plan_;
  std::unique_ptr<Profile> profile_;  // nullptr unless FOLIO_PROFILE=1
};

// A view of `t` with a new shape over the same contiguous memory (no CHECK:
// used on views whose data may be absent after an error).
TensorView reshape(const TensorView& t, std::array<int64_t, kMaxDims> ne);
// A view of rows [i1_begin, i1_begin + n) of dimension 1.
TensorView slice_rows(const TensorView& t, int64_t i1_begin, int64_t n);

}  // namespace folio::model
