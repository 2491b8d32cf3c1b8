#include "backend/vulkan/vulkan_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/device_memory.h"
#include "backend/vulkan/vk_hazards.h"
#include "backend/vulkan/vk_memory.h"
#include "backend/vulkan/vk_pipelines.h"
#include "core/aligned.h"

namespace folio::vulkan {

void Recorder::split_groups(uint64_t n, uint32_t& x, uint32_t& y) {
  if (n == 0) n = 1;
  if (n <= 65535) {
    x = static_cast<uint32_t>(n);
    y = 1;
    return;
  }
  x = 65535;
  y = static_cast<uint32_t>((n + 65534) / 65535);
}

const std::vector<KernelDef>& vulkan_kernels() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> t;
    add_elementwise_kernels(t);
    add_norm_kernels(t);
    add_rope_kernels(t);
    add_sort_kernels(t);
    add_matmul_kernels(t);
    add_attention_kernels(t);
    add_recurrent_kernels(t);
    return t;
  }();
  return table;
}

namespace {

constexpr size_t kParamsRingBytes = size_t{4} << 20;
constexpr size_t kUploadRingBytes = size_t{64} << 20;
constexpr size_t kReadbackBytes = size_t{32} << 20;
constexpr size_t kParamsAlign = 256;  // >= minStorageBufferOffsetAlignment everywhere
constexpr uint32_t kSetsPerPool = 2048;
constexpr uint32_t kMaxBindings = 16;
// Dispatches per submitted piece of a step: small enough that the device
// starts early and stays busy while the host records the rest.
constexpr uint32_t kDispatchesPerPiece = 32;

}  // namespace

class VulkanBackend::Impl {
 public:
  VulkanBackend& self;
  std::unique_ptr<VulkanDevice> device;
  std::unique_ptr<PipelineCache> pipelines;
  // Descriptors pushed into the command buffer (VK_KHR_push_descriptor);
  // else a set allocated from desc_pool and written per dispatch.
  bool push_descriptors = false;
  mutable std::recursive_mutex mu;

  std::unique_ptr<DeviceHeap> heap;  // tensors' memory

  VkCommandPool cmd_pool = VK_NULL_HANDLE;
  // Command buffers of the current step: cmds[0 .. cur) are submitted and
  // may be running, cmds[cur] (== cmd) is being recorded. A step's work is
  // submitted in pieces so the device runs while the host records the rest;
  // the host waits once, at flush(), on a fence that follows them all.
  std::vector<VkCommandBuffer> cmds;
  size_t cur = 0;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  bool in_flight = false;        // submitted pieces not yet waited for
  uint32_t since_submit = 0;     // dispatches recorded into cmd
  VkFence fence = VK_NULL_HANDLE;
  VkDescriptorPool desc_pool = VK_NULL_HANDLE;
  uint32_t sets_used = 0;
  bool recording = false;
  // Ranges read and written since the last barrier: a command waits only
  // for those it overlaps (vk_hazards.h). The first command after a wait on
  // the host waits for everything (mark_all in flush()).
  HazardTracker hazards;
  VkMem params, upload, readback, errors;
  size_t params_used = 0, upload_used = 0;
  StreamCounters counters;  // what was recorded and submitted so far
  // Recorder::scratch: one device allocation handed out front to back and
  // rewound by flush() (whatever used it before has then finished).
  void* scratch_mem = nullptr;
  size_t scratch_cap = 0, scratch_used = 0;

  explicit Impl(VulkanBackend& s) : self(s) {}

  ~Impl() {
    if (!device) return;
    VkDevice d = device->device();
    vk().vkDeviceWaitIdle(d);
    pipelines.reset();
    heap.reset();
    for (VkMem* m : {&params, &upload, &readback, &errors}) destroy_buffer(*device, *m);
    if (desc_pool != VK_NULL_HANDLE) vk().vkDestroyDescriptorPool(d, desc_pool, nullptr);
    if (fence != VK_NULL_HANDLE) vk().vkDestroyFence(d, fence, nullptr);
    if (cmd_pool != VK_NULL_HANDLE) vk().vkDestroyCommandPool(d, cmd_pool, nullptr);
  }

