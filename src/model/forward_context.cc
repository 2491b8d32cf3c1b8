#include "model/forward_context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>
#include <set>
#include <unordered_map>

#include "backend/buffer_type.h"
#include "backend/cpu/cpu_backend.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "model/op_profile.h"

namespace folio::model {

namespace {

// The key an op's time is kept under: its kernel's name (the op kind's when
// unrouted); mul_mat / mul_mat_id also by weight shape.
std::string profile_key(const RoutedOp& route, const Op& op) {
  std::string key =
      route ? route.backend->kernel_name_of(route.kernel) : std::string(op_kind_name(op.kind));
  if (op.kind == OpKind::kMulMat || op.kind == OpKind::kMulMatId) {
    key += " [" + std::to_string(op.src[0].ne[0]) + ", " + std::to_string(op.src[0].ne[1]) + "]";
  }
  return key;
}

// FOLIO_PROFILE's log: the totals per kernel, largest first.
void log_op_profile(const OpProfile& profile) {
  const std::vector<OpProfileRow> rows = profile.by_kernel();
  if (rows.empty()) return;
  const double total_ms = profile.total_ns() * 1e-6;
  FOLIO_LOG_INFO("op profile: {:.1f} ms in ops", total_ms);
  for (const OpProfileRow& r : rows) {
    const double ms = r.ns * 1e-6;
    FOLIO_LOG_INFO("  {:>9.2f} ms {:>5.1f}% {:>8} calls {:>9.2f} us/call  {}", ms,
                   100.0 * ms / std::max(total_ms, 1e-9), r.count,
                   1000.0 * ms / static_cast<double>(r.count), r.name);
  }
}

// Logs, once per process for each op kind and operand types, an op whose
// operands live on a device that has no kernel for it (it then runs where
// another backend can, with its operands copied there and back).
void note_fallback(const Backend& device, const Op& op) {
  std::string key = std::string(op_kind_name(op.kind)) + "(";
  for (const TensorView& t : op.src) {
    if (t.data != nullptr) key += std::string(dtype_name(t.dtype)) + ",";
  }
  key += ")";
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard lock(mu);
  if (!seen.insert(device.name() + key).second) return;
  FOLIO_LOG_INFO("{}: no kernel for {}: it runs on the CPU, its operands copied ({})",
                 device.name(), key, op.describe());
}

// Where a not yet allocated output points while its op is routed.
alignas(256) char output_placeholder[256];
void* const kOutputPlaceholder = output_placeholder;

bool profiling_requested() {
  const char* e = std::getenv("FOLIO_PROFILE");
  return e != nullptr && e[0] != '\0' && std::strcmp(e, "0") != 0;
}

}  // namespace

ForwardContext::ForwardContext(std::vector<Backend*> backends) : backends_(std::move(backends)) {
  if (profiling_requested()) {
    env_profile_ = std::make_unique<OpProfile>();
    profile_ = env_profile_.get();
  }
  arenas_.push_back(std::make_unique<Arena>(&host_buffer_type()));
  arena_owner_.push_back(nullptr);
  for (Backend* b : backends_) {
    if (b == nullptr) continue;
    if (b->is_host()) {
      if (host_ == nullptr) host_ = b;
      continue;
    }
    FOLIO_CHECK_MSG(arenas_.size() < kMaxArenas, "forward context: too many device backends");
    arenas_.push_back(std::make_unique<Arena>(&b->default_buffer_type()));
    arena_owner_.push_back(b);
  }
}

std::unique_ptr<ForwardContext> ForwardContext::cpu(int n_threads) {
  return with_device(nullptr, n_threads);
}

std::unique_ptr<ForwardContext> ForwardContext::with_device(Backend* device, int n_threads) {
  if (n_threads <= 0) n_threads = default_thread_count();
  auto pool = std::make_unique<ThreadPool>(n_threads);
  CpuBackendOptions options;
  options.pool = pool.get();
  auto backend = std::make_unique<CpuBackend>(options);
  std::vector<Backend*> backends;
  if (device != nullptr) backends.push_back(device);
  backends.push_back(backend.get());
  auto ctx = std::make_unique<ForwardContext>(std::move(backends));
  ctx->owned_pool_ = std::move(pool);
  ctx->owned_backend_ = std::move(backend);
  ctx->n_threads_ = n_threads;
  return ctx;
}

ForwardContext::~ForwardContext() {
  (void)sync_devices();  // device arenas may still be read by recorded work
  if (env_profile_ != nullptr) log_op_profile(*env_profile_);
}

OpProfile* ForwardContext::set_profile(OpProfile* profile) {
  OpProfile* previous = profile_;
  profile_ = profile != nullptr ? profile : env_profile_.get();
  return previous;
}

Status ForwardContext::sync_devices() {
  Status first;
  for (size_t i = 1; i < arena_owner_.size(); ++i) {
    const Status s = arena_owner_[i]->synchronize();
    if (first.ok()) first = s;
  }
  return first;
}

void ForwardContext::begin() {
  (void)sync_devices();  // the previous forward's work must finish before its memory is reused
  for (auto& a : arenas_) a->reset();
  mirrors_.clear();
  status_ = Status();
  final_hidden_ = TensorView();
}

void ForwardContext::fail(const Status& s) {
  if (status_.ok() && !s.ok()) status_ = s;
}

bool ForwardContext::is_upload(const void* p) const {
  for (const auto& [key, copy] : mirrors_) {
    if (key.first == p) return true;
  }
  return false;
}

Arena& ForwardContext::arena_of(const Backend* b) {
  for (size_t i = 1; i < arenas_.size(); ++i) {
    if (arena_owner_[i] == b) return *arenas_[i];
  }
  return *arenas_[0];
}

bool ForwardContext::in_arena(const void* p) const {
  for (const auto& a : arenas_) {
    if (a->contains(p)) return true;
  }
  return false;
}

Backend* ForwardContext::owner_of(const void* p) const {
  for (size_t i = 1; i < arena_owner_.size(); ++i) {
    if (arena_owner_[i]->can_access(p)) return arena_owner_[i];
  }
  return host_;
}

TensorView ForwardContext::tensor(DType type, std::array<int64_t, kMaxDims> ne) {
  TensorView shaped = TensorView::contiguous(nullptr, type, ne);
  if (!ok()) return shaped;
  Result<void*> p = arenas_[0]->alloc(shaped.nbytes_contiguous());
  if (!p.ok()) {
    fail(p.status());
    return shaped;
  }
  shaped.data = *p;
  return shaped;
}

TensorView ForwardContext::tensor_near(const TensorView& anchor, DType type,
                                       std::array<int64_t, kMaxDims> ne) {
  if (arenas_.size() == 1 || anchor.data == nullptr) return tensor(type, ne);
  TensorView shaped = TensorView::contiguous(nullptr, type, ne);
  if (!ok()) return shaped;
  Result<void*> p = arena_of(owner_of(anchor.data)).alloc(shaped.nbytes_contiguous());
  if (!p.ok()) {
    fail(p.status());
    return shaped;
  }
  shaped.data = *p;
  return shaped;
}

TensorView ForwardContext::place_near(const TensorView& t, const TensorView& anchor) {
  if (arenas_.size() == 1 || !ok() || t.data == nullptr || anchor.data == nullptr) return t;
  Backend* want = owner_of(anchor.data);
  if (want == owner_of(t.data)) return t;
  Result<TensorView> moved = transfer(t, want);
  if (!moved.ok()) {
    fail(moved.status());
    return t;
  }
  return *moved;
}

TensorView ForwardContext::upload_i32(std::span<const int32_t> values) {
  return upload(values.data(), values.size_bytes(), DType::I32,
                {static_cast<int64_t>(values.size()), 1, 1, 1});
}

TensorView ForwardContext::upload_f32(std::span<const float> values, int64_t ne0, int64_t ne1) {
  if (static_cast<int64_t>(values.size()) != ne0 * ne1) {
    fail(invalid_argument("upload_f32: {} values for [{}, {}]", values.size(), ne0, ne1));
    return TensorView();
  }
  return upload(values.data(), values.size_bytes(), DType::F32, {ne0, ne1, 1, 1});
}

TensorView ForwardContext::upload(const void* src, size_t bytes, DType type,
                                  std::array<int64_t, kMaxDims> ne) {
  TensorView t = tensor(type, ne);
  if (t.data == nullptr) return t;
  std::span<const uint8_t> values(static_cast<const uint8_t*>(src), bytes);
  if (!values.empty()) std::memcpy(t.data, values.data(), values.size_bytes());
  if (arenas_.size() == 1) return t;
  // A copy on every device now, outside any per-layer mark, so it lives as
  // long as the host tensor does.
  for (size_t i = 1; i < arenas_.size() && ok(); ++i) {
    Backend* device = arena_owner_[i];
    Result<void*> p = arenas_[i]->alloc(std::max<size_t>(values.size_bytes(), 4));
    if (!p.ok()) {
      fail(p.status());
      break;
    }
    fail(device->write(*p, values.data(), values.size_bytes()));
    TensorView copy = t;
    copy.data = *p;
    mirrors_.push_back({{t.data, device}, copy});
  }
  return t;
}

Result<TensorView> ForwardContext::to_host(const TensorView& t) {
  if (!ok()) return status_;
  if (t.data == nullptr || arenas_.size() == 1) return t;
  Backend* from = owner_of(t.data);
  if (from == nullptr || from->is_host()) {
    FOLIO_RETURN_IF_ERROR(sync());
    return t;
  }
  Result<TensorView> h = transfer(t, host_);
  if (!h.ok()) fail(h.status());
  if (ok()) fail(sync());
  if (!ok()) return status_;
  return h;
}

Status ForwardContext::sync() {
  fail(sync_devices());
  return status_;
}

void ForwardContext::set_replayable(bool replayable) {
  for (Backend* b : backends_) b->set_replayable(replayable);
}

ForwardContext::Mark ForwardContext::mark() const {
  Mark m;
  for (size_t i = 0; i < arenas_.size(); ++i) m.at[i] = arenas_[i]->mark();
  return m;
}

void ForwardContext::release(const Mark& m) {
  for (size_t i = 0; i < arenas_.size(); ++i) arenas_[i]->release(m.at[i]);
}

Backend* ForwardContext::home_of(const Op& op) const {
  // The backend holding the first pinned operand (the output first: a KV
  // table set_rows writes), else the first activation's.
  Backend* home = nullptr;
  auto consider = [&](const TensorView& t) {
    if (home == nullptr && t.data != nullptr && !in_arena(t.data)) home = owner_of(t.data);
  };
  if (op.dst.data != kOutputPlaceholder) consider(op.dst);
  for (const TensorView& t : op.src) consider(t);
  if (home == nullptr) {
    for (const TensorView& t : op.src) {
      if (t.data != nullptr && !is_upload(t.data)) {
        home = owner_of(t.data);
        break;
      }
    }
  }
  return home;
}

RoutedOp ForwardContext::choose(const Op& op) const {
  if (backends_.size() == 1) {
    Backend* b = backends_[0];
    const KernelHandle k = b->select_kernel(op);
    return k == nullptr ? RoutedOp{} : RoutedOp{b, k};
  }
  Backend* home = home_of(op);
  if (home != nullptr) {
    if (const KernelHandle k = home->select_kernel(op); k != nullptr) return {home, k};
    if (!home->is_host()) note_fallback(*home, op);
  }
  for (Backend* b : backends_) {
    if (b == nullptr || b == home) continue;
    if (const KernelHandle k = b->select_kernel(op); k != nullptr) return {b, k};
  }
  return {};
}

void ForwardContext::run(const Op& op) {
  if (!ok()) return;
  const OpProfile::Clock::time_point t0 =
      profile_ == nullptr ? OpProfile::Clock::time_point() : OpProfile::Clock::now();
  if (Status v = validate_op(op); !v.ok()) {
    fail(v);
    return;
  }
  execute(choose(op), op, t0);
}

bool ForwardContext::run_if_supported(const Op& op) {
  const OpProfile::Clock::time_point t0 =
      profile_ == nullptr ? OpProfile::Clock::time_point() : OpProfile::Clock::now();
  if (!validate_op(op).ok()) return false;
  // A device home must take it itself: on the CPU its pinned operands (a
  // fused decode op's whole state pool) would be copied there and back on
  // every call, which costs far more than the caller's other path on the
  // device (e.g. a Mamba-2 decode on a device without a fused scan kernel).
  RoutedOp route;
  Backend* home = backends_.size() > 1 ? home_of(op) : nullptr;
  if (home != nullptr && !home->is_host()) {
    const KernelHandle k = home->select_kernel(op);
    if (k == nullptr) return false;
    route = {home, k};
  } else {
    route = choose(op);
  }
  if (!route) return false;
  execute(route, op, t0);
  return true;
}

Status ForwardContext::copy_span(const TensorView& t, void* dst, Backend* from, Backend* to) {
  const size_t n = t.span_bytes();
  const bool from_host = from == nullptr || from->is_host();
  const bool to_host_mem = to == nullptr || to->is_host();
  if (from_host && to_host_mem) {
    std::memcpy(dst, t.data, n);
    return Status();
  }
  if (from_host) return to->write(dst, t.data, n);
  if (to_host_mem) return from->read(dst, t.data, n);
  if (from == to) return to->copy(dst, t.data, n);
  // Device to device: through the host.
  std::vector<uint8_t> tmp(n);
  FOLIO_RETURN_IF_ERROR(from->read(tmp.data(), t.data, n));
  return to->write(dst, tmp.data(), n);
}

Result<TensorView> ForwardContext::transfer(const TensorView& t, Backend* to) {
  for (const auto& [key, copy] : mirrors_) {  // uploads have a copy on every device
    if (key.first == t.data && key.second == to) {
      TensorView v = t;  // the caller's shape (a reshaped upload)
      v.data = copy.data;
      return v;
    }
  }
  FOLIO_ASSIGN_OR_RETURN(void* p, arena_of(to).alloc(t.span_bytes()));
  FOLIO_RETURN_IF_ERROR(copy_span(t, p, owner_of(t.data), to));
  TensorView v = t;
  v.data = p;
  return v;
}

void ForwardContext::execute(const RoutedOp& route, const Op& op, OpProfile::Clock::time_point t0) {
  if (!ok()) return;
  ++ops_run_;
  if (!route || arenas_.size() == 1) {
    fail(run_route(route, op));
  } else {
    // Operands the chosen backend cannot reach travel to its memory; outputs
    // it cannot reach are computed there (starting from their current
    // bytes: in-place ops and row scatters keep the rest) and copied back.
    Backend* b = route.backend;
    Op local = op;
    Status s;
    for (TensorView& t : local.src) {
      if (s.ok() && t.data != nullptr && !b->can_access(t.data)) {
        Result<TensorView> moved = transfer(t, b);
        if (moved.ok()) t = *moved; else s = moved.status();
      }
    }
    TensorView* outs[2] = {&local.dst, &local.dst2};
    const TensorView originals[2] = {op.dst, op.dst2};
    bool back[2] = {false, false};
    for (int i = 0; i < 2 && s.ok(); ++i) {
      TensorView& t = *outs[i];
      if (t.data == nullptr || b->can_access(t.data)) continue;
      // dst2 aliasing dst (or an input already moved) reuses that copy.
      if (i == 1 && op.dst2.data == op.dst.data) {
        t.data = local.dst.data;
        continue;
      }
      Result<TensorView> moved = transfer(t, b);
      if (moved.ok()) {
        t = *moved;
        back[i] = true;
        for (int j = 0; j < kMaxSrc; ++j) {  // inputs naming the output (in place) use the copy
          if (op.src[j].data == originals[i].data) local.src[j].data = t.data;
        }
      } else {
        s = moved.status();
      }
    }
    if (s.ok()) s = b->run_kernel(route.kernel, local);
    for (int i = 0; i < 2 && s.ok(); ++i) {
      if (back[i]) s = copy_span(*outs[i], originals[i].data, b, owner_of(originals[i].data));
    }
    fail(s);
  }
  if (profile_ != nullptr) {
    profile_->add(profile_key(route, op), op.kind, OpProfile::Clock::now() - t0);
  }
}

TensorView ForwardContext::run_new(Op& op, DType type, std::array<int64_t, kMaxDims> ne) {
  op.dst = TensorView::contiguous(nullptr, type, ne);
  if (!ok()) return op.dst;
  // The output lives where the op will run (a device's arena, or the host's).
  Arena* arena = arenas_[0].get();
  if (arenas_.size() > 1) {
    // Kernels select on shapes and types; a placeholder stands for the
    // output's memory while routing decides where that memory will be.
    op.dst.data = kOutputPlaceholder;
    const RoutedOp route = choose(op);
    op.dst.data = nullptr;
    if (route && !route.backend->is_host()) arena = &arena_of(route.backend);
  }
  Result<void*> p = arena->alloc(op.dst.nbytes_contiguous());
  if (!p.ok()) {
    fail(p.status());
    return op.dst;
  }
  op.dst.data = *p;
  run(op);
  return op.dst;
}

TensorView ForwardContext::run_into(Op& op, const TensorView& dst, DType type,
                                    std::array<int64_t, kMaxDims> ne) {
  if (dst.nb[0] == 0) return run_new(op, type, ne);
  op.dst = dst;
  run(op);
  return dst;
}

TensorView ForwardContext::get_rows(const TensorView& table, const TensorView& ids) {
  Op op;
  op.kind = OpKind::kGetRows;
  op.src[0] = table;
  op.src[1] = ids;
  return run_new(op, DType::F32, {table.ne[0], ids.nelements(), 1, 1});
}

TensorView ForwardContext::mul_mat(const TensorView& w, const TensorView& x) {
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = w;
  op.src[1] = x;
  return run_new(op, DType::F32, {w.ne[1], x.ne[1], x.ne[2], x.ne[3]});
}

TensorView ForwardContext::mul_mat_id(const TensorView& w, const TensorView& x,
                                      const TensorView& ids) {
  Op op;
  op.kind = OpKind::kMulMatId;
  op.src[0] = w;
  op.src[1] = x;
  op.src[2] = ids;
  return run_new(op, DType::F32, {w.ne[1], ids.ne[0], ids.ne[1], 1});
}

TensorView ForwardContext::add(const TensorView& a, const TensorView& b, TensorView dst) {
  Op op;
  op.kind = OpKind::kAdd;
  op.src[0] = a;
  op.src[1] = b;
  return run_into(op, dst, DType::F32, a.ne);
}

TensorView ForwardContext::mul(const TensorView& a, const TensorView& b, TensorView dst) {
  Op op;
  op.kind = OpKind::kMul;
  op.src[0] = a;
  op.src[1] = b;
  return run_into(op, dst, DType::F32, a.ne);
}

TensorView ForwardContext::scale(const TensorView& x, float s, float bias, TensorView dst) {
  Op op;
  op.kind = OpKind::kScale;
  op.src[0] = x;
  op.params = ScaleParams{s, bias};
  return run_into(op, dst, DType::F32, x.ne);
}

void ForwardContext::cpy(const TensorView& x, const TensorView& dst) {
  Op op;
  op.kind = OpKind::kCpy;
  op.src[0] = x;
  op.dst = dst;
  run(op);
}

TensorView ForwardContext::rms_norm(const TensorView& x, const TensorView& w, float eps,
                                    TensorView dst) {
  Op op;
  op.kind = OpKind::kRmsNorm;
  op.src[0] = x;
  op.src[1] = w;
  op.params = RmsNormParams{eps};
  return run_into(op, dst, DType::F32, x.ne);
}

void ForwardContext::add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& w,
                                  float eps, const TensorView& sum, const TensorView& norm) {
  Op op;
  op.kind = OpKind::kAddRmsNorm;
  op.dst = norm;
  op.dst2 = sum;
  op.src[0] = a;
  op.src[1] = b;
  op.src[2] = w;
  op.params = RmsNormParams{eps};
  run(op);
}

