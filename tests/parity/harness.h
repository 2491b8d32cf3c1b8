// Op-parity harness (in the spirit of llama.cpp's test-backend-ops). A case
// owns its input and output tensors and one Op over them. In test mode each
// case runs on the reference backend (scalar ref kernels) and on every other
// CPU kernel variant that supports it (one backend per ISA tier this machine
// has, plus the top tier on two threads; variants that resolve to the same
// kernel are run once), and outputs are compared by normalised mean squared
// error, or exactly where the case promises bit-identity. A case may also carry *equivalent* ops that must
// produce the same output on the same backend (paged vs contiguous flash
// attention: exactly; flash attention vs materialised SDPA: within a bound;
// a fused decode op vs its unfused gather / plain op / scatter sequence:
// exactly).
// Perf mode times each variant and prints us/run, GFLOP/s and GB/s.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/kernel.h"
#include "backend/op.h"
#include "tensor/buffer.h"

namespace folio::parity {

struct Equivalent {
  std::string what;       // "paged, permuted blocks"
  Op op;                  // must give the main op's output (dst, and dst2 if any)
  bool exact = false;
  double max_nmse = 1e-7;
  // Several ops standing for one (an unfused path: gather, plain op,
  // scatter). When non-empty they run in order instead of `op`, whose dst /
  // dst2 then only name the views the steps leave the outputs in.
  std::vector<Op> steps;
};

class OpCase {
 public:
  explicit OpCase(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  // Allocates a zeroed, 64-byte aligned contiguous tensor owned by the case.
  TensorView alloc(DType dtype, std::initializer_list<int64_t> shape);
  TensorView alloc(DType dtype, const std::array<int64_t, kMaxDims>& ne);

  // Fills with uniform values in [lo, hi); quantized types are filled by
  // quantizing uniform floats (the scalar reference quantizer).
  void fill_uniform(const TensorView& t, float lo = -1.0f, float hi = 1.0f);
  void fill_ints(const TensorView& t, int32_t lo, int32_t hi);  // I32, uniform in [lo, hi]
  std::mt19937& rng() { return rng_; }

  Op op;                          // the op under test
  std::vector<Equivalent> equivalents;
  bool exact = false;             // variants must match the reference bit for bit
  bool exact_on_host_only = false;  // exact for CPU kernels only: devices (their own exp)
                                    // are held to max_nmse against the reference
  double max_nmse = 1e-7;         // otherwise: NMSE bound vs the reference
  double flops = 0;               // per run, for perf mode (0: not reported)
  double bytes = 0;               // bytes touched per run, for perf mode
  double tokens = 0;              // tokens per run, for perf mode (0: not reported)
  bool perf_only = false;         // too slow against the reference: perf mode only
  bool in_place = false;          // op overwrites an input: perf restores inputs each run
  bool allow_non_finite = false;  // reference output may hold inf/NaN (else the case fails:
                                  // identical NaNs would otherwise compare equal)
  // A device fusion (backend/op.h): no CPU kernel (every tier declines);
  // equivalents[0] is its unfused composition, whose run on the reference
  // backend is the reference output, and which must give the fused op's
  // output on each device as the equivalent says (exactly).
  bool device_fusion = false;
  // Tensors the op writes besides dst and dst2 (a table a fused op writes
  // through a src), compared like them for every variant and equivalent.
  std::vector<TensorView> more_outputs;

  // Input snapshot: taken after the case is built, restored before each run
  // so in-place ops (state updates) always start from the same inputs.
  void snapshot();
  void restore();
  // The host buffers every view of the case points into.
  const std::vector<std::unique_ptr<HostBuffer>>& buffers() const { return buffers_; }

 private:
  std::string name_;
  std::mt19937 rng_{1234};
  std::vector<std::unique_ptr<HostBuffer>> buffers_;
  std::vector<std::vector<uint8_t>> saved_;
};

using CaseList = std::vector<std::unique_ptr<OpCase>>;

// A case of one op kind with its parameters, its tensors still to be added.
inline std::unique_ptr<OpCase> new_case(std::string name, OpKind kind,
                                        OpParams params = NoParams{}) {
  auto c = std::make_unique<OpCase>(std::move(name));
  c->op.kind = kind;
  c->op.params = params;
  return c;
}

// Case groups (one file each).
void add_basic_cases(CaseList& cases);      // cases_basic.cc
void add_attention_cases(CaseList& cases);  // cases_attention.cc
void add_recurrent_cases(CaseList& cases, bool perf);  // cases_recurrent.cc (perf: + perf_only)
void add_cache_cases(CaseList& cases);      // cases_cache.cc
void add_fused_cases(CaseList& cases);      // cases_fused.cc
void add_packed_cases(CaseList& cases, bool perf);  // cases_packed.cc (perf: also perf_only cases)
// cases_packed.cc: the packed copy of plain weight w (quant/repack.h) as
// the CPU's packed buffer types store it for `consumer`, in c's memory.
TensorView packed_weight_copy(OpCase& c, const TensorView& w, OpKind consumer);
// Every case; with_perf_only (perf mode) also builds the perf_only cases that
// are costly to build (big weights: cases_packed.cc; 2048-token prefills:
// cases_recurrent.cc). Perf mode never times the reference kernels on
// perf_only cases.
CaseList all_cases(bool with_perf_only = false);

// Normalised MSE: sum (a - b)^2 / sum b^2 (b the reference); plain sum of
// squares when the reference is all zeros. NaN/inf anywhere in `a` where `b`
// is finite gives +inf.
double nmse(const float* a, const float* b, int64_t n);

struct CaseResult {
  bool ok = true;
  std::vector<std::string> lines;  // one per variant / equivalent checked
  int variants_checked = 0;
  std::vector<std::string> not_supported;  // backends that declined the op (as expected)
  std::vector<std::string> not_exercised;  // kernels a device lacks the feature for
};

// What a backend of the harness stands for in the kernel contract
// (expected_kernels.h): a CPU kernel tier (the reference: tier kRef), or a
// device ("vulkan").
struct BackendTarget {
  KernelTier tier = KernelTier::kRef;
  std::string device;  // empty: a CPU backend
  bool reference = false;
  bool int_dot = false;  // a device with integer dot products (its features say so)
};
BackendTarget target_of(const Backend& b);

// The kernel `b` selects for `op` as the contract names it ("declined" when
// it has none; a threaded CPU variant's name without its thread suffix).
std::string selected_kernel(const Backend& b, const Op& op);

// The backends to compare: the reference first, then one CPU backend per ISA
// tier up to the machine's (active) tier, then the top tier again on a
// two-thread pool (kernel names suffixed "/mt2"; run_test also requires its
// outputs to be bit-identical to the same kernel on one thread).
std::vector<std::unique_ptr<Backend>> make_backends();

// Which backends a run compares against the reference: "cpu" (the tiers
// above), "vulkan" (the Vulkan device), "all" (both). Devices come from
// backend/devices.h; kUnsupported when the build or machine has none.
Result<std::vector<std::unique_ptr<Backend>>> make_backends(const std::string& which);

// A device backend in the harness: cases own host buffers, so before each
// run every buffer of the case is copied to device memory (once allocated
// per case), the op's views are moved onto those copies, the op runs and
// the device synchronizes, and every buffer is copied back: the harness
// then reads outputs (and in-place updates) where it always does.
class DeviceCaseBackend final : public Backend {
 public:
  explicit DeviceCaseBackend(std::unique_ptr<Backend> device);
  // The case whose buffers the next runs use (mirrors are made again when
  // its buffers are not the ones mirrored: a new case at a freed one's address).
  void bind_case(OpCase& c);
  std::string name() const override { return device_->name(); }
  KernelHandle select_kernel(const Op& op) const override { return device_->select_kernel(op); }
  Status run_kernel(KernelHandle kernel, const Op& op) override;
  std::string kernel_name_of(KernelHandle kernel) const override {
    return device_->kernel_name_of(kernel);
  }
  const BufferType& default_buffer_type() const override { return device_->default_buffer_type(); }
  // Runs `op` `iterations` times on the device copies (uploaded once) and
  // synchronizes once: what perf mode times.
  Status run_resident(const Op& op, int iterations);

 private:
  Result<Op> to_device(const Op& op);
  Status upload();
  Status download();

  std::unique_ptr<Backend> device_;
  OpCase* case_ = nullptr;
  std::vector<const void*> bound_;                // the case's buffers when mirrored
  std::vector<std::unique_ptr<Buffer>> mirrors_;  // per case buffer
};

// Runs one case in test mode against `backends` (backends[0] = reference).
// Besides the outputs it checks the kernel contract: every backend selects
// the kernel expected_kernels() names for its tier or device, or declines
// where a decline is expected; a case no CPU tier above the reference takes
// fails too.
CaseResult run_test(OpCase& c, const std::vector<std::unique_ptr<Backend>>& backends);

// Times one case on each distinct kernel; returns printable lines.
std::vector<std::string> run_perf(OpCase& c, const std::vector<std::unique_ptr<Backend>>& backends,
                                  double min_seconds);

}  // namespace folio::parity