  Status init() {
    const VulkanDevice& d = *device;
    uint64_t memory_limit = 0;  // FOLIO_VULKAN_MEMORY_MIB (0: the device's)
    if (const char* e = std::getenv("FOLIO_VULKAN_MEMORY_MIB"); e != nullptr && e[0] != '\0') {
      memory_limit = static_cast<uint64_t>(std::strtoull(e, nullptr, 10)) << 20;
    }
    heap = std::make_unique<DeviceHeap>(d, &self, memory_limit);
    pipelines = std::make_unique<PipelineCache>(d, push_descriptors);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = d.queue_family();
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateCommandPool(d.device(), &pci, nullptr, &cmd_pool),
                                   "vkCreateCommandPool"));
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateFence(d.device(), &fci, nullptr, &fence), "vkCreateFence"));
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dci.maxSets = kSetsPerPool;
    dci.poolSizeCount = 1;
    dci.pPoolSizes = &ps;
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateDescriptorPool(d.device(), &dci, nullptr, &desc_pool),
                                   "vkCreateDescriptorPool"));
    Result<VkMem> ring = make_buffer(d, kParamsRingBytes, d.params_memory_type(), true,
                                     "parameter ring");
    if (!ring.ok()) {  // the device-local host-visible heap may be small: plain host memory
      ring = make_buffer(d, kParamsRingBytes, d.upload_memory_type(), true, "parameter ring");
    }
    FOLIO_ASSIGN_OR_RETURN(params, std::move(ring));
    FOLIO_ASSIGN_OR_RETURN(upload, make_buffer(d, kUploadRingBytes, d.upload_memory_type(), true,
                                               "upload staging"));
    FOLIO_ASSIGN_OR_RETURN(readback, make_buffer(d, kReadbackBytes, d.readback_memory_type(), true,
                                                 "readback staging"));
    FOLIO_ASSIGN_OR_RETURN(errors, make_buffer(d, 256, d.upload_memory_type(), true, "error word"));
    std::memset(errors.map, 0, 256);
    return Status();
  }

  // --- memory (DeviceHeap, under the lock) -----------------------------------
  Result<void*> alloc(size_t size) {
    std::lock_guard lock(mu);
    return heap->alloc(size);
  }
  void free(void* p, size_t size) {
    std::lock_guard lock(mu);
    heap->free(p, size);
  }
  Result<std::pair<Chunk*, size_t>> locate(const void* p, size_t n) const {
    return heap->locate(p, n);
  }

  // --- recording --------------------------------------------------------------
  Status begin() {
    if (recording) return Status();
    if (cur == cmds.size()) {
      VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      cai.commandPool = cmd_pool;
      cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      cai.commandBufferCount = 1;
      VkCommandBuffer c;
      FOLIO_RETURN_IF_ERROR(vk_check(vk().vkAllocateCommandBuffers(device->device(), &cai, &c),
                                     "vkAllocateCommandBuffers"));
      cmds.push_back(c);
    }
    cmd = cmds[cur];
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer"));
    recording = true;
    since_submit = 0;
    return Status();
  }

  // Submits the command buffer being recorded without waiting; recording
  // goes on in the next one (the rings and pools are not reused until the
  // wait in flush()).
  Status submit_piece() {
    recording = false;
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkEndCommandBuffer(cmd), "vkEndCommandBuffer"));
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    ++cur;
    in_flight = true;
    ++counters.submits;
    return vk_check(vk().vkQueueSubmit(device->queue(), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
  }

  // Records a barrier before the command `c` when it overlaps work recorded
  // since the last one (vk_hazards.h); `c` is then unsynchronised work.
  void order(const CommandAccess& c) {
    if (hazards.order(c)) barrier();
  }

  // A barrier between everything recorded so far and what comes next.
  void barrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk().vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    ++counters.barriers;
  }

  // Submits what was recorded and waits; then the rings and pools are free
  // again. Returns the first data error a kernel reported.
  Status flush() {
    if (recording || in_flight) {
      FOLIO_RETURN_IF_ERROR(begin());  // the fence follows every piece
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vk().vkCmdPipelineBarrier(cmd,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
      ++counters.barriers;
      recording = false;
      FOLIO_RETURN_IF_ERROR(vk_check(vk().vkEndCommandBuffer(cmd), "vkEndCommandBuffer"));
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cmd;
      VkDevice d = device->device();
      Status s = vk_check(vk().vkQueueSubmit(device->queue(), 1, &si, fence), "vkQueueSubmit");
      ++counters.submits;
      if (s.ok()) {
        s = vk_check(vk().vkWaitForFences(d, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      }
      vk().vkResetFences(d, 1, &fence);
      vk().vkResetCommandPool(d, cmd_pool, 0);
      cur = 0;
      in_flight = false;
      hazards.mark_all();  // the next command waits for all of this submission's writes
      vk().vkResetDescriptorPool(d, desc_pool, 0);
      sets_used = 0;
      params_used = 0;
      upload_used = 0;
      scratch_used = 0;
      FOLIO_RETURN_IF_ERROR(s);
    }
    auto* word = static_cast<volatile uint32_t*>(errors.map);
    const uint32_t code = word[0], arg = word[1];
    if (code == 0) return Status();
    word[0] = 0;
    word[1] = 0;
    switch (code) {
      case 1: return out_of_range("vulkan: a kernel read an id / slot {} outside its table", static_cast<int32_t>(arg));
      case 2: return out_of_range("vulkan: attention: sequence index or kv_len {} out of range", static_cast<int32_t>(arg));
      case 3: return out_of_range("vulkan: attention: block-table entry {} out of range", static_cast<int32_t>(arg));
      case 4: return invalid_argument("vulkan: destination slot {} used twice", static_cast<int32_t>(arg));
      default: return internal_error("vulkan: a kernel reported error {} ({})", code, arg);
    }
  }

  // Room for `n` bytes in a ring, flushing first when it is full.
  Result<size_t> reserve(size_t& used, size_t cap, size_t n, size_t align) {
    size_t off = align_up(used, align);
    if (off + n > cap) {
      FOLIO_RETURN_IF_ERROR(flush());
      off = 0;
    }
    used = off + n;
    return off;
  }

  Status dispatch(const char* shader, std::initializer_list<uint32_t> spec, const void* p,
                  size_t p_bytes, std::initializer_list<TensorView> tensors, uint32_t gx,
                  uint32_t gy, uint32_t gz) {
    const std::span<const uint32_t> spec_v(spec.begin(), spec.size());  // no copy
    const auto n_tensors = static_cast<uint32_t>(tensors.size());
    if (2 + n_tensors > kMaxBindings) return internal_error("vulkan: {}: too many tensors", shader);
    FOLIO_ASSIGN_OR_RETURN(const Pipeline* pl, pipelines->get(shader, spec_v, 2 + n_tensors));
    if (pl->n_bindings != 2 + n_tensors) {
      return internal_error("vulkan: shader '{}' declares {} bindings, dispatched with {} tensors",
                            shader, pl->n_bindings, n_tensors);
    }
    if (p_bytes > kParamsRingBytes / 4) return internal_error("vulkan: {}: params too large", shader);
    // Resolve tensors first (no state changes on error). Each tensor's
    // bytes are read, or written where the shader does not declare its
    // binding readonly (a binding the shader lacks counts as read).
    VkBuffer bufs[kMaxBindings];
    AccessRange ranges[kMaxBindings];
    uint32_t n_ranges = 0;
    {
      uint32_t i = 0;
      for (const TensorView& t : tensors) {
        if (t.data == nullptr) {
          bufs[i++] = errors.buffer;  // absent optional tensor: any valid buffer
          continue;
        }
        FOLIO_ASSIGN_OR_RETURN(auto loc, locate(t.data, 0));
        const bool write = ((pl->writable >> (2 + i)) & 1u) != 0;
        ranges[n_ranges++] = access_range(t.data, t.span_bytes(), write);
        bufs[i++] = loc.first->mem.buffer;
      }
    }
    if (!push_descriptors && sets_used == kSetsPerPool) FOLIO_RETURN_IF_ERROR(flush());
    FOLIO_ASSIGN_OR_RETURN(const size_t poff,
                           reserve(params_used, kParamsRingBytes, std::max<size_t>(p_bytes, 4),
                                   kParamsAlign));
    if (p_bytes > 0) std::memcpy(static_cast<char*>(params.map) + poff, p, p_bytes);
    FOLIO_RETURN_IF_ERROR(begin());

    VkDescriptorSet set = VK_NULL_HANDLE;
    if (!push_descriptors) {
      VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      ai.descriptorPool = desc_pool;
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &pl->set_layout;
      FOLIO_RETURN_IF_ERROR(vk_check(vk().vkAllocateDescriptorSets(device->device(), &ai, &set),
                                     "vkAllocateDescriptorSets"));
      ++sets_used;
    }
    VkDescriptorBufferInfo info[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    info[0] = {params.buffer, poff, std::max<size_t>(p_bytes, 4)};
    info[1] = {errors.buffer, 0, VK_WHOLE_SIZE};
    for (uint32_t i = 0; i < n_tensors; ++i) info[2 + i] = {bufs[i], 0, VK_WHOLE_SIZE};
    for (uint32_t i = 0; i < 2 + n_tensors; ++i) {
      writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &info[i];
    }
    if (!push_descriptors) {
      vk().vkUpdateDescriptorSets(device->device(), 2 + n_tensors, writes, 0, nullptr);
    }
    order(CommandAccess{std::span<const AccessRange>(ranges, n_ranges), pl->reads_errors});
    vk().vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->pipeline);
    if (push_descriptors) {
      vk().vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0,
                                     2 + n_tensors, writes);
    } else {
      vk().vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0, 1, &set, 0,
                                   nullptr);
    }
    vk().vkCmdDispatch(cmd, gx, gy, gz);
    ++counters.dispatches;
    if (++since_submit >= kDispatchesPerPiece) return submit_piece();
    return Status();
  }

  Result<TensorView> scratch(size_t n) {
    n = align_up(std::max<size_t>(n, 4), 256);
    if (scratch_used + n > scratch_cap) {
      FOLIO_RETURN_IF_ERROR(flush());
      // A step that outgrew the allocation waited here; twice the size lets
      // the next steps (several products' int8 activations, attention
      // partials) run without that wait.
      {
        const size_t cap = std::max({n, 2 * scratch_cap, size_t{1} << 20});
        if (scratch_mem != nullptr) free(scratch_mem, scratch_cap);
        scratch_mem = nullptr;
        scratch_cap = 0;
        FOLIO_ASSIGN_OR_RETURN(scratch_mem, alloc(cap));
        scratch_cap = cap;
      }
    }
    void* p = static_cast<char*>(scratch_mem) + scratch_used;
    scratch_used += n;
    return TensorView::contiguous(p, DType::F32, {static_cast<int64_t>(n / 4)});
  }

  Result<TensorDesc> desc(const TensorView& t) const {
    TensorDesc d;
    if (t.data == nullptr) return d;
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(t.data, t.span_bytes()));
    const uint64_t end = loc.second + t.span_bytes();
    if (end > UINT32_MAX) {
      return unsupported("vulkan: tensor {} ends {} bytes into its buffer (32-bit offsets)",
                         t.shape_string(), end);
    }
    d.off = static_cast<uint32_t>(loc.second);
    for (int i = 0; i < 4; ++i) {
      if (t.ne[i] < 0 || t.ne[i] > UINT32_MAX || t.nb[i] > UINT32_MAX) {
        return unsupported("vulkan: tensor {} has dims or strides beyond 32 bits", t.shape_string());
      }
      d.ne[i] = static_cast<uint32_t>(t.ne[i]);
      d.nb[i] = static_cast<uint32_t>(t.nb[i]);
    }
    return d;
  }

  // --- transfers ----------------------------------------------------------
  Status write(void* dst, const void* src, size_t n) {
    std::lock_guard lock(mu);
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(dst, n));
    const char* s = static_cast<const char*>(src);
    while (n > 0) {
      const size_t piece = std::min(n, kUploadRingBytes);
      FOLIO_ASSIGN_OR_RETURN(const size_t off, reserve(upload_used, kUploadRingBytes, piece, 16));
      std::memcpy(static_cast<char*>(upload.map) + off, s, piece);
      FOLIO_RETURN_IF_ERROR(begin());
      const AccessRange w = access_range(static_cast<char*>(dst) + (s - static_cast<const char*>(src)),
                                         piece, true);
      order(CommandAccess{std::span<const AccessRange>(&w, 1)});
      const VkBufferCopy region{off, loc.second, piece};
      vk().vkCmdCopyBuffer(cmd, upload.buffer, loc.first->mem.buffer, 1, &region);
      s += piece;
      loc.second += piece;
      n -= piece;
    }
    return Status();
  }

  Status read(void* dst, const void* src, size_t n) {
    std::lock_guard lock(mu);
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(src, n));
    char* d = static_cast<char*>(dst);
    do {
      const size_t piece = std::min(n, kReadbackBytes);
      FOLIO_RETURN_IF_ERROR(begin());
      if (piece > 0) {
        const AccessRange r =
            access_range(static_cast<const char*>(src) + (d - static_cast<char*>(dst)), piece, false);
        order(CommandAccess{std::span<const AccessRange>(&r, 1)});
        const VkBufferCopy region{loc.second, 0, piece};
        vk().vkCmdCopyBuffer(cmd, loc.first->mem.buffer, readback.buffer, 1, &region);
      }
      FOLIO_RETURN_IF_ERROR(flush());
      std::memcpy(d, readback.map, piece);
      d += piece;
      loc.second += piece;
      n -= piece;
    } while (n > 0);
    return Status();
  }

  Status copy(void* dst, const void* src, size_t n) {
    std::lock_guard lock(mu);
    if (n == 0) return Status();
    FOLIO_ASSIGN_OR_RETURN(auto to, locate(dst, n));
    FOLIO_ASSIGN_OR_RETURN(auto from, locate(src, n));
    if (to.first == from.first && to.second < from.second + n && from.second < to.second + n) {
      return invalid_argument("vulkan: copy of {} bytes between overlapping ranges", n);
    }
    FOLIO_RETURN_IF_ERROR(begin());
    const AccessRange r[2] = {access_range(src, n, false), access_range(dst, n, true)};
    order(CommandAccess{r});
    const VkBufferCopy region{from.second, to.second, n};
    vk().vkCmdCopyBuffer(cmd, from.first->mem.buffer, to.first->mem.buffer, 1, &region);
    return Status();
  }

  Status fill_zero(void* dst, size_t n) {
    std::lock_guard lock(mu);
    if (n == 0) return Status();
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(dst, n));
    const size_t head = (4 - loc.second % 4) % 4;  // vkCmdFillBuffer: 4-byte aligned
    if (head > 0 || n % 4 != 0) {
      const std::vector<uint8_t> zeros(n, 0);
      return write(dst, zeros.data(), n);
    }
    FOLIO_RETURN_IF_ERROR(begin());
    const AccessRange w = access_range(dst, n, true);
    order(CommandAccess{std::span<const AccessRange>(&w, 1)});
    vk().vkCmdFillBuffer(cmd, loc.first->mem.buffer, loc.second, n, 0);
    return Status();
  }
};