void ForwardContext::rms_norm_add_rms_norm(const TensorView& a, const TensorView& b,
                                           const TensorView& b_norm, const TensorView& w, float eps,
                                           const TensorView& sum, const TensorView& norm) {
  Op op;
  op.kind = OpKind::kRmsNormAddRmsNorm;
  op.dst = norm;
  op.dst2 = sum;
  op.src[0] = a;
  op.src[1] = b;
  op.src[2] = w;
  op.src[3] = b_norm;
  op.params = RmsNormParams{eps};
  if (!ok() || norm.data == nullptr || run_fusion(op)) return;
  rms_norm(b, b_norm, eps, b);
  add_rms_norm(a, b, w, eps, sum, norm);
}

void ForwardContext::rms_norm_add(const TensorView& a, const TensorView& b,
                                  const TensorView& b_norm, float eps, const TensorView& dst) {
  Op op;
  op.kind = OpKind::kRmsNormAdd;
  op.dst = dst;
  op.src[0] = a;
  op.src[1] = b;
  op.src[2] = b_norm;
  op.params = RmsNormParams{eps};
  if (!ok() || dst.data == nullptr || run_fusion(op)) return;
  rms_norm(b, b_norm, eps, b);
  add(a, b, dst);
}

TensorView ForwardContext::norm(const TensorView& x, const TensorView& w, const TensorView& b,
                                float eps, TensorView dst) {
  Op op;
  op.kind = OpKind::kNorm;
  op.src[0] = x;
  op.src[1] = w;
  op.src[2] = b;
  op.params = NormParams{eps};
  return run_into(op, dst, DType::F32, x.ne);
}

