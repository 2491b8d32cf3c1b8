// Replayed steps: the Vulkan counterpart of CUDA graphs.
//
// A *segment* is what the backend records between two waits on the host (a
// decode step is one segment, unless a full ring makes it wait early). A segment of a replayable step (Backend::set_replayable: a
// decode step) is captured while it runs live: its command buffers come from
// a pool of their own and are kept, its dispatches' parameters and its
// uploads' bytes go to buffers of the recording's own, and each command is
// logged (what it binds, the device ranges it touches, its workgroups, its
// parameter size, whether a barrier precedes it, whether a piece is
// submitted after it).
//
// The next segment that issues the same commands replays it: each command
// the host issues is compared with the log and, where equal, only its
// parameter (or upload) bytes are written into the recording's buffers, at
// the offsets the recorded commands read them from; a piece of the
// recording is submitted as soon as its last command has been issued, so
// the device runs while the host goes on, as on the live path. No command
// is recorded, no barrier decided, no descriptor pushed. Everything that
// changes between decode steps (positions, token ids, block tables,
// lengths, kernel parameters) is in those buffers or in device tensors the
// step uploads, so a replayed segment runs exactly the commands that live
// recording would record, with the same bytes: its results are the live
// path's bit for bit.
//
// "The same command" is exact: the pipeline (shader and specialisation),
// each bound buffer, each byte range read and written (device addresses,
// unique across buffers), the workgroup counts and the parameter size. So
// a new shape (another batch size, a context length in another attention
// split bucket, a block table that grew, a moved cache or weight) is a
// mismatch; then the commands matched so far are recorded again into a new
// capture and the rest of the segment runs live into it (or, where another
// recording shares the matched prefix and takes the new command, replay
// moves over to it). Chunks of device memory are never freed while the
// backend lives, so a recorded buffer handle always names the memory it
// named when recorded. Replay needs pushed descriptors
// (VK_KHR_push_descriptor); without them segments run live.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/vulkan/vk_hazards.h"
#include "backend/vulkan/vk_memory.h"
#include "backend/vulkan/vk_pipelines.h"

namespace folio::vulkan {

// Tensors one dispatch binds at most (bindings 2 ..).
inline constexpr uint32_t kMaxDispatchTensors = 14;

enum class CommandKind : uint8_t { kDispatch, kUpload, kRead, kCopy, kFill };

// One command of a segment, as the live path records it and a recording
// logs it.
struct StreamCommand {
  CommandKind kind = CommandKind::kDispatch;
  bool reads_errors = false;    // dispatch: its shader reads the error word
  bool barrier_before = false;  // logged: a barrier was recorded before it
  bool ends_piece = false;      // logged: its piece was submitted after it
  // Parameter bytes (dispatch) or bytes uploaded (upload), and where they
  // lie: data_buffer at data_off (the parameter or staging ring live; the
  // recording's own buffers when captured).
  uint32_t data_bytes = 0;
  VkBuffer data_buffer = VK_NULL_HANDLE;
  uint64_t data_off = 0;
  // Dispatch.
  const Pipeline* pipeline = nullptr;
  uint32_t n_tensors = 0;
  VkBuffer tensors[kMaxDispatchTensors] = {};
  uint32_t groups[3] = {1, 1, 1};
  // Transfers: upload (staging -> dst), read (src -> the read-back buffer
  // at 0), copy (src -> dst), fill (zeros -> dst).
  VkBuffer src = VK_NULL_HANDLE, dst = VK_NULL_HANDLE;
  uint64_t src_off = 0, dst_off = 0, size = 0;
  // Logged: its access ranges are Recording::ranges[range_first ..
  // range_first + n_ranges).
  uint32_t range_first = 0, n_ranges = 0;
};

// Whether `a` (ranges ra) and `b` (ranges rb) are the same command: all
// but where their data lies and what the log notes.
bool same_command(const StreamCommand& a, std::span<const AccessRange> ra, const StreamCommand& b,
                  std::span<const AccessRange> rb);

// A captured segment.
struct Recording {
  std::vector<StreamCommand> commands;
  std::vector<AccessRange> ranges;      // the commands' access ranges, in order
  std::vector<VkCommandBuffer> pieces;  // submitted in order; the last one ends with the host barrier
  VkMem params, staging;                // the commands' parameter and upload bytes
  size_t params_used = 0, staging_used = 0;
  bool complete = false;  // the capture reached its wait (only complete ones replay)
  bool busy = false;      // used by the segment being recorded: not evicted
  uint64_t last_use = 0;

  std::span<const AccessRange> ranges_of(const StreamCommand& c) const {
    return {ranges.data() + c.range_first, c.n_ranges};
  }
  // Where `n` more bytes go in params (align 256) or staging (align 16);
  // false when they do not fit (the capture then fails).
  bool place_params(size_t n, uint64_t* off);
  bool place_staging(size_t n, uint64_t* off);
  // Appends `c` with its ranges to the log.
  void log(StreamCommand c, std::span<const AccessRange> r);
};

// The recordings of one backend, least recently used evicted first.
class ReplayCache {
 public:
  static constexpr size_t kMaxRecordings = 8;
  static constexpr size_t kParamsBytes = size_t{512} << 10;   // 2048 dispatches of 256 bytes
  static constexpr size_t kStagingBytes = size_t{256} << 10;

  // Creates the command pool the recordings' pieces come from.
  static Result<std::unique_ptr<ReplayCache>> create(const VulkanDevice& device);
  ~ReplayCache();
  ReplayCache(const ReplayCache&) = delete;
  ReplayCache& operator=(const ReplayCache&) = delete;

  // The most recently used complete recording whose first command is `c`,
  // or nullptr.
  Recording* find_first(const StreamCommand& c, std::span<const AccessRange> r);
  // A complete recording other than `not_this` whose first `n` commands are
  // those of `prefix` and whose command n is `c`, or nullptr.
  Recording* find_continuation(const Recording& prefix, size_t n, const StreamCommand& c,
                               std::span<const AccessRange> r);
  // An empty recording to capture into (evicting the least recently used
  // one that is not busy), or an error (no room: every one busy, or memory).
  Result<Recording*> start();
  // A new command buffer for `rec`'s next piece (begun by the caller).
  Result<VkCommandBuffer> add_piece(Recording& rec);
  // Forgets `rec` (a failed capture): its pieces are freed, its buffers kept for reuse.
  void drop(Recording* rec);
  // Forgets every recording that is not busy.
  void clear();
  // Marks `rec` used now (for eviction).
  void touch(Recording* rec) { rec->last_use = ++clock_; }
  size_t size() const { return recordings_.size(); }

 private:
  explicit ReplayCache(const VulkanDevice& device) : device_(device) {}
  void reset(Recording& rec);

  const VulkanDevice& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<Recording>> recordings_;
  std::vector<std::unique_ptr<Recording>> spare_;  // dropped: buffers kept
  uint64_t clock_ = 0;
};

}  // namespace folio::vulkan
