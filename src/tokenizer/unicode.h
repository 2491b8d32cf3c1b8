// Unicode helpers for the tokenizers: UTF-8 decoding that never fails (an
// invalid byte decodes as one pseudo code point), encoding, and the character
// classes the pre-tokenizer regexes use (\p{L}, \p{M}, \p{N}, \p{P}, \p{S},
// \p{Z}, \s), lowercase and the first code point of a decomposition. The
// tables are generated from Python's unicodedata by
// scripts/gen_unicode_tables.py into unicode_tables.cc and
// unicode_norm_tables.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio::tokenizer {

// Unicode general category, major class only.
enum class CharClass : uint8_t {
  kOther = 0,  // C*: control, format, surrogate, private use, unassigned
  kLetter = 1,
  kMark = 2,
  kNumber = 3,
  kPunct = 4,
  kSymbol = 5,
  kSeparator = 6,
};

// An invalid UTF-8 byte b decodes as kInvalidByteBase + b: outside Unicode,
// class kOther, not whitespace, so it groups with punctuation-like runs and
// passes through byte-level BPE / byte fallback unchanged.
inline constexpr uint32_t kInvalidByteBase = 0x110000;
inline constexpr uint32_t kReplacementChar = 0xFFFD;

CharClass char_class(uint32_t cp);

// The case of a letter, as the general categories tell it: Lu and Lt (upper
// and title case), Ll (lower case); kNone for Lm, Lo and every non-letter.
enum class LetterCase : uint8_t { kNone = 0, kUpper = 1, kLower = 2 };
LetterCase letter_case(uint32_t cp);
// Unicode White_Space (what \s matches).
bool is_whitespace(uint32_t cp);
// The simple lowercase mapping (UnicodeData.txt); cp itself when it has none.
uint32_t to_lower(uint32_t cp);
// The first code point of cp's canonical decomposition (NFD); cp itself when
// it has none: U+00E9 (e acute) -> 'e'. Precomposed letters lose their
// accents this way, as in llama.cpp's WordPiece normaliser; combining marks
// that stand alone stay.
uint32_t nfd_first(uint32_t cp);
// Unicode version of the tables ("14.0.0").
const char* unicode_version();

struct Utf8Char {
  uint32_t cp;   // code point, or kInvalidByteBase + byte
  uint32_t len;  // bytes consumed, 1..4
};

// Decodes the sequence starting at s[i] (i < s.size()). Overlong forms,
// surrogates, values above U+10FFFF, stray continuation bytes and truncated
// sequences are invalid: one byte is consumed.
Utf8Char decode_utf8(std::string_view s, size_t i);

// Appends the UTF-8 encoding of cp (a valid scalar value; others append U+FFFD).
void append_utf8(uint32_t cp, std::string* out);

// Length of the valid UTF-8 sequence a lead byte announces (1..4), or 0 for a
// byte that cannot start one (continuation byte, 0xC0, 0xC1, 0xF5..0xFF).
int utf8_sequence_length(uint8_t lead);

// Per-code-point flags the pre-tokenizer matchers test.
enum CpFlag : uint8_t {
  kCpLetter = 1 << 0,
  kCpMark = 1 << 1,
  kCpNumber = 1 << 2,
  kCpPunct = 1 << 3,
  kCpSymbol = 1 << 4,
  kCpSpace = 1 << 5,    // \s
  kCpNewline = 1 << 6,  // \r or \n
};
uint8_t cp_flags(uint32_t cp);

// A byte string decoded once: cps[i] starts at byte offs[i]; offs has one
// extra entry (the end), so piece [a, b) of code points is bytes
// [offs[a], offs[b]).
struct DecodedText {
  std::vector<uint32_t> cps;
  std::vector<uint8_t> flags;
  std::vector<size_t> offs;

  void decode(std::string_view text);
  size_t size() const { return cps.size(); }
};

}  // namespace folio::tokenizer
