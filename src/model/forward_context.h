// ForwardContext: where a forward pass runs. Eager, op by op, no graph: each
// helper allocates its output, builds one Op and runs it on the backend
// routing picks. Views (strides) make reshapes and slices free; only ops
// move data.
//
// Several backends (a device, then the CPU): each kind of memory has its own
// arena (the host's, each device's). Routing is by capability and residency,
// never by a backend's name: an op goes to the backend that holds its
// pinned inputs (weights, KV cache: memory outside the arenas) if that
// backend selects a kernel for it, else to where its activations live, else
// to the first backend in priority order that can run it. Inputs the chosen
// backend cannot reach are copied into its arena (uploads of the step's ids
// are copied once per forward); an output it cannot reach is computed into
// its arena and copied back. A device records ops and runs them when the
// host needs data: to_host() (the logits) or sync().
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
// Profiling: ops are timed into an OpProfile (model/op_profile.h: wall clock
// around the whole op, threads included; on a device, the time to record
// it) when one is set: by set_profile (`folio bench --profile`), or with the
// environment variable FOLIO_PROFILE=1 the context's own, whose totals per
// kernel (mul_mat also per weight shape) are logged at info level, largest
// first, when the context is destroyed. Off by default: the only cost is one
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
#include "model/op_profile.h"
#include "tensor/tensor_view.h"

namespace folio {
class ThreadPool;
}

namespace folio::model {

class HiddenStates;

class ForwardContext {
 public:
  // Runs ops on `backends` (priority order, borrowed; must outlive this).
  explicit ForwardContext(std::vector<Backend*> backends);
  // A context owning a CpuBackend (best ISA) with a ThreadPool of n_threads.
  static std::unique_ptr<ForwardContext> cpu(int n_threads);
  // `device` (borrowed; must outlive the context) first, then such a CPU
  // backend; plain cpu() when device is nullptr.
  static std::unique_ptr<ForwardContext> with_device(Backend* device, int n_threads);
  ~ForwardContext();
  ForwardContext(const ForwardContext&) = delete;
  ForwardContext& operator=(const ForwardContext&) = delete;

  const std::vector<Backend*>& backends() const { return backends_; }
  int n_threads() const { return n_threads_; }

  // Starts a forward call: frees the arenas, clears the error.
  void begin();
  // Tells the backends whether the work from now on is a step that repeats
  // with other values (a decode step: Backend::set_replayable); a device may
  // replay it. Model::run sets it for a forward's work and clears it after.
  void set_replayable(bool replayable);
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Records `s` if it is the first error (no-op for OK).
  void fail(const Status& s);

  // --- memory ------------------------------------------------------------
  static constexpr int kMaxArenas = 4;
  // Positions in every arena (per-layer temporaries are freed to a mark).
  struct Mark {
    std::array<Arena::Mark, kMaxArenas> at{};
  };

  // A contiguous tensor in host memory (contents undefined). On failure the
  // view has its shape but no data, and the error is recorded.
  TensorView tensor(DType type, std::array<int64_t, kMaxDims> ne);
  TensorView f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
    return tensor(DType::F32, {ne0, ne1, ne2, ne3});
  }
  // A contiguous tensor in the memory of the backend that computes on
  // `anchor` (a weight, say): an activation that the ops reading that
  // weight will write and read, e.g. a layer's normalised input.
  TensorView tensor_near(const TensorView& anchor, DType type, std::array<int64_t, kMaxDims> ne);
  TensorView f32_near(const TensorView& anchor, int64_t ne0, int64_t ne1 = 1) {
    return tensor_near(anchor, DType::F32, {ne0, ne1, 1, 1});
  }
  // `t`, or a copy of it in the memory of the backend that computes on
  // `anchor` when it lives elsewhere: the residual stream moves to the
  // device where offloaded layers begin (once per step, not once per op).
  TensorView place_near(const TensorView& t, const TensorView& anchor);
  // An I32 [n] tensor holding `values` (host memory, and a copy on each
  // device that its ops there read instead).
  TensorView upload_i32(std::span<const int32_t> values);
  // An F32 [ne0, ne1] tensor holding `values` (ne0 * ne1 of them), placed
  // as upload_i32's.
  TensorView upload_f32(std::span<const float> values, int64_t ne0, int64_t ne1);
  // `t` readable on the host: itself if it is host memory, else a copy in
  // the host arena (waiting for the device). The error is recorded too.
  Result<TensorView> to_host(const TensorView& t);
  // Runs what devices have recorded and waits; records and returns the
  // first error a device kernel reported.
  Status sync();
  Mark mark() const;
  void release(const Mark& m);
  // The host arena.
  const Arena& arena() const { return *arenas_[0]; }

