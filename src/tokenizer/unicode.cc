#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace folio::tokenizer {

namespace detail {
extern const char kUnicodeVersion[];
extern const uint32_t kClassRuns[];
extern const size_t kClassRunCount;
extern const uint32_t kWhiteSpace[][2];
extern const size_t kWhiteSpaceCount;
extern const uint32_t kLowercase[][2];
extern const size_t kLowercaseCount;
extern const uint32_t kNfdFirst[][3];
extern const size_t kNfdFirstCount;
extern const uint32_t kCaseRuns[];
extern const size_t kCaseRunCount;
}  // namespace detail

namespace {

CharClass lookup_class(uint32_t cp) {
  if (cp > 0x10FFFF) return CharClass::kOther;
  // Last run whose start <= cp.
  const uint32_t key = (cp << 8) | 0xFF;
  const uint32_t* end = detail::kClassRuns + detail::kClassRunCount;
  const uint32_t* it = std::upper_bound(detail::kClassRuns, end, key);
  return static_cast<CharClass>(it[-1] & 0xFF);
}

uint8_t compute_flags(uint32_t cp) {
  uint8_t f = 0;
  switch (lookup_class(cp)) {
    case CharClass::kLetter:
      f |= kCpLetter;
      break;
    case CharClass::kMark:
      f |= kCpMark;
      break;
    case CharClass::kNumber:
      f |= kCpNumber;
      break;
    case CharClass::kPunct:
      f |= kCpPunct;
      break;
    case CharClass::kSymbol:
      f |= kCpSymbol;
      break;
    default:
      break;
  }
  if (is_whitespace(cp)) f |= kCpSpace;
  if (cp == '\r' || cp == '\n') f |= kCpNewline;
  return f;
}

// Flags of the Latin-1 range, computed once.
const std::array<uint8_t, 256>& latin1_flags() {
  static const std::array<uint8_t, 256> table = [] {
    std::array<uint8_t, 256> t{};
    for (uint32_t c = 0; c < 256; ++c) t[c] = compute_flags(c);
    return t;
  }();
  return table;
}

}  // namespace

CharClass char_class(uint32_t cp) {
  return lookup_class(cp);
}

LetterCase letter_case(uint32_t cp) {
  if (cp < 0x80) {
    return cp >= 'A' && cp <= 'Z'   ? LetterCase::kUpper
           : cp >= 'a' && cp <= 'z' ? LetterCase::kLower
                                    : LetterCase::kNone;
  }
  if (cp > 0x10FFFF) return LetterCase::kNone;
  const uint32_t key = (cp << 8) | 0xFF;
  const uint32_t* end = detail::kCaseRuns + detail::kCaseRunCount;
  const uint32_t* it = std::upper_bound(detail::kCaseRuns, end, key);
  return static_cast<LetterCase>(it[-1] & 0xFF);
}

bool is_whitespace(uint32_t cp) {
  for (size_t i = 0; i < detail::kWhiteSpaceCount; ++i) {
    if (cp < detail::kWhiteSpace[i][0]) return false;
    if (cp <= detail::kWhiteSpace[i][1]) return true;
  }
  return false;
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp;
  const auto* end = detail::kLowercase + detail::kLowercaseCount;
  const auto* it = std::lower_bound(detail::kLowercase, end, cp,
                                    [](const uint32_t (&e)[2], uint32_t c) { return e[0] < c; });
  return it != end && (*it)[0] == cp ? (*it)[1] : cp;
}

uint32_t nfd_first(uint32_t cp) {
  if (cp < 0xC0) return cp;  // nothing below U+00C0 decomposes
  const auto* end = detail::kNfdFirst + detail::kNfdFirstCount;
  // The last range starting at or before cp.
  const auto* it = std::upper_bound(detail::kNfdFirst, end, cp,
                                    [](uint32_t c, const uint32_t (&e)[3]) { return c < e[0]; });
  if (it == detail::kNfdFirst) return cp;
  --it;
  return cp <= (*it)[1] ? (*it)[2] : cp;
}

const char* unicode_version() {
  return detail::kUnicodeVersion;
}

uint8_t cp_flags(uint32_t cp) {
  if (cp < 256) return latin1_flags()[cp];
  return compute_flags(cp);
}

void DecodedText::decode(std::string_view text) {
  cps.clear();
  flags.clear();
  offs.clear();
  cps.reserve(text.size());
  flags.reserve(text.size());
  offs.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = utf8_decode(text, i, Utf8Invalid::kByteAboveUnicode);
    cps.push_back(c.cp);
    flags.push_back(cp_flags(c.cp));
    offs.push_back(i);
    i += c.len;
  }
  offs.push_back(text.size());
}

}  // namespace folio::tokenizer
