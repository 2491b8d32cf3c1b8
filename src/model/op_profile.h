// OpProfile: wall-clock totals of the ops a ForwardContext runs, kept per
// kernel (mul_mat / mul_mat_id also per weight shape, so the LM head stands
// apart from the layers' projections) with each kernel's op kind, so the
// same record reads per kernel (FOLIO_PROFILE's log) or per op kind
// (`folio bench --profile`). An op's time is the wall clock around the whole
// op as the context runs it: routing, the kernel with its threads' hand-off
// and join, copies to and from a device; on a device, the time to record it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/op.h"

namespace folio::model {

struct OpProfileRow {
  std::string name;  // kernel ("mul_mat.q4_1.amx [576, 1536]") or op kind ("mul_mat")
  uint64_t count = 0;
  double ns = 0;  // total wall time
};

class OpProfile {
 public:
  using Clock = std::chrono::steady_clock;

  // One op of kind `kind` ran `kernel` for `d`.
  void add(const std::string& kernel, OpKind kind, Clock::duration d);
  // Adds every total of `other` to this one.
  void merge(const OpProfile& other);
  void clear() { entries_.clear(); }
  bool empty() const { return entries_.empty(); }

  // Totals per kernel / per op kind, largest time first (ties: by name).
  std::vector<OpProfileRow> by_kernel() const;
  std::vector<OpProfileRow> by_kind() const;
  // Sum of every op's time, ns.
  double total_ns() const;

 private:
  struct Entry {
    OpKind kind = OpKind::kGetRows;
    uint64_t count = 0;
    Clock::duration time{};
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace folio::model
