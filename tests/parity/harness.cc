#include "parity/harness.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>

#include "backend/buffer_type.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/devices.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "parity/expected_kernels.h"
#include "quant/quant.h"

namespace folio::parity {

TensorView OpCase::alloc(DType dtype, const std::array<int64_t, kMaxDims>& ne) {
  TensorView shape = TensorView::contiguous(nullptr, dtype, ne);
  auto buf = HostBuffer::create(shape.nbytes_contiguous());
  FOLIO_CHECK_MSG(buf.ok(), "{}", buf.status().to_string());
  shape.data = (*buf)->data();
  buffers_.push_back(std::move(buf).value());
  return shape;
}

TensorView OpCase::alloc(DType dtype, std::initializer_list<int64_t> shape) {
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  int i = 0;
  for (int64_t d : shape) ne[i++] = d;
  return alloc(dtype, ne);
}

void OpCase::fill_uniform(const TensorView& t, float lo, float hi) {
  FOLIO_CHECK(t.is_contiguous());
  std::uniform_real_distribution<float> dist(lo, hi);
  const int64_t n = t.nelements();
  std::vector<float> f(static_cast<size_t>(n));
  for (float& x : f) x = dist(rng_);
  if (t.dtype == DType::F32) {
    std::memcpy(t.data, f.data(), f.size() * sizeof(float));
  } else {
    quant::quantize_row_ref(t.dtype, f.data(), t.data, n);
  }
}

void OpCase::fill_ints(const TensorView& t, int32_t lo, int32_t hi) {
  FOLIO_CHECK(t.dtype == DType::I32 && t.is_contiguous());
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  int32_t* p = static_cast<int32_t*>(t.data);
  for (int64_t i = 0; i < t.nelements(); ++i) p[i] = dist(rng_);
}

void OpCase::snapshot() {
  saved_.clear();
  for (const auto& b : buffers_) {
    const uint8_t* p = static_cast<const uint8_t*>(b->data());
    saved_.emplace_back(p, p + b->size());
  }
}

void OpCase::restore() {
  for (size_t i = 0; i < saved_.size(); ++i) std::memcpy(buffers_[i]->data(), saved_[i].data(), saved_[i].size());
}

double nmse(const float* a, const float* b, int64_t n) {
  double err = 0, ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(b[i]) && std::isnan(a[i])) continue;
    if (!std::isfinite(a[i]) && std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    const double d = static_cast<double>(a[i]) - b[i];
    err += d * d;
    ref += static_cast<double>(b[i]) * b[i];
  }
  if (std::isnan(err)) return std::numeric_limits<double>::infinity();
  return ref > 0 ? err / ref : err;
}

CaseList all_cases(bool with_perf_only) {
  CaseList cases;
  add_basic_cases(cases);
  add_attention_cases(cases);
  add_recurrent_cases(cases, with_perf_only);
  add_cache_cases(cases);
  add_fused_cases(cases);
  add_packed_cases(cases, with_perf_only);
  for (auto& c : cases) c->snapshot();
  return cases;
}

namespace {

// The top-tier CPU backend with its kernels on a thread pool. Its kernel
// names carry kThreadedSuffix, so the harness runs it as a variant of its own
// and also checks it bit for bit against the same kernel on one thread.
constexpr const char* kThreadedSuffix = "/mt";

class ThreadedCpuBackend final : public Backend {
 public:
  ThreadedCpuBackend(Isa isa, ThreadPool* pool)
      : inner_(CpuBackendOptions{isa, false, pool}), threads_(pool->size()) {}
  std::string name() const override { return inner_.name() + "-mt"; }
  KernelHandle select_kernel(const Op& op) const override { return inner_.select_kernel(op); }
  Status run_kernel(KernelHandle kernel, const Op& op) override {
    return inner_.run_kernel(kernel, op);
  }
  std::string kernel_name_of(KernelHandle kernel) const override {
    return inner_.kernel_name_of(kernel) + kThreadedSuffix + std::to_string(threads_);
  }
  const BufferType& default_buffer_type() const override { return inner_.default_buffer_type(); }
  Isa isa() const { return inner_.isa(); }

 private:
  CpuBackend inner_;
  int threads_;
};

}  // namespace

