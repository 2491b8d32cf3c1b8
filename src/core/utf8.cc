#include "core/utf8.h"

namespace folio {

int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

Utf8Char utf8_decode(std::string_view s, size_t i, Utf8Invalid on_invalid) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  const int n = utf8_sequence_length(b0);
  if (n == 1) return {b0, 1, true};
  bool ok = n != 0 && i + n <= s.size();
  uint32_t cp = b0 & (0x7F >> n);
  for (int k = 1; ok && k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    ok = (b & 0xC0) == 0x80;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms (2-byte ones are excluded by the lead check), surrogates
  // and values past U+10FFFF.
  if (ok && !((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || !is_scalar_value(cp))) {
    return {cp, static_cast<uint32_t>(n), true};
  }
  switch (on_invalid) {
    case Utf8Invalid::kError:
      return {0, 1, false};
    case Utf8Invalid::kReplace:
      return {kReplacementChar, 1, false};
    case Utf8Invalid::kByteAboveUnicode:
      return {kInvalidByteBase + b0, 1, false};
    case Utf8Invalid::kSurrogateEscape:
      return {kSurrogateEscapeBase + b0, 1, false};
  }
  return {0, 1, false};
}

bool utf8_valid(std::string_view s, size_t* bad_offset) {
  for (size_t i = 0; i < s.size();) {
    const Utf8Char c = utf8_decode(s, i, Utf8Invalid::kError);
    if (!c.valid) {
      if (bad_offset != nullptr) *bad_offset = i;
      return false;
    }
    i += c.len;
  }
  return true;
}

void utf8_append(uint32_t cp, std::string* out, Utf8Unencodable on_unencodable) {
  if (!is_scalar_value(cp)) {
    if (on_unencodable == Utf8Unencodable::kReplace) {
      cp = kReplacementChar;
    } else if (cp >= kSurrogateEscapeBase + 0x80 && cp <= kSurrogateEscapeBase + 0xFF) {
      out->push_back(static_cast<char>(cp - kSurrogateEscapeBase));
      return;
    }
  }
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

size_t utf8_incomplete_tail(std::string_view s) {
  // A lead byte at most 3 bytes from the end whose character runs past it.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto lead = static_cast<uint8_t>(s[n - back]);
    if ((lead & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    Utf8State state;
    for (size_t k = 0; k < back; ++k) {
      if (utf8_step(&state, static_cast<uint8_t>(s[n - back + k])).step != Utf8Step::kPartial) {
        return 0;  // complete, or no continuation can make it valid
      }
    }
    return back;
  }
  return 0;
}

}  // namespace folio
