#include "model/op_profile.h"

#include <algorithm>
#include <map>

namespace folio::model {

namespace {

std::vector<OpProfileRow> op_profile_sorted(std::vector<OpProfileRow> rows) {
  std::sort(rows.begin(), rows.end(), [](const OpProfileRow& a, const OpProfileRow& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  return rows;
}

double op_profile_ns(OpProfile::Clock::duration d) {
  return std::chrono::duration<double, std::nano>(d).count();
}

}  // namespace

void OpProfile::add(const std::string& kernel, OpKind kind, Clock::duration d) {
  Entry& e = entries_[kernel];
  e.kind = kind;
  e.count += 1;
  e.time += d;
}

void OpProfile::merge(const OpProfile& other) {
  for (const auto& [name, o] : other.entries_) {
    Entry& e = entries_[name];
    e.kind = o.kind;
    e.count += o.count;
    e.time += o.time;
  }
}

std::vector<OpProfileRow> OpProfile::by_kernel() const {
  std::vector<OpProfileRow> rows;
  rows.reserve(entries_.size());
  for (const auto& [name, e] : entries_) rows.push_back({name, e.count, op_profile_ns(e.time)});
  return op_profile_sorted(std::move(rows));
}

std::vector<OpProfileRow> OpProfile::by_kind() const {
  std::map<std::string, OpProfileRow> kinds;
  for (const auto& [name, e] : entries_) {
    OpProfileRow& r = kinds[op_kind_name(e.kind)];
    r.name = op_kind_name(e.kind);
    r.count += e.count;
    r.ns += op_profile_ns(e.time);
  }
  std::vector<OpProfileRow> rows;
  rows.reserve(kinds.size());
  for (auto& [name, r] : kinds) rows.push_back(std::move(r));
  return op_profile_sorted(std::move(rows));
}

double OpProfile::total_ns() const {
  double ns = 0;
  for (const auto& [name, e] : entries_) ns += op_profile_ns(e.time);
  return ns;
}

}  // namespace folio::model