TensorView ForwardContext::rope(const TensorView& x, const TensorView& pos, const RopeParams& p,
                                const TensorView& freq_factors) {
  Op op;
  op.kind = OpKind::kRope;
  op.src[0] = x;
  op.src[1] = pos;
  op.src[2] = freq_factors;
  op.params = p;
  return run_new(op, DType::F32, x.ne);
}

TensorView ForwardContext::soft_max(const TensorView& x, float scale) {
  Op op;
  op.kind = OpKind::kSoftMax;
  op.src[0] = x;
  op.params = SoftMaxParams{scale};
  return run_new(op, DType::F32, x.ne);
}

TensorView ForwardContext::unary(const TensorView& x, UnaryKind kind, TensorView dst) {
  Op op;
  op.kind = OpKind::kUnary;
  op.src[0] = x;
  op.params = UnaryParams{kind};
  return run_into(op, dst, DType::F32, x.ne);
}

TensorView ForwardContext::glu(const TensorView& gate, const TensorView& up, GluKind kind) {
  Op op;
  op.kind = OpKind::kGlu;
  op.src[0] = gate;
  op.src[1] = up;
  op.params = GluParams{kind, false};
  auto ne = gate.ne;
  if (up.empty()) ne[0] /= 2;  // gate and up as the halves of one row
  return run_new(op, DType::F32, ne);
}

