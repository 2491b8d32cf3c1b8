// Unicode helpers for the tokenizers: the character classes the
// pre-tokenizer regexes use (\p{L}, \p{M}, \p{N}, \p{P}, \p{S}, \p{Z}, \s),
// lowercase and the first code point of a decomposition. The tables are
// generated from Python's unicodedata by scripts/gen_unicode_tables.py into
// unicode_tables.cc and unicode_norm_tables.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

// The tokenizers decode UTF-8 with core/utf8.h's Utf8Invalid::kByteAboveUnicode:
// an invalid byte b decodes as kInvalidByteBase + b (outside Unicode, class
// kOther, not whitespace), so it groups with punctuation-like runs and passes
// through byte-level BPE / byte fallback unchanged. They encode with
// Utf8Unencodable::kReplace (such a value, or a surrogate, becomes U+FFFD).

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
