// GBNF for JSON numbers between bounds (JSON Schema's minimum / maximum /
// exclusiveMinimum / exclusiveMaximum), digit by digit.
//
// Integers in [lo, hi] are written without leading zeros as alternatives of
// equal-length digit ranges: [7, 123] -> [7-9] | [1-9] [0-9] | "1" ( [0-1]
// [0-9] | "2" [0-3] ). Numbers with a fraction add "." digits where that stays
// inside the bounds (at the upper bound only zeros). Bounds must be
// integers for numbers; exponents are not generated when a bound is given.
//
// Without a bound, magnitudes stop at 16 digits (kMaxIntegerDigits), the
// same limit the unbounded JSON grammar uses so a model cannot write digits
// forever: the grammar then matches a subset of the valid values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace folio::grammar {

inline constexpr int kMaxIntegerDigits = 16;
inline constexpr int64_t kMaxIntegerMagnitude = 9999999999999999;  // 16 digits

// Digits (no sign, no leading zeros) of every integer in [lo, hi];
// lo <= hi <= kMaxIntegerMagnitude.
std::string uint_range_gbnf(uint64_t lo, uint64_t hi);

// JSON integers in [lo, hi] (nullopt: unbounded on that side), magnitudes
// capped at kMaxIntegerMagnitude. Error if the range holds no such integer.
Result<std::string> int_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A bound on a number.
struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

// JSON numbers x with lo <(=) x <(=) hi: an integer part, optionally a
// fraction of up to 16 digits, no exponent. Error if no such number exists.
Result<std::string> number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace folio::grammar