TensorView ForwardContext::mul_mat_glu(const TensorView& w, const TensorView& x, GluKind kind) {
  Op op;
  op.kind = OpKind::kMulMatGlu;
  op.src[0] = w;
  op.src[1] = x;
  GluParams gp;
  gp.kind = kind;
  op.params = gp;
  const std::array<int64_t, kMaxDims> ne{w.ne[1] / 2, x.ne[1], 1, 1};
  op.dst = TensorView::contiguous(nullptr, DType::F32, ne);
  if (!ok()) return op.dst;
  if (!run_fusion(op)) return glu(mul_mat(w, x), TensorView{}, kind);  // no backend fuses it
  return op.dst;
}

TensorView ForwardContext::rope_set_rows(const TensorView& x, const TensorView& pos,
                                         const RopeParams& p, const TensorView& freq_factors,
                                         const TensorView& k_table, const TensorView& slots,
                                         const TensorView& v, const TensorView& v_table) {
  Op op;
  op.kind = OpKind::kRopeSetRows;
  op.src[0] = x;
  op.src[1] = pos;
  op.src[2] = freq_factors;
  op.src[3] = slots;
  op.src[4] = v;
  op.src[5] = v_table;
  op.dst2 = k_table;
  op.params = p;
  op.dst = TensorView::contiguous(nullptr, DType::F32, x.ne);
  if (!ok() || !run_fusion(op)) return TensorView{};
  return op.dst;
}

