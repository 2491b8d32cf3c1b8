#include "backend/vulkan/vk_hazards.h"

namespace folio::vulkan {

HazardTracker::HazardTracker() {
  // A decode step has a few dozen commands between barriers at most; the
  // lists grow beyond this only on a first use of a wider stage.
  written_.reserve(64);
  read_.reserve(128);
}

bool ranges_overlap(const AccessRange& a, const AccessRange& b) {
  if (!(a.begin < b.end && b.begin < a.end)) return false;
  if (a.period == 0 || a.period != b.period) return true;
  // Blocks [0, a.len) and [d, d + b.len) on a circle of a.period bytes.
  const uintptr_t p = a.period;
  const uintptr_t d =
      a.begin <= b.begin ? (b.begin - a.begin) % p : (p - (a.begin - b.begin) % p) % p;
  return d < a.len || d + b.len > p;
}

bool HazardTracker::overlaps(const std::vector<AccessRange>& set, const AccessRange& a) {
  for (const AccessRange& r : set) {
    if (ranges_overlap(r, a)) return true;
  }
  return false;
}

bool HazardTracker::needs_barrier(const CommandAccess& c) const {
  if (all_) return true;
  if (n_commands_ == 0) return false;
  if (c.reads_errors) return true;
  for (const AccessRange& a : c.ranges) {
    if (a.end <= a.begin) continue;
    if (overlaps(written_, a)) return true;          // RAW, WAW
    if (a.write && overlaps(read_, a)) return true;  // WAR
  }
  return false;
}

void HazardTracker::note(const CommandAccess& c) {
  for (const AccessRange& a : c.ranges) {
    if (a.end <= a.begin) continue;
    std::vector<AccessRange>& set = a.write ? written_ : read_;
    // A solid range that continues the last one of its kind extends it
    // (rows of one tensor bound twice, consecutive activations).
    if (a.period == 0 && !set.empty() && set.back().period == 0 && set.back().begin <= a.end &&
        a.begin <= set.back().end) {
      if (a.begin < set.back().begin) set.back().begin = a.begin;
      if (a.end > set.back().end) set.back().end = a.end;
      continue;
    }
    set.push_back(a);
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

AccessRange strided_access_range(const void* p, uint64_t block, uint64_t period, uint64_t count,
                                 bool write) {
  if (p == nullptr || block == 0 || count == 0) return AccessRange{0, 0, write};
  const uint64_t extent = (count - 1) * period + block;
  const auto b = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = b & ~(kHazardGranule - 1);
  const uintptr_t len = (b - begin + block + kHazardGranule - 1) & ~(kHazardGranule - 1);
  if (count == 1 || period % kHazardGranule != 0 || len >= period) {
    return access_range(p, extent, write);
  }
  AccessRange r = access_range(p, extent, write);
  r.period = period;
  r.len = len;
  return r;
}

}  // namespace folio::vulkan
