// A Recorder without a device, for unit tests of the Vulkan kernels' match
// and record functions (kernels.h). Its "device memory" is address ranges
// reserved as real device memory is (backend/device_memory.h: inaccessible,
// so a record function that dereferenced a tensor would fault), each one
// buffer that dispatch() binds as a whole; desc() locates a view in them as
// the backend does. Every dispatch is kept: shader, spec constants, a copy
// of the parameter bytes, the tensors with their descriptors and buffers,
// and the workgroup counts. dispatch() refuses what the backend would refuse
// before touching a device (an unknown shader, a tensor count the shader's
// bindings do not take, too many tensors, workgroup counts outside
// [1, 65535]) and tensors outside its memory.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/device_memory.h"
#include "backend/vulkan/kernels.h"
#include "backend/vulkan/vk_pipelines.h"
#include "backend/vulkan/vk_replay.h"

namespace folio::vulkan {

struct RecordedDispatch {
  std::string shader;
  std::vector<uint32_t> spec;       // constant_id i = spec[i]
  std::vector<uint8_t> params;      // binding 0's bytes
  std::vector<TensorView> tensors;  // binding 2 + i (empty: a placeholder)
  std::vector<TensorDesc> descs;    // desc() of each tensor
  std::vector<int> buffers;         // which buffer each binds; -1: a placeholder
  uint32_t groups[3] = {0, 0, 0};

  // The parameter bytes as the record function's struct P (the size must match).
  template <typename P>
  P params_as() const {
    P p;
    EXPECT_EQ(params.size(), sizeof(P)) << shader;
    std::memcpy(&p, params.data(), std::min(params.size(), sizeof(P)));
    return p;
  }
  uint64_t total_groups() const { return uint64_t{groups[0]} * groups[1] * groups[2]; }
};

class FakeRecorder final : public Recorder {
 public:
  explicit FakeRecorder(const DeviceCaps& caps = DeviceCaps{}) : caps_(caps) {}

  const DeviceCaps& caps() const override { return caps_; }
  DeviceCaps& mutable_caps() { return caps_; }

  // A new buffer of `bytes` bytes of fake device memory; its base address.
  char* alloc(size_t bytes) {
    Result<DeviceAddressRange> r = DeviceAddressRange::reserve(bytes, nullptr, this);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return nullptr;
    buffers_.push_back(std::make_unique<DeviceAddressRange>(std::move(r).value()));
    return buffers_.back()->base();
  }
  // A contiguous tensor in a buffer of its own.
  TensorView tensor(DType dtype, std::initializer_list<int64_t> shape) {
    TensorView probe = TensorView::contiguous(nullptr, dtype, shape);
    return TensorView::contiguous(alloc(probe.nbytes_contiguous()), dtype, shape);
  }

  Status dispatch_spans(const char* shader, std::span<const uint32_t> spec, const void* params,
                        size_t params_bytes, std::span<const TensorView> tensors, uint32_t gx,
                        uint32_t gy, uint32_t gz) override {
    held_.reset();  // a held dispatch is in the list already, as it was
    const EmbeddedShader* src = nullptr;
    for (const EmbeddedShader& s : embedded_shaders()) {
      if (std::strcmp(s.name, shader) == 0) src = &s;
    }
    if (src == nullptr) return internal_error("fake recorder: no embedded shader '{}'", shader);
    const auto n = static_cast<uint32_t>(tensors.size());
    if (n > kMaxDispatchTensors)
      return internal_error("fake recorder: {}: too many tensors", shader);
    // The backend binds max(the module's bindings, 2 + n) and insists on 2 + n.
    if (spirv_binding_count({src->words, src->n_words}) > 2 + n) {
      return internal_error(
          "fake recorder: shader '{}' declares {} bindings, dispatched with {} tensors", shader,
          spirv_binding_count({src->words, src->n_words}), n);
    }
    if (params == nullptr || params_bytes == 0 || params_bytes % 4 != 0) {
      return internal_error("fake recorder: {}: {} parameter bytes", shader, params_bytes);
    }
    for (uint32_t g : {gx, gy, gz}) {
      if (g < 1 || g > 65535) {
        return internal_error("fake recorder: {}: workgroups ({}, {}, {})", shader, gx, gy, gz);
      }
    }
    RecordedDispatch d;
    d.shader = shader;
    d.spec.assign(spec.begin(), spec.end());
    d.params.assign(static_cast<const uint8_t*>(params),
                    static_cast<const uint8_t*>(params) + params_bytes);
    for (const TensorView& t : tensors) {
      FOLIO_ASSIGN_OR_RETURN(TensorDesc desc_t, desc(t));
      d.tensors.push_back(t);
      d.descs.push_back(desc_t);
      d.buffers.push_back(t.empty() ? -1 : buffer_of(t.data, 0));
    }
    d.groups[0] = gx;
    d.groups[1] = gy;
    d.groups[2] = gz;
    dispatches_.push_back(std::move(d));
    return Status();
  }