bool ForwardContext::mul_mat_add(const TensorView& w, const TensorView& x, const TensorView& r,
                                 const TensorView& gate) {
  Op op;
  op.kind = OpKind::kMulMatAdd;
  op.src[0] = w;
  op.src[1] = x;
  op.src[2] = r;
  op.src[3] = gate;
  op.dst = r;
  return ok() && r.data != nullptr && run_fusion(op);
}

TensorView ForwardContext::rms_norm_mul_mat(const TensorView& w, const TensorView& x,
                                            const TensorView& norm, float eps) {
  return norm_mul_mat(w, x, norm, eps, false, GluKind::kSwiGlu);
}

TensorView ForwardContext::rms_norm_mul_mat_glu(const TensorView& w, const TensorView& x,
                                                const TensorView& norm, float eps,
                                                GluKind kind) {
  return norm_mul_mat(w, x, norm, eps, true, kind);
}

TensorView ForwardContext::rms_norm_mul_mat_if_fused(const TensorView& w, const TensorView& x,
                                                     const TensorView& norm, float eps) {
  Op op = norm_mul_mat_op(w, x, norm, eps, false, GluKind::kSwiGlu);
  if (!ok() || !run_fusion(op) || !ok()) return TensorView{};
  return op.dst;
}

Op ForwardContext::norm_mul_mat_op(const TensorView& w, const TensorView& x, const TensorView& norm,
                                   float eps, bool glu, GluKind kind) {
  Op op;
  op.kind = OpKind::kRmsNormMulMat;
  op.src[0] = w;
  op.src[1] = x;
  op.src[2] = norm;
  NormMulMatParams np;
  np.eps = eps;
  np.glu = glu;
  np.glu_params.kind = kind;
  op.params = np;
  const std::array<int64_t, kMaxDims> ne{glu ? w.ne[1] / 2 : w.ne[1], x.ne[1], 1, 1};
  op.dst = TensorView::contiguous(nullptr, DType::F32, ne);
  return op;
}

