// Backend: something that runs ops (the CPU; a GPU backend fits the same
// interface). Routing validates an op once, asks each backend in priority
// order to select an implementation for it, and runs the first selection on
// its backend; no backend name ever appears in routing logic.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/op.h"
#include "core/status.h"

namespace folio {

class BufferType;

// What a device has recorded into its command stream since it was opened
// (cumulative; callers take differences): compute dispatches, pipeline
// barriers (each one waits for every command recorded before it) and queue
// submissions. Transfers (uploads, read-backs, copies, fills) are not
// dispatches but may add barriers and submits. A replayed step counts the
// dispatches, barriers and submits it runs, as when it was recorded.
// recorded_steps / replayed_steps: segments of replayable steps (the work
// between two waits; set_replayable) captured while recorded live, and
// segments that replayed such a recording instead of recording.
struct StreamCounters {
  uint64_t dispatches = 0;
  uint64_t barriers = 0;
  uint64_t submits = 0;
  uint64_t recorded_steps = 0;
  uint64_t replayed_steps = 0;
};

// The implementation a backend selected for one op: opaque outside that
// backend (for the CPU an entry of its kernel table; for a GPU backend, say,
// a compiled pipeline). nullptr: the backend cannot run the op.
using KernelHandle = const void*;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // The implementation this backend would run `op` with (its dtypes, shapes,
  // params), or nullptr. Does not validate (route_op, supports_op and run
  // call validate_op first, once for all backends), but only reads the op's
  // descriptors, so an invalid op is harmless here.
  virtual KernelHandle select_kernel(const Op& op) const = 0;
  // Runs `op` with `kernel`, a non-null select_kernel(op) of this backend,
  // for a valid op. Errors the kernel finds in the data (out-of-range ids,
  // ...) come back as its Status.
  virtual Status run_kernel(KernelHandle kernel, const Op& op) = 0;
  // Name of a selected kernel ("mul_mat.ref", "mul_mat.q8_0.avx512", ...):
  // the parity harness skips variants that fall back to the same kernel, and
  // profiling totals time per kernel.
  virtual std::string kernel_name_of(KernelHandle kernel) const { return name(); }
  // Buffer type for activations / KV memory this backend computes on.
  virtual const BufferType& default_buffer_type() const = 0;

  // --- memory ---------------------------------------------------------------
  // Can this backend's kernels read and write `p` directly? The CPU: host
  // memory; a device: its own memory (backend/device_memory.h).
  virtual bool can_access(const void* p) const;
  // Transfers, ordered with the ops run on this backend: `dst` / `src` in
  // memory this backend can access, the other side host memory. A device
  // records write() and copy() and runs them with its next submission;
  // read() waits for everything recorded before it. The host copies at once.
  virtual Status write(void* dst, const void* host_src, size_t n);
  virtual Status read(void* host_dst, const void* src, size_t n);
  virtual Status copy(void* dst, const void* src, size_t n);
  // Runs everything recorded and waits for it. A device returns the first
  // error one of its kernels found in its data (an id out of range, ...)
  // since the last synchronize.
  virtual Status synchronize() { return Status(); }
  // Is this backend's memory the host's (so a view's pointer can be read)?
  virtual bool is_host() const { return true; }
  // The command-stream counters of a device backend; nullopt for one that
  // runs ops at once (the CPU).
  virtual std::optional<StreamCounters> stream_counters() const { return std::nullopt; }
  // Whether the work recorded from the next wait on (until this is called
  // again) is a step that repeats with other values in the same tensors and
  // parameters (a decode step): a device may capture it once and replay it.
  // A hint only: what runs is the same either way.
  virtual void set_replayable(bool replayable) {}

  // One op on this backend alone (tests, the parity harness).
  // Can this backend run `op`? False for ops that fail validate_op.
  bool supports_op(const Op& op) const;
  // Runs `op`: validate_op's error for an invalid op, kUnsupported without a
  // kernel, else the kernel's Status.
  Status run(const Op& op);
  // Name of the kernel select_kernel picks for `op` ("none" without one).
  // Does not validate, so a test can check which kernel reports an invalid
  // op's error.
  std::string kernel_name(const Op& op) const;
};

// Where routing sends one op: the backend and the kernel it selected.
struct RoutedOp {
  Backend* backend = nullptr;  // nullptr: no backend can run the op
  KernelHandle kernel = nullptr;
  explicit operator bool() const { return backend != nullptr; }
};

// Op routing: validates `op`, then takes the first backend in `priority`
// whose select_kernel accepts it; empty for an invalid op or when none does.
RoutedOp route_op(const std::vector<Backend*>& priority, const Op& op);

// Runs `op` with the kernel `route` selected; kUnsupported if it is empty.
Status run_route(const RoutedOp& route, const Op& op);
// route_op, then run_route.
Status run_routed(const std::vector<Backend*>& priority, const Op& op);

}  // namespace folio