  // --- ops (semantics: backend/op.h) ---------------------------------------
  // Outputs are new arena tensors unless `dst` is given (in-place use where
  // the op allows aliasing).
  TensorView get_rows(const TensorView& table, const TensorView& ids);
  TensorView mul_mat(const TensorView& w, const TensorView& x);
  TensorView mul_mat_id(const TensorView& w, const TensorView& x, const TensorView& ids);
  TensorView add(const TensorView& a, const TensorView& b, TensorView dst = {});
  TensorView mul(const TensorView& a, const TensorView& b, TensorView dst = {});
  TensorView scale(const TensorView& x, float s, float bias = 0.0f, TensorView dst = {});
  // dst = x element by element, bit for bit (any strides; F32 or I32).
  void cpy(const TensorView& x, const TensorView& dst);
  TensorView rms_norm(const TensorView& x, const TensorView& w, float eps, TensorView dst = {});
  // sum = a + b; norm = rms_norm(sum) * w. Both outputs given (may alias a/b).
  void add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& w, float eps,
                    const TensorView& sum, const TensorView& norm);
  // sum = a + rms_norm(b) * b_norm; norm = rms_norm(sum) [* w] (a
  // sandwich-norm block's end): one kRmsNormAddRmsNorm where a backend
  // selects a kernel for it, else rms_norm into b, then add_rms_norm (bit
  // for bit the same; b's contents are undefined after).
  void rms_norm_add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& b_norm,
                             const TensorView& w, float eps, const TensorView& sum,
                             const TensorView& norm);
  // dst = a + rms_norm(b) * b_norm (a post-norm block's end with no next
  // norm): one kRmsNormAdd where a backend selects a kernel for it, else
  // rms_norm into b, then add (bit for bit the same; b's contents are
  // undefined after).
  void rms_norm_add(const TensorView& a, const TensorView& b, const TensorView& b_norm, float eps,
                    const TensorView& dst);
  // Layer norm over dim 0: (x - mean) / sqrt(var + eps) [* w] [+ b] (kNorm).
  TensorView norm(const TensorView& x, const TensorView& w, const TensorView& b, float eps,
                  TensorView dst = {});
  TensorView rope(const TensorView& x, const TensorView& pos, const RopeParams& p,
                  const TensorView& freq_factors = {});
  TensorView soft_max(const TensorView& x, float scale = 1.0f);
  TensorView unary(const TensorView& x, UnaryKind kind, TensorView dst = {});
  // gate, up [F, n] -> [F, n]; up empty: gate [2F, n] holds gate then up.
  TensorView glu(const TensorView& gate, const TensorView& up, GluKind kind);  // default GluParams
  // glu(mul_mat(w, x)) with w [K, 2F] holding gate then up rows: one
  // kMulMatGlu where a backend selects a kernel for it, else the two ops
  // (bit for bit the same). Returns [F, n].
  TensorView mul_mat_glu(const TensorView& w, const TensorView& x, GluKind kind);
  // rope(x) (x [D, H, T]) whose last k_table.ne[0] / D heads per token go
  // to k_table's rows `slots` and v [Dv, T] to v_table's: one kRopeSetRows
  // where a backend selects a kernel for it (bit for bit rope then the two
  // set_rows). Returns the rotated x, or an empty view, recording nothing,
  // where none does: the caller then runs rope and set_rows.
  TensorView rope_set_rows(const TensorView& x, const TensorView& pos, const RopeParams& p,
                           const TensorView& freq_factors, const TensorView& k_table,
                           const TensorView& slots, const TensorView& v, const TensorView& v_table);
  // r += mul_mat(w, x) (r [N, M]), or with a gate g [1, M] r += mul_mat(w,
  // x) * sigmoid(g): one kMulMatAdd where a backend selects a kernel for
  // it, returning true; false, recording nothing, where none does (the
  // caller computes it as it otherwise would).
  bool mul_mat_add(const TensorView& w, const TensorView& x, const TensorView& r,
                   const TensorView& gate = TensorView{});
  // mul_mat(w, rms_norm(x) * norm) [N, M], and with _glu glu(that) [N / 2,
  // M] as mul_mat_glu: one kRmsNormMulMat where a backend selects a kernel
  // for it, else rms_norm then the product (bit for bit the same).
  TensorView rms_norm_mul_mat(const TensorView& w, const TensorView& x, const TensorView& norm,
                              float eps);
  TensorView rms_norm_mul_mat_glu(const TensorView& w, const TensorView& x,
                                  const TensorView& norm, float eps, GluKind kind);
  // rms_norm_mul_mat where a backend fuses it (kRmsNormMulMat); an empty
  // view, recording nothing, where none does or after an error (the caller
  // then normalises x itself).
  TensorView rms_norm_mul_mat_if_fused(const TensorView& w, const TensorView& x,
                                       const TensorView& norm, float eps);
  TensorView top_k(const TensorView& x, int k);
  // The routed experts' weighted sum: experts [E, k, n] (k >= 2), weights
  // [1, k, n] -> [E, n] = sum over u in rank order of experts[:, u] *
  // weights[0, u]: one kMoeSum where a backend selects a kernel for it,
  // else mul (into experts, whose contents are then the products) and k - 1
  // adds (bit for bit the same).
  TensorView moe_sum(const TensorView& experts, const TensorView& weights);
  // The MoE router (kMoeRoute): logits [X, n], optional selection bias [X]
  // -> chosen experts I32 [k, n] and their weights F32 [k, n], both in the
  // memory of the backend that routes.
  struct MoeRoute {
    TensorView ids;      // I32 [k, n]
    TensorView weights;  // F32 [k, n]
  };
  MoeRoute moe_route(const TensorView& logits, const TensorView& bias, const MoeRouteParams& p);
  void set_rows(const TensorView& table, const TensorView& rows, const TensorView& slots);
  // q [D, Hq, T]; k/v cache views; metadata I32; optional per-head sink
  // logits F32 [Hq]. Returns [Dv, Hq, T].
  TensorView flash_attn(const TensorView& q, const TensorView& k, const TensorView& v,
                        const TensorView& seq_idx, const TensorView& pos, const TensorView& kv_len,
                        const TensorView& block_table, const AttentionParams& p,
                        const TensorView& sinks = {});

  // Runs a prepared op (skipped after an error).
  void run(const Op& op);
  // Runs `op` into a new tensor `type` [ne] (op.dst is set to it), allocated
  // in the memory of the backend that will run it; returns it.
  TensorView run_new(Op& op, DType type, std::array<int64_t, kMaxDims> ne);
  // run_new, or into `dst` when one is given (nb[0] != 0).
  TensorView run_into(Op& op, const TensorView& dst, DType type, std::array<int64_t, kMaxDims> ne);
  // Runs `op` like run() if some backend selects a kernel for it and returns
  // true; returns false, recording nothing, when none does (the caller then
  // takes another path, e.g. unfused ops). An op whose home (see choose) is
  // a device runs there or not at all: no CPU fallback that would copy,
  // e.g., a whole state pool both ways.
  bool run_if_supported(const Op& op);

  // Times every op from now on into `profile` (borrowed; nullptr: back to
  // FOLIO_PROFILE's own profile, or none). Returns the previous target.
  OpProfile* set_profile(OpProfile* profile);

  // Number of ops run since construction (for tests and stats).
  uint64_t ops_run() const { return ops_run_; }
  // The KV plan of the current forward (reused: no allocation per step).
  cache::KvPlan& kv_plan() { return kv_plan_; }

  // Final hidden states (speculation with MTP heads, model/mtp_head.h):
  // while `sink` is set, Model::forward records there the final hidden
  // state (after output_norm) of every batch row of each forward that
  // succeeds, where the family computes it (final_hidden()); the decoders
  // then run the last layer on every row, not only the output rows.
  void set_hidden_sink(HiddenStates* sink) { hidden_sink_ = sink; }
  HiddenStates* hidden_sink() const { return hidden_sink_; }
  // The decoder's final hidden states of this forward [E, T] (empty until
  // set, and again after begin()).
  void set_final_hidden(const TensorView& h) { final_hidden_ = h; }
  const TensorView& final_hidden() const { return final_hidden_; }

 private:
  // Runs the device fusion `op` where a backend selects a kernel for it
  // (op.dst: the output, or its shape without data for a new one allocated
  // there); false, recording nothing, where none does. An allocation
  // failure is recorded (true).
  bool run_fusion(Op& op);
  TensorView norm_mul_mat(const TensorView& w, const TensorView& x, const TensorView& norm,
                          float eps, bool glu, GluKind kind);
  // A tensor of `type` and shape `ne` holding the `bytes` at `src`
  // (upload_i32, upload_f32).
  TensorView upload(const void* src, size_t bytes, DType type, std::array<int64_t, kMaxDims> ne);
  // The kRmsNormMulMat op of norm_mul_mat (output shape, no data).
  static Op norm_mul_mat_op(const TensorView& w, const TensorView& x, const TensorView& norm,
                            float eps, bool glu, GluKind kind);
  // Runs `op` as routed (skipped after an error; kUnsupported if `route` is
  // empty). `t0`: when routing began, for the profile.
  void execute(const RoutedOp& route, const Op& op, std::chrono::steady_clock::time_point t0);
  // The backend and kernel for `op` (see the header comment); does not validate.
  RoutedOp choose(const Op& op) const;
  // Where `op` belongs: the owner of its first pinned operand (the output
  // first), else of its first activation; nullptr when it has neither.
  Backend* home_of(const Op& op) const;
  // Where `p` lives: the device backend that owns it, else the host backend.
  Backend* owner_of(const void* p) const;
  bool in_arena(const void* p) const;
  // Is `p` the data of an upload_i32 tensor of this forward?
  bool is_upload(const void* p) const;
  // Synchronizes every device; the first error.
  Status sync_devices();
  // Arena of `b`'s memory.
  Arena& arena_of(const Backend* b);
  // A view like `t` (same strides) over a copy of its bytes in `to`'s memory.
  Result<TensorView> transfer(const TensorView& t, Backend* to);
  // Moves the bytes of `t`'s span from `from`'s memory to `to`'s (`dst` in `to`).
  Status copy_span(const TensorView& t, void* dst, Backend* from, Backend* to);

  std::unique_ptr<ThreadPool> owned_pool_;
  std::unique_ptr<Backend> owned_backend_;
  std::vector<Backend*> backends_;
  Backend* host_ = nullptr;                    // first backend computing on host memory
  int n_threads_ = 1;
  std::vector<std::unique_ptr<Arena>> arenas_;  // [0]: host; then one per device backend
  std::vector<Backend*> arena_owner_;           // backend of each arena (nullptr: host)
  // Copies of upload_i32 tensors on devices, this forward: (host data, device) -> copy.
  // Views sliced from an upload (a reshape keeps its pointer) find it by data.
  std::vector<std::pair<std::pair<const void*, const Backend*>, TensorView>> mirrors_;
  Status status_;
  uint64_t ops_run_ = 0;
  cache::KvPlan kv_plan_;
  HiddenStates* hidden_sink_ = nullptr;
  TensorView final_hidden_;
  std::unique_ptr<OpProfile> env_profile_;  // FOLIO_PROFILE=1's, logged at destruction
  OpProfile* profile_ = nullptr;            // where ops are timed; nullptr: nowhere
};

// A view of `t` with a new shape over the same contiguous memory (no CHECK:
// used on views whose data may be absent after an error).
TensorView reshape(const TensorView& t, std::array<int64_t, kMaxDims> ne);
// A view of rows [i1_begin, i1_begin + n) of dimension 1.
TensorView slice_rows(const TensorView& t, int64_t i1_begin, int64_t n);

}  // namespace folio::model
