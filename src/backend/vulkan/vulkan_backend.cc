#include "backend/vulkan/vulkan_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/device_memory.h"
#include "backend/vulkan/shaders/interface.h"
#include "backend/vulkan/vk_hazards.h"
#include "backend/vulkan/vk_memory.h"
#include "backend/vulkan/vk_pipelines.h"
#include "backend/vulkan/vk_replay.h"
#include "backend/vulkan/vk_timestamps.h"
#include "core/aligned.h"
#include "core/log.h"

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
    add_moe_kernels(t);
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
constexpr size_t kParamsAlign = 256;
constexpr size_t kCounterBytes =
    256;  // Recorder::counter's allocation  // >= minStorageBufferOffsetAlignment everywhere
constexpr uint32_t kSetsPerPool = 2048;
constexpr uint32_t kMaxBindings = 2 + kMaxDispatchTensors;
// Dispatches per submitted piece of a step: small enough that the device
// starts early and stays busy while the host records the rest.
constexpr uint32_t kDispatchesPerPiece = 32;
// The name DeviceTimer charges copies, fills, uploads and read-backs to.
const std::string* transfer_name() {
  static const std::string name = "(transfer)";
  return &name;
}

// The bytes a dispatch's tensor touches: a strided range where the view
// is one contiguous block per step of a single outer stride (a column part
// of a wider tensor, e.g. q of a joined Q/K/V product), else its span.
AccessRange tensor_access(const TensorView& t, bool write) {
  uint64_t block = t.row_bytes();  // contiguous bytes so far
  uint64_t period = 0, count = 1;
  for (int i = 1; i < kMaxDims; ++i) {
    if (t.ne[i] == 1) continue;
    if (period == 0 && t.nb[i] == block) {
      block *= static_cast<uint64_t>(t.ne[i]);
    } else if (period == 0 && t.nb[i] > block) {
      period = t.nb[i];
      count = static_cast<uint64_t>(t.ne[i]);
    } else if (period != 0 && t.nb[i] == period * count) {
      count *= static_cast<uint64_t>(t.ne[i]);
    } else {
      return access_range(t.data, t.span_bytes(), write);
    }
  }
  if (t.nb[0] != type_size(t.dtype) || period == 0) {
    return access_range(t.data, t.span_bytes(), write);
  }
  return strided_access_range(t.data, block, period, count, write);
}

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
  // Recorder::hold: a dispatch not yet recorded; every command records it
  // first (record_held()).
  std::optional<HeldDispatch> held;
  // Recorder::counter: a device word, zero between dispatches.
  void* counter_mem = nullptr;

  // Replayed segments (vk_replay.h). A segment starts at the first command
  // after a wait and ends at the next wait; it runs live, is captured while
  // it runs live, or replays a recording.
  enum class Mode { kLive, kCapture, kMatch };
  std::unique_ptr<ReplayCache> replay;  // nullptr: every segment runs live
  bool replay_enabled = true;           // set_replay_enabled(); FOLIO_VULKAN_REPLAY=0 clears it
  bool replayable = false;              // set_replayable(): segments starting now may repeat
  bool segment_fresh = false;           // nothing recorded since the last wait
  Mode mode = Mode::kLive;
  Recording* rec = nullptr;             // kCapture: the capture; kMatch: what is replayed
  bool capture_failed = false;          // kCapture: something did not fit; dropped at the wait
  size_t next = 0;                      // kMatch: rec's next command to match
  size_t piece = 0;                     // kMatch: rec's next piece to submit
  size_t piece_first = 0;               // kMatch: that piece's first command
  bool cmd_is_live = true;              // cmd is cmds[cur] (else a recording's piece)
  std::vector<Recording*> busy;         // recordings this segment uses
  // Device time per kernel (set_device_timing): every segment runs live.
  std::unique_ptr<DeviceTimer> timer;
  bool log_times = false;  // FOLIO_VULKAN_TIMESTAMPS=1: log the totals at the end

  explicit Impl(VulkanBackend& s) : self(s) {}

  ~Impl() {
    if (!device) return;
    VkDevice d = device->device();
    vk().vkDeviceWaitIdle(d);
    if (timer != nullptr && log_times) log_device_times();
    timer.reset();
    replay.reset();
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
      FOLIO_LOG_WARN("vulkan: kernel parameters in host memory ({})", ring.status().message());
      ring = make_buffer(d, kParamsRingBytes, d.upload_memory_type(), true, "parameter ring");
    }
    FOLIO_ASSIGN_OR_RETURN(params, std::move(ring));
    FOLIO_ASSIGN_OR_RETURN(upload, make_buffer(d, kUploadRingBytes, d.upload_memory_type(), true,
                                               "upload staging"));
    FOLIO_ASSIGN_OR_RETURN(readback, make_buffer(d, kReadbackBytes, d.readback_memory_type(), true,
                                                 "readback staging"));
    FOLIO_ASSIGN_OR_RETURN(errors, make_buffer(d, 256, d.upload_memory_type(), true, "error word"));
    std::memset(errors.map, 0, 256);
    if (const char* e = std::getenv("FOLIO_VULKAN_REPLAY"); e != nullptr && std::strcmp(e, "0") == 0) {
      replay_enabled = false;
    }
    if (push_descriptors) {
      FOLIO_ASSIGN_OR_RETURN(replay, ReplayCache::create(d));
    }
    if (const char* e = std::getenv("FOLIO_VULKAN_TIMESTAMPS");
        e != nullptr && std::strcmp(e, "1") == 0) {
      Result<std::unique_ptr<DeviceTimer>> t = DeviceTimer::create(d);
      if (t.ok()) {
        timer = std::move(*t);
        log_times = true;
      } else {
        FOLIO_LOG_WARN("FOLIO_VULKAN_TIMESTAMPS: {}", t.status().message());
      }
    }
    FOLIO_ASSIGN_OR_RETURN(counter_mem, alloc(kCounterBytes));
    return fill_zero(counter_mem, kCounterBytes);
  }

  // The device time per kernel, largest first, as log lines.
  void log_device_times() const {
    const std::vector<DeviceTimeRow> rows = timer->rows();
    double total = 0;
    for (const DeviceTimeRow& r : rows) total += r.ns;
    FOLIO_LOG_INFO("vulkan device time: {:.3f} ms in {} kernels ({} commands untimed)",
                   total * 1e-6, rows.size(), timer->untimed());
    for (const DeviceTimeRow& r : rows) {
      FOLIO_LOG_INFO("  {:9.3f} ms {:5.1f}% {:8} x {:9.2f} us  {}", r.ns * 1e-6,
                     total > 0 ? 100.0 * r.ns / total : 0.0, r.count,
                     r.count > 0 ? r.ns * 1e-3 / static_cast<double>(r.count) : 0.0, r.name);
    }
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
  // Opens a command buffer when none is: the live path's next one, or a new
  // piece of the recording being captured.
  Status begin() {
    if (recording) return Status();
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if (mode == Mode::kCapture) {
      FOLIO_ASSIGN_OR_RETURN(cmd, replay->add_piece(*rec));
      cmd_is_live = false;
    } else {
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
      cmd_is_live = true;
      bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    }
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer"));
    if (timer != nullptr && cmd_is_live) timer->start(cmd);
    recording = true;
    since_submit = 0;
    return Status();
  }

  // Submits `c` (with `f` signalled after it, or no fence) without waiting.
  Status submit(VkCommandBuffer c, VkFence f) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &c;
    in_flight = true;
    ++counters.submits;
    return vk_check(vk().vkQueueSubmit(device->queue(), 1, &si, f), "vkQueueSubmit");
  }

  // Submits the command buffer being recorded without waiting; recording
  // goes on in the next one (the rings and pools are not reused until the
  // wait in flush()).
  Status submit_piece() {
    recording = false;
    FOLIO_RETURN_IF_ERROR(vk_check(vk().vkEndCommandBuffer(cmd), "vkEndCommandBuffer"));
    if (cmd_is_live) ++cur;
    return submit(cmd, VK_NULL_HANDLE);
  }

  // A barrier between everything recorded so far and what comes next.
  void barrier() {
    record_barrier();
    ++counters.barriers;
  }
  void record_barrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk().vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }

  // Records the Vulkan commands of `c` into cmd (no barrier, no counting).
  Status record_command(const StreamCommand& c) {
    switch (c.kind) {
      case CommandKind::kDispatch: {
        const Pipeline* pl = c.pipeline;
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
        const uint32_t n = 2 + c.n_tensors;
        VkDescriptorBufferInfo info[kMaxBindings];
        VkWriteDescriptorSet writes[kMaxBindings];
        info[0] = {c.data_buffer, c.data_off, std::max<VkDeviceSize>(c.data_bytes, 4)};
        info[1] = {errors.buffer, 0, VK_WHOLE_SIZE};
        for (uint32_t i = 0; i < c.n_tensors; ++i) info[2 + i] = {c.tensors[i], 0, VK_WHOLE_SIZE};
        for (uint32_t i = 0; i < n; ++i) {
          writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
          writes[i].dstSet = set;
          writes[i].dstBinding = i;
          writes[i].descriptorCount = 1;
          writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
          writes[i].pBufferInfo = &info[i];
        }
        vk().vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->pipeline);
        if (push_descriptors) {
          vk().vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0, n,
                                         writes);
        } else {
          vk().vkUpdateDescriptorSets(device->device(), n, writes, 0, nullptr);
          vk().vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0, 1, &set,
                                       0, nullptr);
        }
        vk().vkCmdDispatch(cmd, c.groups[0], c.groups[1], c.groups[2]);
        break;
      }
      case CommandKind::kUpload: {
        const VkBufferCopy region{c.data_off, c.dst_off, c.size};
        vk().vkCmdCopyBuffer(cmd, c.data_buffer, c.dst, 1, &region);
        break;
      }
      case CommandKind::kRead: {
        const VkBufferCopy region{c.src_off, 0, c.size};
        vk().vkCmdCopyBuffer(cmd, c.src, readback.buffer, 1, &region);
        break;
      }
      case CommandKind::kCopy: {
        const VkBufferCopy region{c.src_off, c.dst_off, c.size};
        vk().vkCmdCopyBuffer(cmd, c.src, c.dst, 1, &region);
        break;
      }
      case CommandKind::kFill:
        vk().vkCmdFillBuffer(cmd, c.dst, c.dst_off, c.size, 0);
        break;
    }
    return Status();
  }

  // The host memory behind a recorded command's data.
  static char* data_of(Recording& r, const StreamCommand& c) {
    VkMem& m = c.kind == CommandKind::kDispatch ? r.params : r.staging;
    return static_cast<char*>(m.map) + c.data_off;
  }

  // The first command of a segment decides how it runs: replaying the
  // recording that starts with it, captured into a new recording (a
  // replayable step on a device that pushes descriptors), else live.
  void start_segment(const StreamCommand& c, std::span<const AccessRange> ranges) {
    segment_fresh = false;
    mode = Mode::kLive;
    if (!replay || !replay_enabled || !replayable || timer != nullptr) return;
    if (Recording* r = replay->find_first(c, ranges)) {
      mode = Mode::kMatch;
      rec = r;
      next = piece = piece_first = 0;
      use(r);
      return;
    }
    Result<Recording*> r = replay->start();
    if (!r.ok()) return;  // every recording in use: live
    mode = Mode::kCapture;
    rec = *r;
    capture_failed = false;
    use(rec);
  }

  void use(Recording* r) {
    r->busy = true;
    replay->touch(r);
    busy.push_back(r);
  }

  // kMatch: the host issued rec's next command again; its data goes where
  // the recording reads it, and its piece is submitted when complete.
  Status replay_command(const void* data) {
    const StreamCommand& e = rec->commands[next];
    if (e.data_bytes > 0) std::memcpy(data_of(*rec, e), data, e.data_bytes);
    if (e.barrier_before) ++counters.barriers;
    if (e.kind == CommandKind::kDispatch) ++counters.dispatches;
    ++next;
    if (!e.ends_piece) return Status();
    piece_first = next;
    return submit(rec->pieces[piece++], VK_NULL_HANDLE);
  }

  // kMatch, and the segment leaves rec at command `next`: the host issues
  // `c` (nullptr: waits). Where another recording has the same commands so
  // far and takes `c`, replay goes on there. Else the commands matched so
  // far are recorded again, into a new capture (the pieces already
  // submitted are recorded for later replays only) or, without one, those
  // of the piece not yet submitted into the live stream; the segment then
  // goes on in that mode.
  Status leave_match(const StreamCommand* c, std::span<const AccessRange> ranges) {
    Recording* src = rec;
    if (c != nullptr) {
      if (Recording* other = replay->find_continuation(*src, next, *c, ranges)) {
        for (size_t i = piece_first; i < next; ++i) {
          const StreamCommand& e = src->commands[i];
          if (e.data_bytes > 0) {
            std::memcpy(data_of(*other, other->commands[i]), data_of(*src, e), e.data_bytes);
          }
        }
        rec = other;
        use(other);
        return Status();
      }
    }
    mode = Mode::kLive;
    rec = nullptr;
    if (Result<Recording*> r = replay->start(); r.ok()) {
      mode = Mode::kCapture;
      rec = *r;
      capture_failed = false;
      use(rec);
    }
    hazards.mark_all();  // as after the wait that began the segment
    recording = false;
    for (size_t i = 0; i < next; ++i) {
      StreamCommand e = src->commands[i];
      const std::span<const AccessRange> r = src->ranges_of(e);
      const CommandAccess access{r, e.reads_errors};
      if (mode == Mode::kLive && i < piece_first) {
        (void)hazards.order(access);  // ran from src: only the tracker's state
        continue;
      }
      if (mode == Mode::kCapture && e.data_bytes > 0) {
        const uint64_t src_off = e.data_off;
        const bool placed = e.kind == CommandKind::kDispatch
                                ? rec->place_params(std::max<size_t>(e.data_bytes, 4), &e.data_off)
                                : rec->place_staging(e.data_bytes, &e.data_off);
        if (!placed) return internal_error("vulkan: a recording does not fit its copy");
        e.data_buffer = e.kind == CommandKind::kDispatch ? rec->params.buffer : rec->staging.buffer;
        StreamCommand at_src = e;
        at_src.data_off = src_off;
        std::memcpy(data_of(*rec, e), data_of(*src, at_src), e.data_bytes);
      }
      FOLIO_RETURN_IF_ERROR(begin());
      if (hazards.order(access)) record_barrier();  // counted when it was replayed
      FOLIO_RETURN_IF_ERROR(record_command(e));
      if (e.kind == CommandKind::kDispatch) ++since_submit;
      if (mode == Mode::kCapture) rec->log(e, r);
      if (e.ends_piece) {  // i < piece_first: src's piece ran; this one is for later
        recording = false;
        FOLIO_RETURN_IF_ERROR(vk_check(vk().vkEndCommandBuffer(cmd), "vkEndCommandBuffer"));
      }
    }
    return Status();
  }

  // Every command of the stream: a dispatch, an upload (`data`: its bytes),
  // a read-back into the read-back buffer, a copy or a fill. Ordered after
  // what it overlaps, then recorded live, captured, or matched against the
  // recording being replayed.
  Status issue(StreamCommand& c, std::span<const AccessRange> ranges, const void* data) {
    const bool dispatch = c.kind == CommandKind::kDispatch;
    for (;;) {
      if (segment_fresh) start_segment(c, ranges);
      if (mode == Mode::kMatch) {
        if (next < rec->commands.size()) {
          const StreamCommand& e = rec->commands[next];
          if (same_command(e, rec->ranges_of(e), c, ranges)) return replay_command(data);
        }
        FOLIO_RETURN_IF_ERROR(leave_match(&c, ranges));
        if (mode == Mode::kMatch) return replay_command(data);
      }
      if (!dispatch && c.kind != CommandKind::kUpload) break;
      const size_t n = dispatch ? std::max<size_t>(c.data_bytes, 4) : c.data_bytes;
      bool placed = false;
      if (mode == Mode::kCapture && !capture_failed) {
        placed = dispatch ? rec->place_params(n, &c.data_off) : rec->place_staging(n, &c.data_off);
        if (placed) c.data_buffer = dispatch ? rec->params.buffer : rec->staging.buffer;
        capture_failed = !placed;
      }
      if (!placed) {  // the rings (a full one waits: the segment ends there)
        if (dispatch && !push_descriptors && sets_used == kSetsPerPool) FOLIO_RETURN_IF_ERROR(flush());
        if (segment_fresh) continue;
        Result<size_t> off = dispatch ? reserve(params_used, kParamsRingBytes, n, kParamsAlign)
                                      : reserve(upload_used, kUploadRingBytes, n, 16);
        FOLIO_RETURN_IF_ERROR(off.status());
        if (segment_fresh) continue;
        c.data_off = *off;
        c.data_buffer = dispatch ? params.buffer : upload.buffer;
      }
      if (c.data_bytes > 0) {
        void* base = placed ? (dispatch ? rec->params.map : rec->staging.map)
                            : (dispatch ? params.map : upload.map);
        std::memcpy(static_cast<char*>(base) + c.data_off, data, c.data_bytes);
      }
      break;
    }
    FOLIO_RETURN_IF_ERROR(begin());
    c.barrier_before = hazards.order(CommandAccess{ranges, c.reads_errors});
    if (c.barrier_before) barrier();
    FOLIO_RETURN_IF_ERROR(record_command(c));
    if (timer != nullptr && cmd_is_live)
      timer->mark(cmd, dispatch ? &c.pipeline->name : transfer_name());
    if (dispatch) ++counters.dispatches;
    c.ends_piece = dispatch && ++since_submit >= kDispatchesPerPiece;
    if (mode == Mode::kCapture && !capture_failed) rec->log(c, ranges);
    if (c.ends_piece) return submit_piece();
    return Status();
  }

  // Submits `last` with the fence and waits; then the rings and pools are
  // free again.
  Status submit_and_wait(VkCommandBuffer last) {
    VkDevice d = device->device();
    Status s = submit(last, fence);
    if (s.ok()) s = vk_check(vk().vkWaitForFences(d, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (timer != nullptr) {
      const Status t = timer->collect(s.ok());
      if (s.ok()) s = t;
    }
    vk().vkResetFences(d, 1, &fence);
    vk().vkResetCommandPool(d, cmd_pool, 0);
    cur = 0;
    in_flight = false;
    recording = false;
    hazards.mark_all();  // the next command waits for all of this submission's writes
    vk().vkResetDescriptorPool(d, desc_pool, 0);
    sets_used = 0;
    params_used = 0;
    upload_used = 0;
    scratch_used = 0;
    return s;
  }

  // Ends the segment at a wait: a capture that reached it whole is kept.
  void end_segment(bool ok) {
    if (mode == Mode::kCapture) {
      if (ok && !capture_failed && !rec->commands.empty()) {
        rec->complete = true;
        ++counters.recorded_steps;
      } else {
        replay->drop(rec);
      }
    }
    for (Recording* r : busy) r->busy = false;
    busy.clear();
    mode = Mode::kLive;
    rec = nullptr;
    segment_fresh = true;
  }

  // Submits what was recorded (or the rest of the recording being
  // replayed) and waits. Returns the first data error a kernel reported.
  Status flush() {
    FOLIO_RETURN_IF_ERROR(record_held());
    if (mode == Mode::kMatch && next == rec->commands.size() && piece + 1 == rec->pieces.size()) {
      ++counters.barriers;  // the recording's last piece ends with the host barrier
      ++counters.replayed_steps;
      const Status s = submit_and_wait(rec->pieces[piece]);
      end_segment(s.ok());
      FOLIO_RETURN_IF_ERROR(s);
    } else {
      if (mode == Mode::kMatch) {
        const Status s = leave_match(nullptr, {});
        if (!s.ok()) {
          end_segment(false);
          return s;
        }
      }
      if (recording || in_flight) {
        Status s = begin();  // the fence follows every piece
        if (s.ok()) {
          VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
          mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
          mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
          vk().vkCmdPipelineBarrier(
              cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
              VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
          ++counters.barriers;
          recording = false;
          s = vk_check(vk().vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        }
        if (s.ok()) s = submit_and_wait(cmd);
        end_segment(s.ok());
        FOLIO_RETURN_IF_ERROR(s);
      } else if (mode != Mode::kLive) {
        end_segment(true);  // a capture that recorded nothing is dropped
      }
    }
    auto* word = static_cast<volatile uint32_t*>(errors.map);
    const uint32_t code = word[0], arg = word[1];
    if (code == 0) return Status();
    word[0] = 0;
    word[1] = 0;
    switch (code) {
      case kErrIdRange: return out_of_range("vulkan: a kernel read an id / slot {} outside its table", static_cast<int32_t>(arg));
      case kErrSeqRange: return out_of_range("vulkan: attention: sequence index or kv_len {} out of range", static_cast<int32_t>(arg));
      case kErrBlockRange: return out_of_range("vulkan: attention: block-table entry {} out of range", static_cast<int32_t>(arg));
      case kErrDupSlot: return invalid_argument("vulkan: destination slot {} used twice", static_cast<int32_t>(arg));
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

  // The held dispatch, recorded now (before any other command).
  Status record_held() {
    if (!held) return Status();
    const HeldDispatch d = std::move(*held);
    held.reset();
    return dispatch(d.shader, d.spec, d.params.data(), d.params.size(), d.tensors, d.groups[0],
                    d.groups[1], d.groups[2]);
  }

  Status hold(HeldDispatch d) {
    FOLIO_RETURN_IF_ERROR(record_held());
    held = std::move(d);
    return Status();
  }

  Status dispatch(const char* shader, std::span<const uint32_t> spec_v, const void* p,
                  size_t p_bytes, std::span<const TensorView> tensors, uint32_t gx, uint32_t gy,
                  uint32_t gz) {
    FOLIO_RETURN_IF_ERROR(record_held());
    const auto n_tensors = static_cast<uint32_t>(tensors.size());
    if (n_tensors > kMaxDispatchTensors) return internal_error("vulkan: {}: too many tensors", shader);
    FOLIO_ASSIGN_OR_RETURN(const Pipeline* pl, pipelines->get(shader, spec_v, 2 + n_tensors));
    if (pl->n_bindings != 2 + n_tensors) {
      return internal_error("vulkan: shader '{}' declares {} bindings, dispatched with {} tensors",
                            shader, pl->n_bindings, n_tensors);
    }
    if (p_bytes > kParamsRingBytes / 4) return internal_error("vulkan: {}: params too large", shader);
    // Resolve tensors first (no state changes on error). Each tensor's
    // bytes are read, or written where the shader does not declare its
    // binding readonly (a binding the shader lacks counts as read).
    StreamCommand c;
    c.kind = CommandKind::kDispatch;
    c.pipeline = pl;
    c.reads_errors = pl->reads_errors;
    c.n_tensors = n_tensors;
    c.groups[0] = gx;
    c.groups[1] = gy;
    c.groups[2] = gz;
    c.data_bytes = static_cast<uint32_t>(p_bytes);
    AccessRange ranges[kMaxDispatchTensors];
    uint32_t n_ranges = 0;
    uint32_t i = 0;
    for (const TensorView& t : tensors) {
      if (t.data == nullptr) {
        c.tensors[i++] = errors.buffer;  // absent optional tensor: any valid buffer
        continue;
      }
      FOLIO_ASSIGN_OR_RETURN(auto loc, locate(t.data, 0));
      const bool write = ((pl->writable >> (2 + i)) & 1u) != 0;
      ranges[n_ranges++] = tensor_access(t, write);
      c.tensors[i++] = loc.first->mem.buffer;
    }
    return issue(c, std::span<const AccessRange>(ranges, n_ranges), p);
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
    FOLIO_RETURN_IF_ERROR(record_held());
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(dst, n));
    const char* s = static_cast<const char*>(src);
    while (n > 0) {
      const size_t piece_bytes = std::min(n, kUploadRingBytes);
      StreamCommand c;
      c.kind = CommandKind::kUpload;
      c.dst = loc.first->mem.buffer;
      c.dst_off = loc.second;
      c.size = piece_bytes;
      c.data_bytes = static_cast<uint32_t>(piece_bytes);
      const AccessRange w = access_range(static_cast<char*>(dst) + (s - static_cast<const char*>(src)),
                                         piece_bytes, true);
      FOLIO_RETURN_IF_ERROR(issue(c, std::span<const AccessRange>(&w, 1), s));
      s += piece_bytes;
      loc.second += piece_bytes;
      n -= piece_bytes;
    }
    return Status();
  }

  Status read(void* dst, const void* src, size_t n) {
    std::lock_guard lock(mu);
    FOLIO_RETURN_IF_ERROR(record_held());
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(src, n));
    char* d = static_cast<char*>(dst);
    do {
      const size_t piece_bytes = std::min(n, kReadbackBytes);
      if (piece_bytes > 0) {
        StreamCommand c;
        c.kind = CommandKind::kRead;
        c.src = loc.first->mem.buffer;
        c.src_off = loc.second;
        c.size = piece_bytes;
        const AccessRange r =
            access_range(static_cast<const char*>(src) + (d - static_cast<char*>(dst)), piece_bytes, false);
        FOLIO_RETURN_IF_ERROR(issue(c, std::span<const AccessRange>(&r, 1), nullptr));
      }
      FOLIO_RETURN_IF_ERROR(flush());
      std::memcpy(d, readback.map, piece_bytes);
      d += piece_bytes;
      loc.second += piece_bytes;
      n -= piece_bytes;
    } while (n > 0);
    return Status();
  }

  Status copy(void* dst, const void* src, size_t n) {
    std::lock_guard lock(mu);
    FOLIO_RETURN_IF_ERROR(record_held());
    if (n == 0) return Status();
    FOLIO_ASSIGN_OR_RETURN(auto to, locate(dst, n));
    FOLIO_ASSIGN_OR_RETURN(auto from, locate(src, n));
    if (to.first == from.first && to.second < from.second + n && from.second < to.second + n) {
      return invalid_argument("vulkan: copy of {} bytes between overlapping ranges", n);
    }
    StreamCommand c;
    c.kind = CommandKind::kCopy;
    c.src = from.first->mem.buffer;
    c.src_off = from.second;
    c.dst = to.first->mem.buffer;
    c.dst_off = to.second;
    c.size = n;
    const AccessRange r[2] = {access_range(src, n, false), access_range(dst, n, true)};
    return issue(c, r, nullptr);
  }

  Status fill_zero(void* dst, size_t n) {
    std::lock_guard lock(mu);
    FOLIO_RETURN_IF_ERROR(record_held());
    if (n == 0) return Status();
    FOLIO_ASSIGN_OR_RETURN(auto loc, locate(dst, n));
    const size_t head = (4 - loc.second % 4) % 4;  // vkCmdFillBuffer: 4-byte aligned
    if (head > 0 || n % 4 != 0) {
      const std::vector<uint8_t> zeros(n, 0);
      return write(dst, zeros.data(), n);
    }
    StreamCommand c;
    c.kind = CommandKind::kFill;
    c.dst = loc.first->mem.buffer;
    c.dst_off = loc.second;
    c.size = n;
    const AccessRange w = access_range(dst, n, true);
    return issue(c, std::span<const AccessRange>(&w, 1), nullptr);
  }
};

namespace {

// The Recorder a kernel's record function sees.
class RecorderImpl final : public Recorder {
 public:
  explicit RecorderImpl(VulkanBackend::Impl& impl) : impl_(impl) {}
  const DeviceCaps& caps() const override { return impl_.device->caps(); }
  Status dispatch_spans(const char* shader, std::span<const uint32_t> spec, const void* params,
                        size_t params_bytes, std::span<const TensorView> tensors, uint32_t gx,
                        uint32_t gy, uint32_t gz) override {
    return impl_.dispatch(shader, spec, params, params_bytes, tensors, gx, gy, gz);
  }
  Status hold(HeldDispatch d) override { return impl_.hold(std::move(d)); }
  std::optional<HeldDispatch> take_held() override {
    std::optional<HeldDispatch> d = std::move(impl_.held);
    impl_.held.reset();
    return d;
  }
  Result<TensorView> counter() override {
    return TensorView::contiguous(impl_.counter_mem, DType::I32, {1});
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

void VulkanBackend::set_replayable(bool replayable) {
  std::lock_guard lock(impl_->mu);
  impl_->replayable = replayable;
}

void VulkanBackend::set_replay_enabled(bool enabled) {
  std::lock_guard lock(impl_->mu);
  impl_->replay_enabled = enabled;
  if (!enabled && impl_->replay) impl_->replay->clear();
}

bool VulkanBackend::replay_enabled() const {
  std::lock_guard lock(impl_->mu);
  return impl_->replay != nullptr && impl_->replay_enabled && impl_->timer == nullptr;
}

Status VulkanBackend::set_device_timing(bool on) {
  std::lock_guard lock(impl_->mu);
  if (on == (impl_->timer != nullptr)) return Status();
  // Recorded commands may write into the timer's query pool: they run first.
  FOLIO_RETURN_IF_ERROR(impl_->flush());
  if (!on) {
    impl_->timer.reset();
    impl_->log_times = false;
    return Status();
  }
  FOLIO_ASSIGN_OR_RETURN(impl_->timer, DeviceTimer::create(*impl_->device));
  return Status();
}

std::vector<DeviceTimeRow> VulkanBackend::device_times() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->timer == nullptr) return {};
  return impl_->timer->rows();
}

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
