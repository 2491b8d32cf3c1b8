// CharSet: a set of Unicode code points as sorted, disjoint, non-adjacent
// inclusive ranges. The terminals of a grammar: a literal character is a
// one-code-point set, [a-z0-9] two ranges, [^"] the complement of one, `.`
// the whole range 0..U+10FFFF.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace folio::grammar {

struct CodeRange {
  uint32_t lo = 0;  // inclusive
  uint32_t hi = 0;  // inclusive
  bool operator==(const CodeRange&) const = default;
  auto operator<=>(const CodeRange&) const = default;
};

class CharSet {
 public:
  CharSet() = default;
  // Any ranges (unsorted, overlapping, lo > hi ones are dropped): normalized.
  explicit CharSet(std::vector<CodeRange> ranges);
  static CharSet single(uint32_t cp) { return CharSet({{cp, cp}}); }
  static CharSet range(uint32_t lo, uint32_t hi) { return CharSet({{lo, hi}}); }
  static CharSet any();  // 0..U+10FFFF

  const std::vector<CodeRange>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  bool contains(uint32_t cp) const;
  // Some code point in [lo, hi] is in the set.
  bool intersects(uint32_t lo, uint32_t hi) const;

  // The complement within 0..U+10FFFF.
  CharSet complement() const;
  CharSet united(const CharSet& other) const;
  CharSet minus(const CharSet& other) const;

  // GBNF text: a quoted literal for one code point ("a", "\""), else a
  // class ([a-z_], [^"\\]); escapes keep the text ASCII-printable.
  std::string to_gbnf() const;

  bool operator==(const CharSet&) const = default;
  auto operator<=>(const CharSet&) const = default;

 private:
  std::vector<CodeRange> ranges_;  // sorted by lo, disjoint, not adjacent
};

// A code point written for GBNF inside a string literal (in_class false) or a
// character class (in_class true): printable ASCII as itself unless it is
// syntax there, everything else as \n \t \r or \xHH / \uHHHH / \UHHHHHHHH.
std::string gbnf_escape(uint32_t cp, bool in_class);

}  // namespace folio::grammar
