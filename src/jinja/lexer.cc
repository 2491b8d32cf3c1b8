#include "jinja/lexer.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "jinja/error.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {

[[noreturn]] void lex_fail(std::string_view src, size_t pos, std::string message) {
  JinjaError e(ErrorKind::kSyntax, std::move(message));
  int line, col;
  offset_to_position(src, static_cast<uint32_t>(pos), &line, &col);
  e.set_position(line, col);
  throw e;
}

bool is_ascii_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

// Length of a Python-whitespace run at s[i].
size_t space_run(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size()) {
    size_t next = j;
    if (!py::is_space(py::next_cp(s, &next))) break;
    j = next;
  }
  return j - i;
}

// Python's str.rstrip() (unicode whitespace).
std::string_view rstrip_view(std::string_view s) {
  std::vector<size_t> off = py::offsets(s);
  size_t k = off.size() - 1;
  while (k > 0) {
    size_t at = off[k - 1];
    if (!py::is_space(py::next_cp(s, &at))) break;
    --k;
  }
  return s.substr(0, off[k]);
}

// True if s is non-empty and all Python whitespace.
bool all_space(std::string_view s) {
  return !s.empty() && space_run(s, 0) == s.size();
}

// Digits with single `_` separators: (\d+_)*\d+ ; returns the length or 0.
size_t digit_run(std::string_view s, size_t i) {
  size_t j = i;
  if (j >= s.size() || !is_ascii_digit(s[j])) return 0;
  while (j < s.size() && is_ascii_digit(s[j])) ++j;
  while (j + 1 < s.size() && s[j] == '_' && is_ascii_digit(s[j + 1])) {
    ++j;
    while (j < s.size() && is_ascii_digit(s[j])) ++j;
  }
  return j - i;
}

std::string strip_underscores(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out.push_back(c);
  }
  return out;
}

// float_re: (?<!\.)(\d+_)*\d+((\.(\d+_)*\d+)?e[+\-]?(\d+_)*\d+|\.(\d+_)*\d+)
size_t match_float(std::string_view s, size_t i) {
  if (i > 0 && s[i - 1] == '.') return 0;
  size_t n = digit_run(s, i);
  if (n == 0) return 0;
  size_t j = i + n;
  size_t frac = 0;
  if (j < s.size() && s[j] == '.') frac = digit_run(s, j + 1);
  size_t after_frac = frac ? j + 1 + frac : j;
  // exponent (fraction optional)
  if (after_frac < s.size() && (s[after_frac] == 'e' || s[after_frac] == 'E')) {
    size_t k = after_frac + 1;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    size_t e = digit_run(s, k);
    if (e) return k + e - i;
  }
  if (frac) return after_frac - i;
  return 0;
}

// integer_re (case-insensitive): 0b(_?[01])+ | 0o(_?[0-7])+ | 0x(_?[\da-f])+ | [1-9](_?\d)* |
// 0(_?0)*
size_t match_integer(std::string_view s, size_t i, int* base) {
  auto run = [&](size_t j, auto ok) {
    size_t start = j;
    while (j < s.size()) {
      if (ok(s[j])) {
        ++j;
      } else if (s[j] == '_' && j + 1 < s.size() && ok(s[j + 1])) {
        j += 2;
      } else {
        break;
      }
    }
    return j - start;
  };
  if (i >= s.size() || !is_ascii_digit(s[i])) return 0;
  if (s[i] == '0' && i + 1 < s.size()) {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
    size_t n = 0;
    if (p == 'b') n = run(i + 2, [](char c) { return c == '0' || c == '1'; }), *base = 2;
    if (p == 'o') n = run(i + 2, [](char c) { return c >= '0' && c <= '7'; }), *base = 8;
    if (p == 'x') n = run(i + 2, is_hex), *base = 16;
    if (n) return 2 + n;
  }
  *base = 10;
  if (s[i] == '0') return 1 + run(i + 1, [](char c) { return c == '0'; });
  return 1 + run(i + 1, is_ascii_digit);
}