namespace {

// The Recorder a kernel's record function sees.
class RecorderImpl final : public Recorder {
 public:
  explicit RecorderImpl(VulkanBackend::Impl& impl) : impl_(impl) {}
  const DeviceCaps& caps() const override { return impl_.device->caps(); }
  Status dispatch(const char* shader, std::initializer_list<uint32_t> spec, const void* params,
                  size_t params_bytes, std::initializer_list<TensorView> tensors, uint32_t gx,
                  uint32_t gy, uint32_t gz) override {
    return impl_.dispatch(shader, spec, params, params_bytes, tensors, gx, gy, gz);
  }
  Result<TensorDesc> desc(const TensorView& t) const override { return impl_.desc(t); }
  Result<TensorView> scratch(size_t bytes) override { return impl_.scratch(bytes); }

 private:
  VulkanBackend::Impl& impl_;
};

// A sub-allocation of device memory as a Buffer.
class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(const BufferType* type, VulkanBackend& backend, VulkanBackend::Impl& impl, void* p,
               size_t size)
      : Buffer(type), backend_(backend), impl_(impl), p_(p), size_(size) {}
  ~DeviceBuffer() override { impl_.free(p_, size_); }
  void* data() override { return p_; }
  const void* data() const override { return p_; }
  size_t size() const override { return size_; }
  bool is_host() const override { return false; }
  Status write(size_t offset, const void* src, size_t n) override {
    FOLIO_RETURN_IF_ERROR(check_range(offset, n));
    return backend_.write(at(offset), src, n);
  }
  Status read(size_t offset, void* dst, size_t n) const override {
    FOLIO_RETURN_IF_ERROR(check_range(offset, n));
    return backend_.read(dst, at(offset), n);
  }
  Status copy(size_t dst_offset, size_t src_offset, size_t n) override {
    FOLIO_RETURN_IF_ERROR(check_range(dst_offset, n));
    FOLIO_RETURN_IF_ERROR(check_range(src_offset, n));
    return backend_.copy(at(dst_offset), at(src_offset), n);
  }
  Status fill_zero(size_t offset, size_t n) override {
    FOLIO_RETURN_IF_ERROR(check_range(offset, n));
    return backend_.fill_zero(at(offset), n);
  }

