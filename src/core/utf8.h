// UTF-8, one codec for the whole program: one code point from a byte string
// (utf8_decode), byte by byte as tokens arrive (utf8_step), validation
// (utf8_valid) and encoding (utf8_append).
//
// Valid means what the Unicode standard says: the shortest form, no
// surrogates (U+D800..U+DFFF), nothing above U+10FFFF. Lead bytes C0, C1 and
// F5..FF never start a valid sequence; E0, ED, F0 and F4 restrict the second
// byte (E0 A0.., ED ..9F, F0 90.., F4 ..8F).
//
// What happens to bytes that are not valid is the caller's choice, an
// explicit parameter, because each caller must match a different outside
// behaviour:
//   tokenizers  kByteAboveUnicode: every invalid byte stays a distinct
//               pseudo code point, so byte-level BPE and byte fallback see
//               the byte (token ids compared with Hugging Face's);
//   Jinja       kSurrogateEscape: Python's str of undecodable bytes
//               (errors="surrogateescape"), written back as the same bytes;
//   stop strings, HTTP text, template sources: kError (utf8_valid);
//   grammar     utf8_step, which rejects a byte as soon as no valid character
//               can follow it.
// Every policy of utf8_decode consumes exactly one byte of an invalid
// sequence, so the next call starts at the byte after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace folio {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
inline constexpr uint32_t kSurrogateLo = 0xD800;
inline constexpr uint32_t kSurrogateHi = 0xDFFF;
inline constexpr uint32_t kReplacementChar = 0xFFFD;
// Utf8Invalid::kByteAboveUnicode: invalid byte b decodes as kInvalidByteBase + b.
inline constexpr uint32_t kInvalidByteBase = 0x110000;
// Utf8Invalid::kSurrogateEscape: invalid byte b (always >= 0x80) decodes as
// kSurrogateEscapeBase + b, U+DC80..U+DCFF.
inline constexpr uint32_t kSurrogateEscapeBase = 0xDC00;

// A Unicode scalar value: <= U+10FFFF and not a surrogate.
inline bool is_scalar_value(uint32_t cp) {
  return cp <= kMaxCodePoint && (cp < kSurrogateLo || cp > kSurrogateHi);
}

// Length of the valid UTF-8 sequence a lead byte announces (1..4), or 0 for a
// byte that cannot start one (continuation byte, 0xC0, 0xC1, 0xF5..0xFF).
int utf8_sequence_length(uint8_t lead);

// What utf8_decode gives for a byte that starts no valid sequence (a stray
// continuation byte, C0, C1, F5..FF, or a lead whose sequence is truncated,
// broken by a non-continuation byte, overlong, a surrogate or above
// U+10FFFF). The result's len is 1 for each.
enum class Utf8Invalid : uint8_t {
  kError,             // valid = false, cp = 0
  kReplace,           // U+FFFD
  kByteAboveUnicode,  // kInvalidByteBase + byte: outside Unicode, one value per byte
  kSurrogateEscape,   // kSurrogateEscapeBase + byte (U+DC80..U+DCFF), as Python's surrogateescape
};

struct Utf8Char {
  uint32_t cp = 0;    // the code point, or what the policy gives for an invalid byte
  uint32_t len = 0;   // bytes consumed: 1..4 (1 when invalid)
  bool valid = false;  // a valid sequence was decoded
};

// Decodes the sequence starting at s[i] (i < s.size()).
Utf8Char utf8_decode(std::string_view s, size_t i, Utf8Invalid on_invalid);

// Whether all of `s` is valid UTF-8; if not and bad_offset is given, the
// offset of the first byte that starts no valid sequence.
bool utf8_valid(std::string_view s, size_t* bad_offset = nullptr);

// What utf8_append writes for a value that is not a scalar value.
enum class Utf8Unencodable : uint8_t {
  // U+FFFD for a surrogate or a value above U+10FFFF.
  kReplace,
  // U+DC80..U+DCFF write the one byte 0x80..0xFF they stand for (the inverse
  // of Utf8Invalid::kSurrogateEscape); every other value is written in the
  // byte pattern of its size without a check (other surrogates as three
  // bytes, values above U+10FFFF as four, which is not valid UTF-8).
  kSurrogateEscape,
};

// Appends the UTF-8 encoding of cp.
void utf8_append(uint32_t cp, std::string* out, Utf8Unencodable on_unencodable);

// ---------------------------------------------------------------------------
// Byte-by-byte decoding, for text that arrives in pieces that may split a
// character (a byte-fallback token <0xE4> followed by two more): the grammar
// matcher and token masker, and the streaming detokenizer's held-back tail.
// After each byte of an incomplete character the decoder gives the range
// [lo, hi] of code points that some continuation could still complete to; a
// byte is rejected as soon as the prefix rules out every valid character
// (E0 80, ED A0, F4 90, ...). A character completes exactly when utf8_decode
// would decode it as valid.

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

// Bytes at the end of `s` that begin a valid character without completing
// it (0..3): what a stream holds back until the rest arrives. 0 when `s`
// ends on a whole character or on bytes no continuation can make valid.
size_t utf8_incomplete_tail(std::string_view s);

}  // namespace folio
