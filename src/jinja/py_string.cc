#include "jinja/py_string.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace folio::jinja::py {

size_t length(std::string_view s) {
  size_t n = 0, i = 0;
  while (i < s.size()) {
    next_cp(s, &i);
    ++n;
  }
  return n;
}

std::vector<size_t> offsets(std::string_view s) {
  std::vector<size_t> off;
  off.reserve(s.size() + 1);
  size_t i = 0;
  while (i < s.size()) {
    off.push_back(i);
    next_cp(s, &i);
  }
  off.push_back(s.size());
  return off;
}

bool is_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_linebreak(uint32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

bool is_printable(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x34F) return true;
  if (c == 0x61C || c == 0x180E || c == 0x1680) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF0 && c <= 0xFFFB) ||
      c == 0xFFFE || c == 0xFFFF)
    return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || c >= 0xF0000) return false;  // surrogates, private use
  if ((c & 0xFFFE) == 0xFFFE) return false;                        // noncharacters
  if (c >= 0xE0000 && c <= 0xE0FFF) return false;  // tags, variation selectors supplement
  return true;
}

// ---------------------------------------------------------------------------
// Case mapping (simple mappings; the multi-character ones are handled in
// upper() / lower()).

namespace {

// Pairs where upper = even code point and lower = upper + 1 (or odd/even when
// `odd_upper`).
struct PairRange {
  uint32_t first, last;
  bool odd_upper;
};
constexpr PairRange kPairs[] = {
    {0x0100, 0x012F, false}, {0x0132, 0x0137, false}, {0x0139, 0x0148, true},
    {0x014A, 0x0177, false}, {0x0179, 0x017E, true},  {0x0182, 0x0185, false},
    {0x01A0, 0x01A5, false}, {0x01CD, 0x01DC, true},  {0x01DE, 0x01EF, false},
    {0x01F8, 0x021F, false}, {0x0222, 0x0233, false}, {0x0460, 0x0481, false},
    {0x048A, 0x04BF, false}, {0x04C1, 0x04CE, true},  {0x04D0, 0x052F, false},
    {0x1E00, 0x1E95, false}, {0x1EA0, 0x1EFF, false},
};

uint32_t pair_upper(uint32_t c) {
  for (const auto& r : kPairs) {
    if (c >= r.first && c <= r.last) {
      bool is_lower_cp = r.odd_upper ? (c % 2 == 0) : (c % 2 == 1);
      return is_lower_cp ? c - 1 : c;
    }
  }
  return c;
}

uint32_t pair_lower(uint32_t c) {
  for (const auto& r : kPairs) {
    if (c >= r.first && c <= r.last) {
      bool is_upper_cp = r.odd_upper ? (c % 2 == 1) : (c % 2 == 0);
      return is_upper_cp ? c + 1 : c;
    }
  }
  return c;
}

// The digraph triples DŽ Dž dž, LJ Lj lj, NJ Nj nj, DZ Dz dz: upper, title, lower.
uint32_t digraph_base(uint32_t c) {
  if (c >= 0x1C4 && c <= 0x1CC) return 0x1C4 + (c - 0x1C4) / 3 * 3;
  if (c >= 0x1F1 && c <= 0x1F3) return 0x1F1;
  return 0;
}

uint32_t to_upper_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (uint32_t b = digraph_base(c)) return b;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return pair_upper(c);
}

uint32_t to_lower_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (uint32_t b = digraph_base(c)) return b + 2;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return pair_lower(c);
}

bool is_cased(uint32_t c) {
  return to_upper_cp(c) != c || to_lower_cp(c) != c || c == 0xDF || c == 0x149;
}

void append_upper(std::string* out, uint32_t c) {
  static constexpr const char* kLigatures[] = {"FF", "FI", "FL", "FFI", "FFL", "ST", "ST"};  // U+FB00..FB06
  if (c >= 0xFB00 && c <= 0xFB06) {
    out->append(kLigatures[c - 0xFB00]);
  } else if (c == 0xDF) {
    out->append("SS");
  } else if (c == 0x149) {
    out->append("\u02BCN");
  } else {
    append_utf8(out, to_upper_cp(c));
  }
}

void append_lower(std::string* out, uint32_t c) {
  if (c == 0x130) {
    out->append("i\u0307");
  } else {
    append_utf8(out, to_lower_cp(c));
  }
}

// Titlecase of the first letter of a word (same as upper for the scripts we
// map, ß -> "Ss").
void append_title(std::string* out, uint32_t c) {
  if (c == 0xDF) {
    out->append("Ss");
  } else if (uint32_t b = digraph_base(c)) {
    append_utf8(out, b + 1);
  } else {
    append_upper(out, c);
  }
}

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) cps.push_back(next_cp(s, &i));
  return cps;
}

}  // namespace