BackendTarget target_of(const Backend& b) {
  BackendTarget t;
  if (const auto* cpu = dynamic_cast<const CpuBackend*>(&b)) {
    t.reference = b.name() == "cpu-ref";
    t.tier = t.reference ? KernelTier::kRef : max_tier_for(cpu->isa());
  } else if (const auto* mt = dynamic_cast<const ThreadedCpuBackend*>(&b)) {
    t.tier = max_tier_for(mt->isa());
  } else {
    // Devices: "Vulkan0" -> "vulkan", device 0 of list_devices("vulkan").
    std::string n = b.name();
    size_t digits = n.size();
    while (digits > 0 && n[digits - 1] >= '0' && n[digits - 1] <= '9') --digits;
    const int index = digits < n.size() ? std::atoi(n.c_str() + digits) : 0;
    n.resize(digits);
    for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    t.device = n;
    if (Result<std::vector<DeviceDescription>> devs = list_devices(n); devs.ok()) {
      for (const DeviceDescription& d : *devs) {
        if (d.index == index) t.int_dot = d.features.find("integer dot") != std::string::npos;
      }
    }
  }
  return t;
}

std::string selected_kernel(const Backend& b, const Op& op) {
  if (!b.supports_op(op)) return kDeclined;
  std::string k = b.kernel_name(op);
  const size_t suffix_at = k.rfind(kThreadedSuffix);
  return suffix_at == std::string::npos ? k : k.substr(0, suffix_at);
}

std::vector<std::unique_ptr<Backend>> make_backends() {
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(std::make_unique<CpuBackend>(CpuBackendOptions{Isa::kScalar, true, nullptr}));
  const Isa top = active_isa();
  for (Isa isa : isa_ladder(top)) {
    b.push_back(std::make_unique<CpuBackend>(CpuBackendOptions{isa, false, nullptr}));
  }
  // Two threads: enough to split every parallel kernel, cheap on small machines.
  static ThreadPool pool(2);
  b.push_back(std::make_unique<ThreadedCpuBackend>(top, &pool));
  return b;
}

Result<std::vector<std::unique_ptr<Backend>>> make_backends(const std::string& which) {
  if (which != "cpu" && which != "vulkan" && which != "all") {
    return invalid_argument("unknown backend '{}' (cpu, vulkan, all)", which);
  }
  std::vector<std::unique_ptr<Backend>> b;
  if (which == "cpu" || which == "all") {
    b = make_backends();
  } else {
    b.push_back(std::make_unique<CpuBackend>(CpuBackendOptions{Isa::kScalar, true, nullptr}));
  }
  if (which == "vulkan" || which == "all") {
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<Backend> dev, open_device("vulkan"));
    b.push_back(std::make_unique<DeviceCaseBackend>(std::move(dev)));
  }
  return b;
}

DeviceCaseBackend::DeviceCaseBackend(std::unique_ptr<Backend> device) : device_(std::move(device)) {}

void DeviceCaseBackend::bind_case(OpCase& c) {
  std::vector<const void*> bufs;
  for (const auto& b : c.buffers()) bufs.push_back(b->data());
  if (case_ == &c && bufs == bound_) return;
  case_ = &c;
  bound_ = std::move(bufs);
  mirrors_.clear();
}

Status DeviceCaseBackend::upload() {
  if (case_ == nullptr) return internal_error("device harness: no case bound");
  const auto& bufs = case_->buffers();
  if (mirrors_.size() != bufs.size()) {
    mirrors_.clear();
    for (const auto& hb : bufs) {
      FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> m,
                             device_->default_buffer_type().alloc(hb->size()));
      mirrors_.push_back(std::move(m));
    }
  }
  for (size_t i = 0; i < bufs.size(); ++i) {
    FOLIO_RETURN_IF_ERROR(mirrors_[i]->write(0, bufs[i]->data(), bufs[i]->size()));
  }
  return Status();
}

Status DeviceCaseBackend::download() {
  const auto& bufs = case_->buffers();
  for (size_t i = 0; i < bufs.size(); ++i) {
    FOLIO_RETURN_IF_ERROR(mirrors_[i]->read(0, bufs[i]->data(), bufs[i]->size()));
  }
  return Status();
}