 private:
  char* at(size_t offset) const { return static_cast<char*>(p_) + offset; }

  VulkanBackend& backend_;
  VulkanBackend::Impl& impl_;
  void* p_;
  size_t size_;
};

}  // namespace

// --- VulkanBackend -------------------------------------------------------

Result<std::unique_ptr<VulkanBackend>> VulkanBackend::create(int index,
                                                            bool allow_push_descriptors) {
  auto b = std::unique_ptr<VulkanBackend>(new VulkanBackend());
  b->impl_ = std::make_unique<Impl>(*b);
  FOLIO_ASSIGN_OR_RETURN(b->impl_->device, VulkanDevice::open(index));
  b->impl_->push_descriptors =
      allow_push_descriptors && b->impl_->device->caps().push_descriptor;
  b->name_ = fmt::format("Vulkan{}", b->impl_->device->info().index);
  FOLIO_RETURN_IF_ERROR(b->impl_->init());
  return b;
}

VulkanBackend::~VulkanBackend() = default;

const DeviceInfo& VulkanBackend::info() const { return impl_->device->info(); }

std::optional<StreamCounters> VulkanBackend::stream_counters() const {
  std::lock_guard lock(impl_->mu);
  return impl_->counters;
}

bool VulkanBackend::push_descriptors() const { return impl_->push_descriptors; }