TensorView ForwardContext::norm_mul_mat(const TensorView& w, const TensorView& x,
                                        const TensorView& norm, float eps, bool glu,
                                        GluKind kind) {
  Op op = norm_mul_mat_op(w, x, norm, eps, glu, kind);
  if (!ok() || run_fusion(op)) return op.dst;
  const TensorView h = rms_norm(x, norm, eps);  // no backend fuses it
  return glu ? mul_mat_glu(w, h, kind) : mul_mat(w, h);
}

bool ForwardContext::run_fusion(Op& op) {
  const OpProfile::Clock::time_point t0 =
      profile_ == nullptr ? OpProfile::Clock::time_point() : OpProfile::Clock::now();
  // Routing decides on shapes; a placeholder stands for a new output
  // meanwhile. As in run_if_supported, a device home runs it or nobody does.
  const bool new_output = op.dst.data == nullptr;
  if (new_output) op.dst.data = kOutputPlaceholder;
  RoutedOp route;
  if (validate_op(op).ok()) {
    Backend* home = backends_.size() > 1 ? home_of(op) : nullptr;
    if (home != nullptr && !home->is_host()) {
      if (const KernelHandle k = home->select_kernel(op); k != nullptr) route = {home, k};
    } else {
      route = choose(op);
    }
  }
  if (new_output) op.dst.data = nullptr;
  if (!route) return false;
  if (new_output) {
    Arena& arena = arena_of(route.backend);  // the host arena for a host backend
    Result<void*> p = arena.alloc(op.dst.nbytes_contiguous());
    if (!p.ok()) {
      fail(p.status());
      return true;
    }
    op.dst.data = *p;
  }
  execute(route, op, t0);
  return true;
}