Result<Op> DeviceCaseBackend::to_device(const Op& op) {
  Op d = op;
  const auto& bufs = case_->buffers();
  auto move = [&](TensorView& t) -> Status {
    if (t.data == nullptr) return Status();
    const char* p = static_cast<const char*>(t.data);
    for (size_t i = 0; i < bufs.size(); ++i) {
      const char* base = static_cast<const char*>(bufs[i]->data());
      if (p >= base && p < base + bufs[i]->size()) {
        t.data = static_cast<char*>(mirrors_[i]->data()) + (p - base);
        return Status();
      }
    }
    return internal_error("device harness: a view of {} is not in the case's buffers",
                          op.describe());
  };
  FOLIO_RETURN_IF_ERROR(move(d.dst));
  FOLIO_RETURN_IF_ERROR(move(d.dst2));
  for (TensorView& t : d.src) FOLIO_RETURN_IF_ERROR(move(t));
  return d;
}

Status DeviceCaseBackend::run_kernel(KernelHandle kernel, const Op& op) {
  FOLIO_RETURN_IF_ERROR(upload());
  FOLIO_ASSIGN_OR_RETURN(Op d, to_device(op));
  Status s = device_->run_kernel(kernel, d);
  Status sync = device_->synchronize();
  if (s.ok()) s = sync;
  FOLIO_RETURN_IF_ERROR(s);
  return download();
}

Status DeviceCaseBackend::run_resident(const Op& op, int iterations) {
  FOLIO_RETURN_IF_ERROR(validate_op(op));
  const KernelHandle k = device_->select_kernel(op);
  if (k == nullptr) return unsupported("{}: no kernel for {}", name(), op.describe());
  if (mirrors_.size() != case_->buffers().size()) FOLIO_RETURN_IF_ERROR(upload());
  FOLIO_ASSIGN_OR_RETURN(Op d, to_device(op));
  for (int i = 0; i < iterations; ++i) FOLIO_RETURN_IF_ERROR(device_->run_kernel(k, d));
  return device_->synchronize();
}

namespace {

void bind_case(const std::vector<std::unique_ptr<Backend>>& backends, OpCase& c) {
  for (const auto& b : backends) {
    if (auto* d = dynamic_cast<DeviceCaseBackend*>(b.get())) d->bind_case(c);
  }
}

// The outputs of an op, copied out (dst then dst2, then the case's
// more_outputs).
struct Output {
  std::vector<uint8_t> dst, dst2;
  std::vector<std::vector<uint8_t>> more;
};

std::vector<uint8_t> copy_view(const TensorView& t) {
  if (t.empty()) return {};
  const uint8_t* p = static_cast<const uint8_t*>(t.data);
  if (t.is_contiguous()) return std::vector<uint8_t>(p, p + t.nbytes_contiguous());
  // A strided view (kCpy's outputs): its elements in index order.
  const size_t es = type_size(t.dtype);
  FOLIO_CHECK(block_size(t.dtype) == 1);
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(t.nelements()) * es);
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
        for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) {
          const uint8_t* e = p + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
          out.insert(out.end(), e, e + es);
        }
      }
    }
  }
  return out;
}

Status run_once(OpCase& c, Backend& b, const Op& op, Output* out) {
  c.restore();
  FOLIO_RETURN_IF_ERROR(b.run(op));
  out->dst = copy_view(op.dst);
  out->dst2 = copy_view(op.dst2);
  out->more.clear();
  for (const TensorView& t : c.more_outputs) out->more.push_back(copy_view(t));
  return Status();
}

// Equivalents: their one op, or their steps in order.
bool eq_supported(const Backend& b, const Equivalent& eq) {
  if (eq.steps.empty()) return b.supports_op(eq.op);
  for (const Op& op : eq.steps) {
    if (!b.supports_op(op)) return false;
  }
  return true;
}

std::string eq_kernel_name(const Backend& b, const Equivalent& eq) {
  if (eq.steps.empty()) return b.kernel_name(eq.op);
  std::string names;
  for (const Op& op : eq.steps) {
    if (!names.empty()) names += '+';
    names += b.kernel_name(op);
  }
  return names;
}