uint64_t VulkanBackend::allocated_bytes() const {
  std::lock_guard lock(impl_->mu);
  return impl_->heap->allocated();
}

KernelHandle VulkanBackend::select_kernel(const Op& op) const {
  const DeviceCaps& caps = impl_->device->caps();
  for (const KernelDef& k : vulkan_kernels()) {
    if (k.kind == op.kind && k.match(op, caps)) return &k;
  }
  return nullptr;
}

Status VulkanBackend::run_kernel(KernelHandle kernel, const Op& op) {
  std::lock_guard lock(impl_->mu);
  RecorderImpl rec(*impl_);
  return static_cast<const KernelDef*>(kernel)->record(rec, op);
}

std::string VulkanBackend::kernel_name_of(KernelHandle kernel) const {
  return std::string("vulkan.") + static_cast<const KernelDef*>(kernel)->name;
}

bool VulkanBackend::can_access(const void* p) const {
  return lookup_device_address(p).owner == this;
}

Status VulkanBackend::write(void* dst, const void* host_src, size_t n) {
  return impl_->write(dst, host_src, n);
}
Status VulkanBackend::read(void* host_dst, const void* src, size_t n) {
  return impl_->read(host_dst, src, n);
}
Status VulkanBackend::copy(void* dst, const void* src, size_t n) { return impl_->copy(dst, src, n); }
Status VulkanBackend::fill_zero(void* dst, size_t n) { return impl_->fill_zero(dst, n); }