bool is_upper(uint32_t c) {
  return to_lower_cp(c) != c;
}
bool is_lower(uint32_t c) {
  return (to_upper_cp(c) != c || c == 0xDF) && !is_upper(c);
}

bool is_alpha(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c == 0xAA || c == 0xB5 || c == 0xBA) return true;
  if (c >= 0xC0 && c <= 0x24F) return c != 0xD7 && c != 0xF7;
  if (is_cased(c)) return true;
  // CJK, kana, hangul, Arabic, Hebrew, Devanagari..: letters without case.
  return (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x64A) || (c >= 0x904 && c <= 0x939) ||
         (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
         (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0x3400 && c <= 0x4DBF);
}

bool is_digit(uint32_t c) {
  return (c >= '0' && c <= '9') || (c >= 0x660 && c <= 0x669) || (c >= 0xFF10 && c <= 0xFF19) ||
         c == 0xB2 || c == 0xB3 || c == 0xB9;
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) append_upper(&out, next_cp(s, &i));
  return out;
}

std::string lower(std::string_view s) {
  std::vector<uint32_t> cps = decode(s);
  std::string out;
  out.reserve(s.size());
  for (size_t k = 0; k < cps.size(); ++k) {
    uint32_t c = cps[k];
    if (c == 0x3A3) {
      // Final sigma: preceded by a cased letter, not followed by one.
      bool before = false, after = false;
      for (size_t j = k; j-- > 0;) {
        if (is_cased(cps[j])) {
          before = true;
          break;
        }
        if (cps[j] != 0x27 && cps[j] != 0x2019 && cps[j] != 0xAD) break;
      }
      for (size_t j = k + 1; j < cps.size(); ++j) {
        if (is_cased(cps[j])) {
          after = true;
          break;
        }
        if (cps[j] != 0x27 && cps[j] != 0x2019 && cps[j] != 0xAD) break;
      }
      append_utf8(&out, before && !after ? 0x3C2 : 0x3C3);
      continue;
    }
    append_lower(&out, c);
  }
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool prev_cased = false;
  size_t i = 0;
  while (i < s.size()) {
    uint32_t c = next_cp(s, &i);
    if (prev_cased) {
      append_lower(&out, c);
    } else {
      append_title(&out, c);
    }
    prev_cased = is_cased(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  bool first = true;
  while (i < s.size()) {
    uint32_t c = next_cp(s, &i);
    if (first) {
      append_title(&out, c);
      first = false;
    } else {
      append_lower(&out, c);
    }
  }
  return out;
}

std::string swapcase(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    uint32_t c = next_cp(s, &i);
    if (is_upper(c)) {
      append_lower(&out, c);
    } else if (is_lower(c)) {
      append_upper(&out, c);
    } else {
      append_utf8(&out, c);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::vector<uint32_t> set;
  if (chars) set = decode(*chars);
  auto strippable = [&](uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_space(c);
  };
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!strippable(next_cp(s, &next))) break;
      begin = next;
    }
  }
  if (right) {
    std::vector<size_t> off = offsets(s.substr(begin, end - begin));
    size_t k = off.size() - 1;
    while (k > 0) {
      size_t at = off[k - 1];
      size_t tmp = begin + at;
      if (!strippable(next_cp(s, &tmp))) break;
      --k;
    }
    end = begin + off[k];
  }
  return std::string(s.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    size_t pos = 0;
    while (maxsplit-- > 0) {
      size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  size_t i = 0, n = s.size();
  auto skip_space = [&]() {
    while (i < n) {
      size_t next = i;
      if (!is_space(next_cp(s, &next))) break;
      i = next;
    }
  };
  skip_space();
  while (i < n) {
    if (maxsplit-- <= 0) {
      out.emplace_back(s.substr(i));
      break;
    }
    size_t start = i;
    while (i < n) {
      size_t next = i;
      if (is_space(next_cp(s, &next))) break;
      i = next;
    }
    out.emplace_back(s.substr(start, i - start));
    skip_space();
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    size_t end = s.size();
    while (maxsplit-- > 0) {
      if (end < sep->size()) break;
      size_t hit = s.substr(0, end).rfind(*sep);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  std::vector<size_t> off = offsets(s);
  auto space_at = [&](size_t k) {
    size_t at = off[k];
    return is_space(next_cp(s, &at));
  };
  size_t k = off.size() - 1;  // exclusive end, in code points
  while (k > 0 && space_at(k - 1)) --k;
  while (k > 0) {
    if (maxsplit-- <= 0) {
      out.emplace_back(s.substr(0, off[k]));
      break;
    }
    size_t end = k;
    while (k > 0 && !space_at(k - 1)) --k;
    out.emplace_back(s.substr(off[k], off[end] - off[k]));
    while (k > 0 && space_at(k - 1)) --k;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t i = 0, start = 0;
  while (i < s.size()) {
    size_t at = i;
    uint32_t c = next_cp(s, &i);
    if (!is_linebreak(c)) continue;
    size_t eol = i;
    if (c == '\r' && i < s.size() && s[i] == '\n') eol = ++i;
    out.emplace_back(s.substr(start, (keepends ? eol : at) - start));
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl,
                    int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old.empty()) {
    size_t i = 0;
    while (i < s.size()) {
      if (count > 0) {
        out.append(repl);
        --count;
      }
      size_t at = i;
      next_cp(s, &i);
      out.append(s.substr(at, i - at));
    }
    if (count > 0) out.append(repl);
    return out;
  }
  size_t pos = 0;
  while (count > 0) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(repl);
    pos = hit + old.size();
    --count;
  }
  out.append(s.substr(pos));
  return out;
}

int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse) {
  std::vector<size_t> off = offsets(s);
  int64_t len = static_cast<int64_t>(off.size()) - 1;
  int64_t b = start.value_or(0), e = end.value_or(len);
  if (b < 0) b = std::max<int64_t>(0, b + len);
  if (e < 0) e = std::max<int64_t>(0, e + len);
  if (e > len) e = len;
  if (b > len || b > e) return -1;
  std::string_view window = s.substr(off[b], off[e] - off[b]);
  size_t hit = reverse ? window.rfind(sub) : window.find(sub);
  if (hit == std::string_view::npos) return -1;
  size_t byte = off[b] + hit;
  return std::lower_bound(off.begin(), off.end(), byte) - off.begin();
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  size_t pos = 0;
  while ((pos = s.find(sub, pos)) != std::string_view::npos) {
    ++n;
    pos += sub.size();
  }
  return n;
}

void append_repr(std::string* out, std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  out->push_back(quote);
  size_t i = 0;
  while (i < s.size()) {
    size_t at = i;
    uint32_t c = next_cp(s, &i);
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c >= 0xDC80 && c <= 0xDCFF && i == at + 1) {
      out->append(fmt::format("\\udc{:02x}", c - 0xDC00));
    } else if (!is_printable(c)) {
      if (c < 0x100) {
        out->append(fmt::format("\\x{:02x}", c));
      } else if (c < 0x10000) {
        out->append(fmt::format("\\u{:04x}", c));
      } else {
        out->append(fmt::format("\\U{:08x}", c));
      }
    } else {
      out->append(s.substr(at, i - at));
    }
  }
  out->push_back(quote);
}

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&#34;");
        break;
      case '\'':
        out.append("&#39;");
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  bool neg = !sci.empty() && sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos)) {
    if (c != '.') digits.push_back(c);
  }
  int exp = std::atoi(std::string(sci.substr(epos + 1)).c_str());
  int decpt = exp + 1;
  int nd = static_cast<int>(digits.size());
  std::string out;
  if (neg) out.push_back('-');
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out.append("0.").append(static_cast<size_t>(-decpt), '0').append(digits);
    } else if (decpt >= nd) {
      out.append(digits).append(static_cast<size_t>(decpt - nd), '0').append(".0");
    } else {
      out.append(digits, 0, static_cast<size_t>(decpt))
          .append(".")
          .append(digits, static_cast<size_t>(decpt));
    }
  } else {
    out.append(digits, 0, 1);
    if (nd > 1) out.append(".").append(digits, 1);
    int e = decpt - 1;
    out += fmt::format("e{}{:02d}", e < 0 ? '-' : '+', e < 0 ? -e : e);
  }
  return out;
}

std::vector<int64_t> slice_indices(int64_t len, std::optional<int64_t> start,
                                   std::optional<int64_t> stop, int64_t step) {
  if (step == INT64_MIN) step = -INT64_MAX;
  int64_t lower = step < 0 ? -1 : 0;
  int64_t upper = step < 0 ? len - 1 : len;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  int64_t b = clamp(start, step < 0 ? upper : lower);
  int64_t e = clamp(stop, step < 0 ? lower : upper);
  std::vector<int64_t> idx;
  // Written so that a huge step cannot overflow.
  if (step > 0) {
    for (int64_t i = b; i < e;) {
      idx.push_back(i);
      if (e - i <= step) break;
      i += step;
    }
  } else {
    for (int64_t i = b; i > e;) {
      idx.push_back(i);
      if (i - e <= -step) break;
      i += step;
    }
  }
  return idx;
}

}  // namespace folio::jinja::py