Status run_equivalent(OpCase& c, Backend& b, const Equivalent& eq, Output* out) {
  if (eq.steps.empty()) return run_once(c, b, eq.op, out);
  c.restore();
  for (const Op& op : eq.steps) FOLIO_RETURN_IF_ERROR(b.run(op));
  out->dst = copy_view(eq.op.dst);
  out->dst2 = copy_view(eq.op.dst2);
  out->more.clear();
  for (const TensorView& t : c.more_outputs) out->more.push_back(copy_view(t));
  return Status();
}

// Compares one output tensor; returns "" when it matches.
std::string compare(const TensorView& t, const std::vector<uint8_t>& got,
                    const std::vector<uint8_t>& want, bool exact, double max_nmse, double* err) {
  *err = 0;
  if (got.size() != want.size()) return "size mismatch";
  if (t.dtype != DType::F32 || exact) {
    if (std::memcmp(got.data(), want.data(), got.size()) == 0) return "";
    if (t.dtype == DType::F32) {
      *err = nmse(reinterpret_cast<const float*>(got.data()), reinterpret_cast<const float*>(want.data()),
                  static_cast<int64_t>(got.size() / 4));
      return fmt::format("not bit-identical (nmse {:.3g})", *err);
    }
    return "not identical";
  }
  *err = nmse(reinterpret_cast<const float*>(got.data()), reinterpret_cast<const float*>(want.data()),
              static_cast<int64_t>(got.size() / 4));
  if (*err <= max_nmse) return "";
  return fmt::format("nmse {:.3g} > {:.3g}", *err, max_nmse);
}

bool check_outputs(const Op& op, const Output& got, const Output& want, bool exact, double max_nmse,
                   std::string* msg, const std::vector<TensorView>& more = {}) {
  double e1 = 0, e2 = 0;
  std::string m1 = compare(op.dst, got.dst, want.dst, exact, max_nmse, &e1);
  std::string m2 = op.dst2.empty() ? "" : compare(op.dst2, got.dst2, want.dst2, exact, max_nmse, &e2);
  for (size_t i = 0; i < more.size() && m1.empty() && m2.empty(); ++i) {
    double e = 0;
    if (got.more.size() != more.size() || want.more.size() != more.size()) {
      *msg = "outputs missing";
      return false;
    }
    if (std::string m = compare(more[i], got.more[i], want.more[i], exact, max_nmse, &e);
        !m.empty()) {
      *msg = fmt::format("output {} {}", i + 3, m);
      return false;
    }
    e2 = std::max(e2, e);
  }
  if (m1.empty() && m2.empty()) {
    *msg = exact ? "exact" : fmt::format("nmse {:.3g}", std::max(e1, e2));
    return true;
  }
  *msg = !m1.empty() ? "dst " + m1 : "dst2 " + m2;
  return false;
}

}  // namespace

namespace {

// The kernel contract (expected_kernels.h) for one case on `backends`.
void check_kernel_contract(const OpCase& c, const std::vector<std::unique_ptr<Backend>>& backends,
                           CaseResult* r) {
  const Expectation e = expected_kernels(c);
  if (e.cpu.empty() && !c.device_fusion) {
    r->ok = false;
    r->lines.push_back(fmt::format("no kernel rule for {} (tests/parity/expected_kernels.cc)",
                                   op_kind_name(c.op.kind)));
    return;
  }
  int cpu_tiers = 0, cpu_taking = 0;
  for (const auto& bp : backends) {
    const BackendTarget t = target_of(*bp);
    std::string want;
    if (t.device.empty()) {
      want = expected_cpu_kernel(e, t.tier);
    } else if (t.device == "vulkan") {
      want = expected_vulkan_kernel(e, t.int_dot);
      if (!t.int_dot && !e.vulkan_int_dot.empty()) {
        r->not_exercised.push_back(fmt::format("{} (needs integer dot products)", e.vulkan_int_dot));
      }
    } else {
      want = "(no expectation for device " + t.device + ")";
    }
    const std::string got = selected_kernel(*bp, c.op);
    if (t.device.empty() && !t.reference) {
      ++cpu_tiers;
      cpu_taking += got != kDeclined;
    }
    if (got == want) continue;
    r->ok = false;
    r->lines.push_back(fmt::format("{}: selected {} where {} is expected (tier {})", bp->name(), got,
                                   want, t.device.empty() ? kernel_tier_name(t.tier) : t.device));
  }
  if (c.device_fusion && cpu_taking > 0) {
    r->ok = false;
    r->lines.push_back("a CPU tier takes a device fusion");
  }
  if (cpu_tiers > 0 && cpu_taking == 0 && !c.device_fusion) {
    r->ok = false;
    r->lines.push_back("every CPU tier above the reference declines it");
  }
}

}  // namespace

