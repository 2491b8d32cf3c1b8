#include "grammar/char_set.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/utf8.h"

namespace folio::grammar {

CharSet::CharSet(std::vector<CodeRange> ranges) {
  // Code points stop at U+10FFFF: clamp, so hi + 1 below cannot overflow.
  for (CodeRange& r : ranges) r.hi = std::min(r.hi, kMaxCodePoint);
  std::erase_if(ranges, [](const CodeRange& r) { return r.lo > r.hi; });
  std::sort(ranges.begin(), ranges.end());
  for (const CodeRange& r : ranges) {
    // Merge overlapping and adjacent ranges.
    if (!ranges_.empty() && r.lo <= ranges_.back().hi + 1) {
      ranges_.back().hi = std::max(ranges_.back().hi, r.hi);
    } else {
      ranges_.push_back(r);
    }
  }
}

CharSet CharSet::any() {
  return CharSet({{0, kMaxCodePoint}});
}

bool CharSet::contains(uint32_t cp) const {
  // First range whose hi >= cp.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), cp,
                             [](const CodeRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges_.end() && it->lo <= cp;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), lo,
                             [](const CodeRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges_.end() && it->lo <= hi;
}

CharSet CharSet::complement() const {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (const CodeRange& r : ranges_) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return CharSet(std::move(out));
}

CharSet CharSet::united(const CharSet& other) const {
  std::vector<CodeRange> all = ranges_;
  all.insert(all.end(), other.ranges_.begin(), other.ranges_.end());
  return CharSet(std::move(all));
}

CharSet CharSet::minus(const CharSet& other) const {
  // this \ other = complement(complement(this) | other)
  return complement().united(other).complement();
}

std::string gbnf_escape(uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    case '\\':
      return "\\\\";
    default:
      break;
  }
  if (!in_class && cp == '"') return "\\\"";
  if (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^')) {
    return std::string("\\") + static_cast<char>(cp);
  }
  if (cp >= 0x20 && cp < 0x7F) return std::string(1, static_cast<char>(cp));
  if (cp < 0x100) return fmt::format("\\x{:02X}", cp);
  if (cp < 0x10000) return fmt::format("\\u{:04X}", cp);
  return fmt::format("\\U{:08X}", cp);
}

std::string CharSet::to_gbnf() const {
  if (ranges_.size() == 1 && ranges_[0].lo == ranges_[0].hi) {
    std::string out = "\"";  // (built in steps: GCC 12 warns falsely on "\"" + s)
    out += gbnf_escape(ranges_[0].lo, false);
    out += '"';
    return out;
  }
  if (ranges_.size() == 1 && ranges_[0].lo == 0 && ranges_[0].hi == kMaxCodePoint) return ".";
  // Write the shorter of the set and its complement.
  const CharSet comp = complement();
  const bool negate = !ranges_.empty() && comp.ranges_.size() < ranges_.size();
  const std::vector<CodeRange>& rs = negate ? comp.ranges_ : ranges_;
  std::string out = negate ? "[^" : "[";
  for (const CodeRange& r : rs) {
    out += gbnf_escape(r.lo, true);
    if (r.hi != r.lo) {
      if (r.hi != r.lo + 1) out += '-';
      out += gbnf_escape(r.hi, true);
    }
  }
  out += ']';
  return out;
}

}  // namespace folio::grammar