  // A held dispatch goes into the list at once (as the next command would
  // record it); take_held() takes it out again.
  Status hold(HeldDispatch d) override {
    FOLIO_RETURN_IF_ERROR(dispatch(d));
    held_ = std::move(d);
    return Status();
  }
  std::optional<HeldDispatch> take_held() override {
    std::optional<HeldDispatch> d = std::move(held_);
    held_.reset();
    if (d) dispatches_.pop_back();
    return d;
  }
  Result<TensorView> counter() override {
    if (counter_.data == nullptr) counter_ = tensor(DType::I32, {1});
    return counter_;
  }

  Result<TensorDesc> desc(const TensorView& t) const override {
    TensorDesc d;
    if (t.empty()) return d;
    const int b = buffer_of(t.data, t.span_bytes());
    if (b < 0) {
      return invalid_argument("fake recorder: tensor {} is not in the fake device memory",
                              t.shape_string());
    }
    const uint64_t off =
        static_cast<uint64_t>(static_cast<const char*>(t.data) - buffers_[b]->base());
    if (off + t.span_bytes() > UINT32_MAX) {
      return unsupported("fake recorder: tensor {} ends beyond 32-bit offsets", t.shape_string());
    }
    d.off = static_cast<uint32_t>(off);
    for (int i = 0; i < 4; ++i) {
      if (t.ne[i] < 0 || t.ne[i] > UINT32_MAX || t.nb[i] > UINT32_MAX) {
        return unsupported("fake recorder: tensor {} has dims or strides beyond 32 bits",
                           t.shape_string());
      }
      d.ne[i] = static_cast<uint32_t>(t.ne[i]);
      d.nb[i] = static_cast<uint32_t>(t.nb[i]);
    }
    return d;
  }

  Result<TensorView> scratch(size_t bytes) override {
    scratch_bytes_.push_back(bytes);
    const auto n = static_cast<int64_t>((std::max<size_t>(bytes, 4) + 3) / 4);
    return TensorView::contiguous(alloc(static_cast<size_t>(n) * 4), DType::F32, {n});
  }

  const std::vector<RecordedDispatch>& dispatches() const { return dispatches_; }
  // The sizes scratch() was asked for, in call order.
  const std::vector<size_t>& scratch_requests() const { return scratch_bytes_; }
  // The buffer holding [p, p + n), or -1.
  int buffer_of(const void* p, size_t n) const {
    const char* c = static_cast<const char*>(p);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const char* base = buffers_[i]->base();
      if (c >= base && c + n <= base + buffers_[i]->size()) return static_cast<int>(i);
    }
    return -1;
  }

 private:
  DeviceCaps caps_;
  std::vector<std::unique_ptr<DeviceAddressRange>> buffers_;
  std::vector<RecordedDispatch> dispatches_;
  std::vector<size_t> scratch_bytes_;
  std::optional<HeldDispatch> held_;  // the last of dispatches_, held
  TensorView counter_;
};

// The kernel the backend selects for `op` on a device with `caps` (the
// first entry of vulkan_kernels() of its kind whose match() holds), or null.
inline const KernelDef* select_vulkan_kernel(const Op& op, const DeviceCaps& caps) {
  for (const KernelDef& k : vulkan_kernels()) {
    if (k.kind == op.kind && k.match(op, caps)) return &k;
  }
  return nullptr;
}

}  // namespace folio::vulkan