CaseResult run_test(OpCase& c, const std::vector<std::unique_ptr<Backend>>& backends) {
  CaseResult r;
  bind_case(backends, c);
  check_kernel_contract(c, backends, &r);
  Backend& ref = *backends[0];
  if (c.device_fusion) {
    // The reference is the composition on the reference backend.
    if (Status v = validate_op(c.op); !v.ok() || c.equivalents.empty() ||
                                      !eq_supported(ref, c.equivalents[0])) {
      r.ok = false;
      r.lines.push_back(fmt::format("{}: no reference composition for the fusion ({})", ref.name(),
                                    v.ok() ? std::string("no kernel") : v.message()));
      return r;
    }
  } else if (!ref.supports_op(c.op)) {
    r.ok = false;
    Status v = validate_op(c.op);
    r.lines.push_back(fmt::format("{}: reference does not support it ({})", ref.name(),
                                  v.ok() ? std::string("no kernel") : v.message()));
    return r;
  }
  Output want;
  Status ref_run = c.device_fusion ? run_equivalent(c, ref, c.equivalents[0], &want)
                                   : run_once(c, ref, c.op, &want);
  if (!ref_run.ok()) {
    r.ok = false;
    r.lines.push_back(fmt::format("{}: {}", ref.name(), ref_run.to_string()));
    return r;
  }
  const std::string ref_kname =
      c.device_fusion ? eq_kernel_name(ref, c.equivalents[0]) : ref.kernel_name(c.op);
  std::set<std::string> seen_kernels{ref_kname};
  std::map<std::string, Output> outputs{{ref_kname, want}};  // main output per kernel
  // A fusion's composition is the reference itself: its equivalents are
  // checked on the backends that run the fused op.
  for (const auto& eq : c.device_fusion ? std::vector<Equivalent>{} : c.equivalents) {
    Output got;
    std::string msg;
    Status s = run_equivalent(c, ref, eq, &got);
    bool ok = s.ok() && check_outputs(c.op, got, want, eq.exact, eq.max_nmse, &msg, c.more_outputs);
    if (!s.ok()) msg = s.to_string();
    r.ok &= ok;
    r.lines.push_back(
        fmt::format("{} [{}] {}: {}", ref.name(), eq_kernel_name(ref, eq), eq.what, msg));
  }
  for (size_t i = 1; i < backends.size(); ++i) {
    Backend& b = *backends[i];
    if (!b.supports_op(c.op)) {
      r.not_supported.push_back(b.name());
      continue;
    }
    const std::string kname = b.kernel_name(c.op);
    // A threaded variant of a kernel: base name before the suffix. Reference
    // kernels are single-threaded, so their threaded runs are skipped.
    const size_t suffix_at = kname.rfind(kThreadedSuffix);
    const std::string base = suffix_at == std::string::npos ? kname : kname.substr(0, suffix_at);
    if (base != kname && base == ref_kname) continue;
    Output main_out;
    if (!seen_kernels.count(kname)) {
      seen_kernels.insert(kname);
      std::string msg;
      Status s = run_once(c, b, c.op, &main_out);
      const bool device = dynamic_cast<DeviceCaseBackend*>(&b) != nullptr;
      const bool exact = c.exact && !(c.exact_on_host_only && device);
      bool ok = s.ok() &&
                check_outputs(c.op, main_out, want, exact, c.max_nmse, &msg, c.more_outputs);
      if (!s.ok()) msg = s.to_string();
      if (ok && base != kname && outputs.count(base)) {
        // Threads split independent work only: results equal one thread's.
        std::string same;
        ok = check_outputs(c.op, main_out, outputs[base], true, 0, &same, c.more_outputs);
        msg += ok ? ", bit-identical to 1 thread" : "; vs 1 thread: " + same;
      }
      if (s.ok()) outputs[kname] = main_out;
      r.ok &= ok;
      ++r.variants_checked;
      r.lines.push_back(fmt::format("{} [{}]: {}", b.name(), kname, msg));
    }
    // Equivalents must hold on every backend whose kernels for them differ.
    for (const auto& eq : c.equivalents) {
      const std::string ekey = kname + "|" + eq_kernel_name(b, eq) + "|" + eq.what;
      if (seen_kernels.count(ekey) || !eq_supported(b, eq)) continue;
      seen_kernels.insert(ekey);
      if (main_out.dst.empty()) {
        if (Status s = run_once(c, b, c.op, &main_out); !s.ok()) continue;
      }
      Output got;
      std::string msg;
      Status s = run_equivalent(c, b, eq, &got);
      bool ok = s.ok() &&
                check_outputs(c.op, got, main_out, eq.exact, eq.max_nmse, &msg, c.more_outputs);
      if (!s.ok()) msg = s.to_string();
      r.ok &= ok;
      r.lines.push_back(
          fmt::format("{} [{}] {}: {}", b.name(), eq_kernel_name(b, eq), eq.what, msg));
    }
  }
  return r;
}

