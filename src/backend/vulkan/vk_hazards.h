// Hazard tracking for the Vulkan command stream: which commands recorded
// since the last pipeline barrier may still run at the same time as the next
// one, and whether the next one must wait for them.
//
// Every command (dispatch, transfer) names the byte ranges it reads and the
// ranges it writes, as device addresses (backend/device_memory.h: each chunk
// of device memory has its own reserved host address range, so addresses of
// different buffers never overlap). A command needs a barrier before it when
//   - it reads a range an unsynchronised command wrote (read after write),
//   - it writes a range an unsynchronised command read (write after read) or
//     wrote (write after write),
//   - it reads the error word and any command is unsynchronised (every
//     shader may set the word; the fused state updates read it to skip
//     their writes after a failed check), or
//   - the tracker was told the stream is unknown (mark_all()): after a wait
//     on the host, a copy of unknown extent.
// A range may be strided: blocks of `len` bytes every `period` bytes from
// its begin (the columns of a view into a wider product: q, k and v of a
// joined Q/K/V product). Two strided ranges of one period overlap only
// where their blocks meet within the period; any other pair overlaps where
// their extents do.
// A barrier waits for everything before it (all stages, all memory), so
// recording one clears the tracker. Being conservative is the contract: any
// doubt is a barrier; a missing one is a data race a CPU driver (lavapipe)
// may never show.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace folio::vulkan {

// Bytes [begin, end) of device addresses one command touches; `write` also
// covers reading it. period > 0: only the blocks [begin + i * period,
// begin + i * period + len) within it (len < period, both multiples of
// kHazardGranule).
struct AccessRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  bool write = false;
  uintptr_t period = 0;
  uintptr_t len = 0;

  bool operator==(const AccessRange&) const = default;
};

// Whether two ranges may share a byte (see the top).
bool ranges_overlap(const AccessRange& a, const AccessRange& b);

// Granularity ranges are widened to (outwards), so shaders that read or
// write whole 16-byte vectors around a tensor's edge stay inside what the
// tracker knows about.
inline constexpr uintptr_t kHazardGranule = 16;

// What one command does, for HazardTracker.
struct CommandAccess {
  std::span<const AccessRange> ranges;
  bool reads_errors = false;  // reads the error word (see above)
};

class HazardTracker {
 public:
  HazardTracker();
  // Whether `c` must wait for the commands noted since the last clear().
  bool needs_barrier(const CommandAccess& c) const;
  // Notes `c` as recorded after the last barrier.
  void note(const CommandAccess& c);
  // What the stream does for each command: true when a barrier must be
  // recorded before `c` (the tracker is then cleared as that barrier
  // clears it), and `c` noted after it.
  bool order(const CommandAccess& c);
  // A barrier was recorded: nothing before it is unsynchronised any more.
  void clear();
  // The next command waits whatever it touches (the state before it is not
  // known to the tracker).
  void mark_all() { all_ = true; }
  // Commands noted since the last clear().
  uint32_t unsynced() const { return n_commands_; }

 private:
  static bool overlaps(const std::vector<AccessRange>& set, const AccessRange& a);

  std::vector<AccessRange> written_;  // capacity kept across clear(): no allocation per dispatch
  std::vector<AccessRange> read_;
  uint32_t n_commands_ = 0;
  bool all_ = false;
};

// The range of `bytes` bytes at `p`, widened to kHazardGranule.
AccessRange access_range(const void* p, uint64_t bytes, bool write);

// `count` blocks of `block` bytes, `period` bytes apart, from `p`, each
// widened to kHazardGranule; one solid range where the widened blocks
// leave no gap or the period is no multiple of the granule.
AccessRange strided_access_range(const void* p, uint64_t block, uint64_t period, uint64_t count,
                                 bool write);

}  // namespace folio::vulkan