TensorView ForwardContext::top_k(const TensorView& x, int k) {
  Op op;
  op.kind = OpKind::kTopK;
  op.src[0] = x;
  op.params = TopKParams{k};
  return run_new(op, DType::I32, {k, x.ne[1], x.ne[2], x.ne[3]});
}

TensorView ForwardContext::moe_sum(const TensorView& experts, const TensorView& weights) {
  const int64_t e = experts.ne[0], k = experts.ne[1], n = experts.ne[2];
  Op op;
  op.kind = OpKind::kMoeSum;
  op.src[0] = experts;
  op.src[1] = weights;
  op.dst = TensorView::contiguous(nullptr, DType::F32, {e, n, 1, 1});
  if (!ok()) return op.dst;
  if (run_fusion(op)) return op.dst;
  mul(experts, weights, experts);
  // Expert u's rows of experts [E, k, n] as an [E, n] view.
  auto slice = [&](int64_t u) {
    TensorView v = experts;
    if (v.data != nullptr) v.data = static_cast<char*>(v.data) + static_cast<size_t>(u) * experts.nb[1];
    v.ne = {e, n, 1, 1};
    v.nb = {experts.nb[0], experts.nb[2], experts.nb[2] * static_cast<size_t>(n),
            experts.nb[2] * static_cast<size_t>(n)};
    return v;
  };
  const TensorView out = add(slice(0), slice(1));
  for (int64_t u = 2; u < k; ++u) add(out, slice(u), out);
  return out;
}