bool is_name_start(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (c >= 0x80 && py::is_alpha(c));
}
bool is_name_char(uint32_t c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

// Python: value.encode("ascii", "backslashreplace").decode("unicode-escape").
std::string decode_string_literal(std::string_view src, size_t pos, std::string_view body) {
  std::string ascii;
  ascii.reserve(body.size());
  size_t i = 0;
  while (i < body.size()) {
    size_t at = i;
    uint32_t c = py::next_cp(body, &i);
    if (c < 0x80) {
      ascii.push_back(static_cast<char>(c));
    } else if (c >= 0xDC80 && c <= 0xDCFF && i == at + 1) {
      lex_fail(src, pos, "invalid UTF-8 in string literal");
    } else if (c < 0x100) {
      ascii += fmt::format("\\x{:02x}", c);
    } else if (c < 0x10000) {
      ascii += fmt::format("\\u{:04x}", c);
    } else {
      ascii += fmt::format("\\U{:08x}", c);
    }
  }
  std::string out;
  out.reserve(ascii.size());
  auto hex_escape = [&](size_t& j, int digits, const char* what) {
    uint32_t v = 0;
    for (int d = 0; d < digits; ++d) {
      if (j >= ascii.size() || !is_hex(ascii[j]))
        lex_fail(src, pos, fmt::format("truncated {} escape", what));
      char h = ascii[j++];
      v = v * 16 + static_cast<uint32_t>(is_ascii_digit(h) ? h - '0' : std::tolower(h) - 'a' + 10);
    }
    return v;
  };
  size_t j = 0;
  while (j < ascii.size()) {
    char c = ascii[j++];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (j >= ascii.size()) lex_fail(src, pos, "\\ at end of string");
    char e = ascii[j++];
    switch (e) {
      case '\n':
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
        py::append_utf8(&out, hex_escape(j, 2, "\\xXX"));
        break;
      case 'u':
        py::append_utf8(&out, hex_escape(j, 4, "\\uXXXX"));
        break;
      case 'U': {
        uint32_t v = hex_escape(j, 8, "\\UXXXXXXXX");
        if (v > 0x10FFFF) lex_fail(src, pos, "illegal Unicode character");
        py::append_utf8(&out, v);
        break;
      }
      case 'N':
        lex_fail(src, pos, "\\N{...} escapes are not supported");
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = static_cast<uint32_t>(e - '0');
          for (int d = 0; d < 2 && j < ascii.size() && ascii[j] >= '0' && ascii[j] <= '7'; ++d) {
            v = v * 8 + static_cast<uint32_t>(ascii[j++] - '0');
          }
          py::append_utf8(&out, v);
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexerOptions& opts) : src_(src), opts_(opts) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      // root state: data up to the next tag.
      size_t tag = find_tag(pos_);
      if (tag == std::string_view::npos) {
        emit_data(pos_, src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      char kind = src_[tag + 1];  // '{', '%', '#'
      size_t after = tag + 2;
      bool raw = kind == '%' && match_raw_begin(tag) > 0;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after];
      std::string_view text = src_.substr(pos_, tag - pos_);
      text = apply_lstrip(text, sign, kind != '{', line_starting);
      emit_data(pos_, text);
      if (raw) {
        pos_ = tag + match_raw_begin(tag);
        line_starting = lex_raw();
        continue;
      }
      pos_ = after + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = lex_comment(tag);
      } else {
        line_starting = lex_tag(kind == '{', tag);
      }
    }
    Token eof;
    eof.type = TokenType::kEof;
    eof.pos = static_cast<uint32_t>(src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    size_t i = from;
    while ((i = src_.find('{', i)) != std::string_view::npos) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
      ++i;
    }
    return std::string_view::npos;
  }

  // `{%(-|+|)\s*raw\s*(-%}\s*|%})` at i: the match length, or 0.
  size_t match_raw_begin(size_t i) const {
    size_t j = i + 2;
    if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) ++j;
    j += space_run(src_, j);
    if (src_.substr(j, 3) != "raw") return 0;
    j += 3;
    j += space_run(src_, j);
    if (src_.substr(j, 3) == "-%}") return j + 3 + space_run(src_, j + 3) - i;
    if (src_.substr(j, 2) == "%}") return j + 2 - i;
    return 0;
  }

  std::string_view apply_lstrip(std::string_view text, char sign, bool block_like,
                                bool line_starting) const {
    if (sign == '-') return rstrip_view(text);
    if (sign != '+' && opts_.lstrip_blocks && block_like) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos)))
        return text.substr(0, l_pos);
    }
    return text;
  }

  void emit_data(size_t pos, std::string_view text) {
    if (text.empty()) return;
    Token t;
    t.type = TokenType::kData;
    t.pos = static_cast<uint32_t>(pos);
    t.value = std::string(text);
    tokens_.push_back(std::move(t));
  }

  void emit(TokenType type, size_t pos, std::string value = {}) {
    Token t;
    t.type = type;
    t.pos = static_cast<uint32_t>(pos);
    t.value = std::move(value);
    tokens_.push_back(std::move(t));
  }

  // After the end of a block / comment tag: `+%}` | `-%}\s*` | `%}\n?`.
  // Returns the consumed length (from the sign or the end marker).
  size_t block_end_len(size_t i, char closer) const {
    auto closes = [&](size_t j) {
      return j + 1 < src_.size() && src_[j] == closer && src_[j + 1] == '}';
    };
    if (src_[i] == '+' && closes(i + 1)) return 3;
    if (src_[i] == '-' && closes(i + 1)) return 3 + space_run(src_, i + 3);
    if (closes(i)) {
      size_t n = 2;
      if (opts_.trim_blocks && i + 2 < src_.size() && src_[i + 2] == '\n') ++n;
      return n;
    }
    return 0;
  }

  bool lex_comment(size_t tag) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string_view::npos) lex_fail(src_, tag, "Missing end of comment tag");
    size_t start = end;
    if (end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+')) start = end - 1;
    size_t n = block_end_len(start, '#');
    pos_ = start + n;
    return src_[pos_ - 1] == '\n';
  }

  bool lex_raw() {
    // (.*?)({%(-|+|)\s*endraw\s*(+%}|-%}\s*|%}\n?)) with lstrip on the text.
    size_t i = pos_;
    while (true) {
      size_t tag = src_.find("{%", i);
      if (tag == std::string_view::npos) lex_fail(src_, pos_, "Missing end of raw directive");
      size_t j = tag + 2;
      char sign = 0;
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) sign = src_[j++];
      j += space_run(src_, j);
      if (src_.substr(j, 6) == "endraw") {
        size_t k = j + 6;
        k += space_run(src_, k);
        size_t n = k < src_.size() ? block_end_len(k, '%') : 0;
        if (n) {
          // jinja2 sets line_starting from the previous match (the raw begin tag).
          bool line_starting = src_[pos_ - 1] == '\n';
          std::string_view text =
              apply_lstrip(src_.substr(pos_, tag - pos_), sign, true, line_starting);
          emit_data(pos_, text);
          pos_ = k + n;
          return src_[pos_ - 1] == '\n';
        }
      }
      i = tag + 2;
    }
  }

  // Inside {{ }} or {% %}. Returns line_starting for the next data.
  bool lex_tag(bool variable, size_t tag) {
    emit(variable ? TokenType::kVarBegin : TokenType::kBlockBegin, tag);
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) return false;  // the parser reports the missing end
      if (balance.empty()) {
        size_t n = 0;
        if (variable) {
          if (src_.substr(pos_, 3) == "-}}") {
            n = 3 + space_run(src_, pos_ + 3);
          } else if (src_.substr(pos_, 2) == "}}") {
            n = 2;
          }
        } else {
          n = block_end_len(pos_, '%');
        }
        if (n) {
          emit(variable ? TokenType::kVarEnd : TokenType::kBlockEnd, pos_);
          pos_ += n;
          return src_[pos_ - 1] == '\n';
        }
      }
      size_t ws = space_run(src_, pos_);
      if (ws) {
        pos_ += ws;
        continue;
      }
      if (size_t n = match_float(src_, pos_)) {
        Token t;
        t.type = TokenType::kFloat;
        t.pos = static_cast<uint32_t>(pos_);
        std::string text = strip_underscores(src_.substr(pos_, n));
        t.float_value = std::strtod(text.c_str(), nullptr);
        t.value = std::move(text);
        tokens_.push_back(std::move(t));
        pos_ += n;
        continue;
      }
      int base = 10;
      if (size_t n = match_integer(src_, pos_, &base)) {
        Token t;
        t.type = TokenType::kInteger;
        t.pos = static_cast<uint32_t>(pos_);
        std::string text = strip_underscores(src_.substr(pos_, n));
        std::string digits = base == 10 ? text : text.substr(2);
        errno = 0;
        char* end = nullptr;
        unsigned long long v = std::strtoull(digits.c_str(), &end, base);
        if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
          lex_fail(
              src_, pos_,
              fmt::format("integer literal {} is out of range (folio uses 64-bit integers)", text));
        }
        t.int_value = static_cast<int64_t>(v);
        t.value = std::move(text);
        tokens_.push_back(std::move(t));
        pos_ += n;
        continue;
      }
      size_t probe = pos_;
      uint32_t c = py::next_cp(src_, &probe);
      if (is_name_start(c)) {
        size_t j = probe;
        while (j < src_.size()) {
          size_t next = j;
          if (!is_name_char(py::next_cp(src_, &next))) break;
          j = next;
        }
        emit(TokenType::kName, pos_, std::string(src_.substr(pos_, j - pos_)));
        pos_ = j;
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t j = pos_ + 1;
        while (j < src_.size() && src_[j] != static_cast<char>(c)) {
          j += src_[j] == '\\' ? 2 : 1;
        }
        if (j >= src_.size())
          lex_fail(src_, pos_,
                   fmt::format("unexpected char {} at {}", c == '\'' ? "\"'\"" : "'\"'", pos_));
        Token t;
        t.type = TokenType::kString;
        t.pos = static_cast<uint32_t>(pos_);
        t.value = decode_string_literal(src_, pos_, src_.substr(pos_ + 1, j - pos_ - 1));
        tokens_.push_back(std::move(t));
        pos_ = j + 1;
        continue;
      }
      static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
      std::string op;
      for (std::string_view two : kTwo) {
        if (src_.substr(pos_, 2) == two) op = std::string(two);
      }
      if (op.empty() &&
          std::string_view("+-/*%~[](){}><=.:|,;").find(static_cast<char>(c)) !=
              std::string_view::npos &&
          c < 0x80) {
        op = std::string(1, static_cast<char>(c));
      }
      if (op.empty()) {
        std::string ch;
        py::append_repr(&ch, src_.substr(pos_, probe - pos_));
        lex_fail(src_, pos_, fmt::format("unexpected char {} at {}", ch, pos_));
      }
      if (op == "(" || op == "[" || op == "{") {
        balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty()) lex_fail(src_, pos_, fmt::format("unexpected '{}'", op));
        char expected = balance.back();
        balance.pop_back();
        if (expected != op[0])
          lex_fail(src_, pos_, fmt::format("unexpected '{}', expected '{}'", op, expected));
      }
      emit(TokenType::kOperator, pos_, op);
      pos_ += op.size();
    }
  }

  std::string_view src_;
  LexerOptions opts_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_source(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(c);
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

void offset_to_position(std::string_view source, uint32_t pos, int* line, int* column) {
  int l = 1;
  size_t line_start = 0;
  size_t end = std::min<size_t>(pos, source.size());
  for (size_t i = 0; i < end; ++i) {
    if (source[i] == '\n') {
      ++l;
      line_start = i + 1;
    }
  }
  *line = l;
  *column = static_cast<int>(py::length(source.substr(line_start, end - line_start))) + 1;
}

}  // namespace folio::jinja
