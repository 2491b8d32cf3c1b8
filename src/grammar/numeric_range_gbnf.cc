#include "grammar/numeric_range_gbnf.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace folio::grammar {
namespace {

bool all_of_char(std::string_view s, char c) {
  return std::all_of(s.begin(), s.end(), [c](char x) { return x == c; });
}

std::string quoted(std::string_view digits) {
  return fmt::format("\"{}\"", digits);
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return quoted(std::string_view(&lo, 1));
  return fmt::format("[{}-{}]", lo, hi);
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return fmt::format("[0-9]{{{}}}", n);
}

std::string concat(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " | " : " ") + alts[i];
  return out + " )";
}

// Digit strings of one length from a to b (a <= b, same length): fix the
// common leading digits, then split at the first differing digit into the
// lower edge, the full middle and the upper edge.
std::string same_length(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n == 0) return "";
  if (a == b) return quoted(a);
  if (all_of_char(a, '0') && all_of_char(b, '9')) return any_digits(n);
  if (a[0] == b[0]) return concat(quoted(a.substr(0, 1)), same_length(a.substr(1), b.substr(1)));
  const size_t rest = n - 1;
  const bool low_full = all_of_char(a.substr(1), '0');   // a = d000: its edge is a full block
  const bool high_full = all_of_char(b.substr(1), '9');  // b = d999: likewise
  const char mid_lo = low_full ? a[0] : static_cast<char>(a[0] + 1);
  const char mid_hi = high_full ? b[0] : static_cast<char>(b[0] - 1);
  std::vector<std::string> alts;
  if (!low_full) {
    alts.push_back(
        concat(quoted(a.substr(0, 1)), same_length(a.substr(1), std::string(rest, '9'))));
  }
  if (mid_lo <= mid_hi) alts.push_back(concat(digit_class(mid_lo, mid_hi), any_digits(rest)));
  if (!high_full) {
    alts.push_back(
        concat(quoted(b.substr(0, 1)), same_length(std::string(rest, '0'), b.substr(1))));
  }
  return alternatives(alts);
}

uint64_t pow10(size_t n) {
  uint64_t p = 1;
  for (size_t i = 0; i < n; ++i) p *= 10;
  return p;
}

// Fractions: any, only zeros (at an inclusive integer upper bound), and not
// all zeros (just above an exclusive integer lower bound; written ending in
// a non-zero digit).
const char* const kAnyFraction = "( \".\" [0-9]{1,16} )?";
const char* const kZeroFraction = "( \".\" \"0\"{1,16} )?";
const char* const kNonZeroFraction = "\".\" [0-9]{0,15} [1-9]";

// Magnitudes m (integer part and fraction) with A <(=) m <(=) B, B absent
// meaning up to the digit cap; appended to `alts`.
void magnitudes(NumberBound a, std::optional<NumberBound> b, std::vector<std::string>* alts) {
  const int64_t cap = kMaxIntegerMagnitude;
  // Integer part == A.
  if (!b || a.value < b->value) {
    alts->push_back(
        fmt::format("\"{}\" {}", a.value, a.exclusive ? kNonZeroFraction : kAnyFraction));
  } else if (a.value == b->value && !a.exclusive && !b->exclusive) {
    alts->push_back(fmt::format("\"{}\" {}", a.value, kZeroFraction));
  }
  // Integer part strictly between: any fraction.
  const int64_t lo = a.value + 1;
  const int64_t hi = b ? b->value - 1 : cap;
  if (lo <= hi) {
    alts->push_back(concat(uint_range_gbnf(static_cast<uint64_t>(lo), static_cast<uint64_t>(hi)),
                           kAnyFraction));
  }
  // Integer part == B (inclusive): only a zero fraction.
  if (b && b->value > a.value && !b->exclusive) {
    alts->push_back(fmt::format("\"{}\" {}", b->value, kZeroFraction));
  }
}

}  // namespace

std::string uint_range_gbnf(uint64_t lo, uint64_t hi) {
  const std::string slo = std::to_string(lo);
  const std::string shi = std::to_string(hi);
  std::vector<std::string> alts;
  for (size_t len = slo.size(); len <= shi.size(); ++len) {
    const uint64_t first = len == 1 ? 0 : pow10(len - 1);
    const uint64_t last = pow10(len) - 1;
    const uint64_t a = std::max(lo, first);
    const uint64_t b = std::min(hi, last);
    if (a <= b) alts.push_back(same_length(std::to_string(a), std::to_string(b)));
  }
  return alternatives(alts);
}

Result<std::string> int_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  const int64_t cap = kMaxIntegerMagnitude;
  const int64_t l = std::max(lo.value_or(-cap), -cap);
  const int64_t h = std::min(hi.value_or(cap), cap);
  if (l > h) {
    return invalid_argument("no integer between {} and {} (magnitudes are limited to {} digits)",
                            lo ? std::to_string(*lo) : "-inf", hi ? std::to_string(*hi) : "inf",
                            kMaxIntegerDigits);
  }
  std::vector<std::string> alts;
  if (l < 0) {
    const int64_t mag_lo = h < 0 ? -h : 1;
    alts.push_back("\"-\" " +
                   uint_range_gbnf(static_cast<uint64_t>(mag_lo), static_cast<uint64_t>(-l)));
  }
  if (h >= 0)
    alts.push_back(
        uint_range_gbnf(static_cast<uint64_t>(std::max<int64_t>(l, 0)), static_cast<uint64_t>(h)));
  return alternatives(alts);
}

Result<std::string> number_range_gbnf(std::optional<NumberBound> lo,
                                      std::optional<NumberBound> hi) {
  const int64_t cap = kMaxIntegerMagnitude;
  // Bounds beyond the digit cap are clamped: a subset of the valid numbers.
  if (lo && lo->value < -cap) lo = NumberBound{-cap, false};
  if (hi && hi->value > cap) hi = NumberBound{cap, false};
  if (lo && hi &&
      (lo->value > hi->value || (lo->value == hi->value && (lo->exclusive || hi->exclusive)))) {
    return invalid_argument("no number between the bounds {} and {}", lo->value, hi->value);
  }
  if (lo && lo->value > cap) return invalid_argument("minimum {} is beyond 16 digits", lo->value);
  if (hi && hi->value < -cap) return invalid_argument("maximum {} is beyond 16 digits", hi->value);

  std::vector<std::string> alts;
  // x < 0: magnitudes -hi <(=) m <(=) -lo, and m > 0.
  if (!lo || lo->value < 0) {
    const NumberBound a =
        (hi && hi->value < 0) ? NumberBound{-hi->value, hi->exclusive} : NumberBound{0, true};
    std::optional<NumberBound> b;
    if (lo) b = NumberBound{-lo->value, lo->exclusive};
    std::vector<std::string> neg;
    magnitudes(a, b, &neg);
    if (!neg.empty()) alts.push_back("\"-\" " + alternatives(neg));
  }
  // x >= 0.
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    const NumberBound a = (lo && lo->value >= 0) ? *lo : NumberBound{0, false};
    magnitudes(a, hi, &alts);
  }
  if (alts.empty()) return invalid_argument("no number between the bounds");
  return alternatives(alts);
}

}  // namespace folio::grammar