Status VulkanBackend::synchronize() {
  std::lock_guard lock(impl_->mu);
  return impl_->flush();
}

// --- VulkanBufferType ------------------------------------------------------

std::string VulkanBufferType::name() const { return backend_.name(); }

Result<std::unique_ptr<Buffer>> VulkanBufferType::alloc(size_t size) const {
  FOLIO_ASSIGN_OR_RETURN(void* p, backend_.impl_->alloc(size));
  return std::unique_ptr<Buffer>(
      std::make_unique<DeviceBuffer>(this, backend_, *backend_.impl_, p, size));
}

bool VulkanBufferType::supports_weight(const WeightUse& w) const {
  if (weight_bytes(w) > backend_.impl_->device->caps().max_storage_buffer_range) return false;
  // A stand-in op of the consuming kind with this weight, asked of the
  // kernel table (only descriptors are read).
  static char dummy[64];
  Op op;
  op.kind = w.consumer;
  const TensorView weight = TensorView::contiguous(dummy, w.dtype, w.ne);
  switch (w.consumer) {
    case OpKind::kMulMat:
      op.src[0] = weight;
      op.src[1] = TensorView::contiguous(dummy, DType::F32, {w.ne[0], 1, w.ne[2], w.ne[3]});
      op.dst = TensorView::contiguous(dummy, DType::F32, {w.ne[1], 1, w.ne[2], w.ne[3]});
      break;
    case OpKind::kMulMatId:
      op.src[0] = weight;
      op.src[1] = TensorView::contiguous(dummy, DType::F32, {w.ne[0], 1, 1});
      op.src[2] = TensorView::contiguous(dummy, DType::I32, {1, 1});
      op.dst = TensorView::contiguous(dummy, DType::F32, {w.ne[1], 1, 1});
      break;
    case OpKind::kGetRows:
      op.src[0] = weight;
      op.src[1] = TensorView::contiguous(dummy, DType::I32, {1});
      op.dst = TensorView::contiguous(dummy, DType::F32, {w.ne[0], 1});
      break;
    default:
      // Norm weights, biases, per-head factors: F32, read by element-wise
      // kernels of the consuming kind.
      if (w.dtype != DType::F32) return false;
      for (const KernelDef& k : vulkan_kernels()) {
        if (k.kind == w.consumer) return true;
      }
      return false;
  }
  return backend_.select_kernel(op) != nullptr;
}

Status VulkanBufferType::store_weight(const WeightUse& w, const void* src, size_t src_bytes,
                                      void* dst) const {
  const size_t need = weight_bytes(w);
  if (src_bytes != need) {
    return invalid_argument("weight '{}': {} bytes given, {} expected for {}", w.name, src_bytes,
                            need, dtype_name(w.dtype));
  }
  return backend_.write(dst, src, need);
}

}  // namespace folio::vulkan