namespace {

// "cpu-avx2   mul_mat.q4_0.avx2   12.3 us/run  ... GFLOP/s  ... GB/s"
std::string perf_line(const OpCase& c, const std::string& backend, const std::string& kernel,
                      double seconds, int64_t iters) {
  const double us = seconds / static_cast<double>(iters) * 1e6;
  std::string line = fmt::format("{:<10} {:<28} {:>10.1f} us/run", backend, kernel, us);
  if (c.flops > 0) line += fmt::format("  {:>8.2f} GFLOP/s", c.flops / us * 1e-3);
  if (c.bytes > 0) line += fmt::format("  {:>8.2f} GB/s", c.bytes / us * 1e-3);
  if (c.tokens > 0) line += fmt::format("  {:>9.0f} tok/s", c.tokens / us * 1e6);
  return line;
}

}  // namespace

std::vector<std::string> run_perf(OpCase& c, const std::vector<std::unique_ptr<Backend>>& backends,
                                  double min_seconds) {
  std::vector<std::string> lines;
  std::set<std::string> seen;
  bind_case(backends, c);
  const std::string ref_kname = backends[0]->kernel_name(c.op);
  for (const auto& bp : backends) {
    Backend& b = *bp;
    if (!b.supports_op(c.op)) continue;
    const std::string kname = b.kernel_name(c.op) + (b.name() == "cpu-ref" ? " (ref)" : "");
    // Reference kernels ignore the pool: their threaded variant is not timed.
    if (kname.rfind(kThreadedSuffix) != std::string::npos &&
        kname.substr(0, kname.rfind(kThreadedSuffix)) == ref_kname) {
      continue;
    }
    if (c.perf_only && b.kernel_name(c.op) == ref_kname) continue;
    if (seen.count(kname)) continue;
    seen.insert(kname);
    c.restore();
    if (!b.run(c.op).ok()) continue;  // warm-up
    using Clock = std::chrono::steady_clock;
    if (auto* dev = dynamic_cast<DeviceCaseBackend*>(&b)) {
      // Device: batches of runs on resident copies, one wait per batch.
      int64_t iters = 0;
      int batch = 1;
      const auto t0 = Clock::now();
      double elapsed = 0;
      do {
        if (!dev->run_resident(c.op, batch).ok()) break;
        iters += batch;
        batch = std::min(batch * 2, 256);
        elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      } while (elapsed < min_seconds);
      if (iters > 0) lines.push_back(perf_line(c, b.name(), kname, elapsed, iters));
      continue;
    }
    int64_t iters = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      if (c.in_place) c.restore();
      Status s = b.run(c.op);
      (void)s;
      ++iters;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < min_seconds);
    lines.push_back(perf_line(c, b.name(), kname, elapsed, iters));
  }
  return lines;
}

}  // namespace folio::parity