ForwardContext::MoeRoute ForwardContext::moe_route(const TensorView& logits, const TensorView& bias,
                                                   const MoeRouteParams& p) {
  Op op;
  op.kind = OpKind::kMoeRoute;
  op.src[0] = logits;
  op.src[1] = bias;
  op.params = p;
  op.dst = TensorView::contiguous(nullptr, DType::I32, {p.k, logits.ne[1], 1, 1});
  op.dst2 = TensorView::contiguous(nullptr, DType::F32, {p.k, logits.ne[1], 1, 1});
  if (!ok()) return {op.dst, op.dst2};
  // Both outputs live where the op will run (as run_new's one).
  Arena* arena = arenas_[0].get();
  if (arenas_.size() > 1) {
    op.dst.data = op.dst2.data = kOutputPlaceholder;
    const RoutedOp route = choose(op);
    op.dst.data = op.dst2.data = nullptr;
    if (route && !route.backend->is_host()) arena = &arena_of(route.backend);
  }
  for (TensorView* t : {&op.dst, &op.dst2}) {
    Result<void*> mem = arena->alloc(t->nbytes_contiguous());
    if (!mem.ok()) {
      fail(mem.status());
      return {op.dst, op.dst2};
    }
    t->data = *mem;
  }
  run(op);
  return {op.dst, op.dst2};
}

void ForwardContext::set_rows(const TensorView& table, const TensorView& rows,
                              const TensorView& slots) {
  Op op;
  op.kind = OpKind::kSetRows;
  op.dst = table;
  op.src[0] = rows;
  op.src[1] = slots;
  run(op);
}

TensorView ForwardContext::flash_attn(const TensorView& q, const TensorView& k, const TensorView& v,
                                      const TensorView& seq_idx, const TensorView& pos,
                                      const TensorView& kv_len, const TensorView& block_table,
                                      const AttentionParams& p, const TensorView& sinks) {
  Op op;
  op.kind = OpKind::kFlashAttn;
  op.src[0] = q;
  op.src[1] = k;
  op.src[2] = v;
  op.src[3] = seq_idx;
  op.src[4] = pos;
  op.src[5] = kv_len;
  op.src[6] = block_table;
  op.src[7] = sinks;
  op.params = p;
  return run_new(op, DType::F32, {v.ne[0], q.ne[1], q.ne[2], 1});
}

TensorView reshape(const TensorView& t, std::array<int64_t, kMaxDims> ne) {
  return TensorView::contiguous(t.data, t.dtype, ne);
}

TensorView slice_rows(const TensorView& t, int64_t i1_begin, int64_t n) {
  TensorView v = t;
  if (v.data != nullptr)
    v.data = static_cast<char*>(v.data) + static_cast<size_t>(i1_begin) * t.nb[1];
  v.ne[1] = n;
  return v;
}

}  // namespace folio::model
