// Python str semantics on UTF-8 bytes: code-point length, indexing and
// slicing, whitespace (str.isspace), strip / split / splitlines / replace /
// find, case mapping, repr(), float repr and markupsafe's HTML escape.
//
// Strings are UTF-8 std::strings. Invalid bytes (never produced by a template
// source, which is validated, but possible in render inputs) count as one code
// point each and are copied through unchanged, so nothing here can fail on
// arbitrary bytes: core/utf8.h's Python surrogateescape policy both ways.
//
// Case mapping covers Latin (ASCII, Latin-1, Extended-A, Extended Additional),
// Greek, Cyrillic, Armenian and fullwidth Latin with Python's special cases
// for ß, final sigma, dotless i; other scripts are left unchanged (a known
// gap: Python maps a few more, e.g. Georgian, Cherokee, Deseret).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace folio::jinja::py {

// Decodes the code point at s[*i] and advances *i (by 1 for an invalid byte,
// whose value is returned as 0xDC00 + byte, like Python's surrogateescape).
inline uint32_t next_cp(std::string_view s, size_t* i) {
  const Utf8Char c = utf8_decode(s, *i, Utf8Invalid::kSurrogateEscape);
  *i += c.len;
  return c.cp;
}
// Appends cp; U+DC80..U+DCFF (an escaped invalid byte) as that byte, and any
// other value unchecked, as Python's str holds it.
inline void append_utf8(std::string* out, uint32_t cp) {
  utf8_append(cp, out, Utf8Unencodable::kSurrogateEscape);
}

size_t length(std::string_view s);  // code points
// Byte offset of every code point, plus s.size() at the end.
std::vector<size_t> offsets(std::string_view s);

bool is_space(uint32_t cp);      // str.isspace
bool is_linebreak(uint32_t cp);  // str.splitlines boundaries (\r\n handled by the caller)
bool is_printable(uint32_t cp);  // str.isprintable (approximate outside the tables)
bool is_alpha(uint32_t cp);
bool is_digit(uint32_t cp);
bool is_upper(uint32_t cp);  // cased and uppercase
bool is_lower(uint32_t cp);  // cased and lowercase

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split(sep, maxsplit): sep == nullopt splits on runs of whitespace.
// `sep` must not be empty (the caller raises ValueError).
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
// str.find(sub, start, end) in code points; -1 when absent.
int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse);
int64_t count(std::string_view s, std::string_view sub);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
std::string swapcase(std::string_view s);

// repr(str): quotes and escapes as CPython does.
void append_repr(std::string* out, std::string_view s);
// markupsafe.escape: & < > " '
std::string escape_html(std::string_view s);

// repr(float): shortest round-trip digits, Python's fixed / exponent choice
// ("1.0", "0.1", "1e-05", "1.5e+16", "inf", "nan").
std::string float_repr(double d);

// Python slicing indices (slice.indices): clamps start/stop for `len` items
// and the given step (non-zero). Returns the selected indices.
std::vector<int64_t> slice_indices(int64_t len, std::optional<int64_t> start,
                                   std::optional<int64_t> stop, int64_t step);

}  // namespace folio::jinja::py
