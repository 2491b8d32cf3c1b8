// Incremental UTF-8 decoding for the grammar matcher and the token masker.
//
// Tokens split multi-byte characters (a byte-fallback token <0xE4> followed by
// two more), so both decode one byte at a time and keep the partial
// character between calls. They share this decoder so that they agree on
// every byte: the mask says "token allowed" exactly when the matcher would
// accept its bytes.
//
// After each byte of an incomplete character the decoder gives the range
// [lo, hi] of code points that some continuation could still complete to.
// Overlong forms, surrogates (U+D800..U+DFFF) and values above U+10FFFF are
// rejected as soon as the prefix rules them out (E0 80, ED A0, F4 90, ...).
#pragma once

#include <cstdint>
#include <string>

namespace folio::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
inline constexpr uint32_t kSurrogateLo = 0xD800;
inline constexpr uint32_t kSurrogateHi = 0xDFFF;

// The state between bytes: no character in progress (remaining == 0), or the
// bits of a lead byte and continuation bytes so far.
struct Utf8State {
  uint32_t value = 0;     // bits decoded so far
  uint8_t remaining = 0;  // continuation bytes still expected (0: between characters)
  uint8_t length = 0;     // total bytes of the character in progress

  bool idle() const { return remaining == 0; }
  bool operator==(const Utf8State&) const = default;
};

enum class Utf8Step : uint8_t {
  kInvalid,   // the byte cannot continue valid UTF-8
  kPartial,   // more bytes needed; lo/hi bound the character
  kComplete,  // a whole code point: lo == hi == the code point
};

struct Utf8Result {
  Utf8Step step = Utf8Step::kInvalid;
  uint32_t lo = 0;  // lowest code point still possible (the code point when complete)
  uint32_t hi = 0;  // highest code point still possible
};

// Feeds one byte to `state` (updated only when the result is not kInvalid).
inline Utf8Result utf8_step(Utf8State* state, uint8_t b) {
  Utf8State s = *state;
  if (s.remaining == 0) {
    if (b < 0x80) {
      *state = Utf8State{};
      return {Utf8Step::kComplete, b, b};
    }
    if (b >= 0xC2 && b <= 0xDF) {
      s = {static_cast<uint32_t>(b & 0x1F), 1, 2};
    } else if (b >= 0xE0 && b <= 0xEF) {
      s = {static_cast<uint32_t>(b & 0x0F), 2, 3};
    } else if (b >= 0xF0 && b <= 0xF4) {
      s = {static_cast<uint32_t>(b & 0x07), 3, 4};
    } else {
      return {};  // continuation byte, C0/C1 (always overlong), F5..FF
    }
  } else {
    if ((b & 0xC0) != 0x80) return {};
    s.value = (s.value << 6) | (b & 0x3F);
    --s.remaining;
  }
  // Smallest value that needs this many bytes (anything lower is overlong).
  static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  const unsigned shift = 6u * s.remaining;
  uint32_t lo = s.value << shift;
  uint32_t hi = lo | ((1u << shift) - 1);
  if (lo < kMinForLength[s.length]) lo = kMinForLength[s.length];
  if (hi > kMaxCodePoint) hi = kMaxCodePoint;
  if (lo > hi) return {};
  if (lo >= kSurrogateLo && hi <= kSurrogateHi) return {};  // only surrogates left
  *state = s;
  if (s.remaining == 0) {
    *state = Utf8State{};
    return {Utf8Step::kComplete, lo, lo};
  }
  return {Utf8Step::kPartial, lo, hi};
}

// Appends the UTF-8 encoding of `cp` (which must be <= U+10FFFF).
inline void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace folio::grammar
