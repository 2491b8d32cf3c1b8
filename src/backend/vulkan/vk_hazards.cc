#include "backend/vulkan/vk_hazards.h"

namespace folio::vulkan {

HazardTracker::HazardTracker() {
  // A decode step has a few dozen commands between barriers at most; the
  // lists grow beyond this only on a first use of a wider stage.
  written_.reserve(64);
  read_.reserve(128);
}

bool HazardTracker::overlaps(const std::vector<Range>& set, uintptr_t b, uintptr_t e) {
  for (const Range& r : set) {
    if (r.begin < e && b < r.end) return true;
  }
  return false;
}

bool HazardTracker::needs_barrier(const CommandAccess& c) const {
  if (all_) return true;
  if (n_commands_ == 0) return false;
  if (c.reads_errors) return true;
  for (const AccessRange& a : c.ranges) {
    if (a.end <= a.begin) continue;
    if (overlaps(written_, a.begin, a.end)) return true;  // RAW, WAW
    if (a.write && overlaps(read_, a.begin, a.end)) return true;  // WAR
  }
  return false;
}

void HazardTracker::note(const CommandAccess& c) {
  for (const AccessRange& a : c.ranges) {
    if (a.end <= a.begin) continue;
    std::vector<Range>& set = a.write ? written_ : read_;
    // A range that continues the last one of its kind extends it (rows of
    // one tensor bound twice, consecutive activations).
    if (!set.empty() && set.back().begin <= a.end && a.begin <= set.back().end) {
      if (a.begin < set.back().begin) set.back().begin = a.begin;
      if (a.end > set.back().end) set.back().end = a.end;
      continue;
    }
    set.push_back({a.begin, a.end});
  }
  ++n_commands_;
}

bool HazardTracker::order(const CommandAccess& c) {
  const bool barrier = needs_barrier(c);
  if (barrier) clear();
  note(c);
  return barrier;
}

void HazardTracker::clear() {
  written_.clear();
  read_.clear();
  n_commands_ = 0;
  all_ = false;
}

AccessRange access_range(const void* p, uint64_t bytes, bool write) {
  const auto b = reinterpret_cast<uintptr_t>(p);
  if (p == nullptr || bytes == 0) return AccessRange{0, 0, write};
  const uintptr_t begin = b & ~(kHazardGranule - 1);
  const uintptr_t end = (b + bytes + kHazardGranule - 1) & ~(kHazardGranule - 1);
  return AccessRange{begin, end, write};
}

}  // namespace folio::vulkan
