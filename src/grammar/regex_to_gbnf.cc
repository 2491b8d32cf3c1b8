// A recursive-descent parser over the pattern's code points that writes
// GBNF as it goes. Each piece reports whether it can match the empty string,
// so that an unbounded repetition of such a piece (which GBNF, being run by
// a pushdown matcher, refuses) is reported here in the pattern's own terms.
#include "grammar/regex_to_gbnf.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/utf8.h"
#include "grammar/gbnf_parser.h"

namespace folio::grammar {
namespace {

struct Piece {
  std::string gbnf;
  bool nullable = false;
};

CharSet digit_set() {
  return CharSet::range('0', '9');
}
CharSet word_set() {
  return CharSet({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
CharSet space_set() {
  return CharSet({{'\t', '\r'},
                  {' ', ' '},
                  {0xA0, 0xA0},
                  {0x1680, 0x1680},
                  {0x2000, 0x200A},
                  {0x2028, 0x2029},
                  {0x202F, 0x202F},
                  {0x205F, 0x205F},
                  {0x3000, 0x3000},
                  {0xFEFF, 0xFEFF}});
}
CharSet line_terminators() {
  return CharSet({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, const CharRenderer& render)
      : pattern_(pattern), render_(render) {}

  Result<std::string> run() {
    // Decode once; offsets in errors are code point indexes.
    Utf8State state;
    for (char c : pattern_) {
      const Utf8Result r = utf8_step(&state, static_cast<uint8_t>(c));
      if (r.step == Utf8Step::kInvalid) return invalid_argument("pattern: invalid UTF-8");
      if (r.step == Utf8Step::kComplete) cps_.push_back(r.lo);
    }
    if (!state.idle()) return invalid_argument("pattern: invalid UTF-8");
    std::optional<std::string> out = parse_top();
    if (!out) return error_;
    return *out;
  }

 private:
  bool eof() const { return pos_ >= cps_.size(); }
  uint32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0xFFFFFFFF;
  }

  template <typename... Args>
  std::nullopt_t fail(size_t at, fmt::format_string<Args...> f, Args&&... args) {
    if (error_.ok()) {
      error_ = invalid_argument("pattern /{}/ at character {}: {}", pattern_, at + 1,
                                fmt::format(f, std::forward<Args>(args)...));
    }
    return std::nullopt;
  }

  std::string render(const CharSet& set) { return "( " + render_(set) + " )"; }

  // Top level: alternatives, each optionally anchored.
  std::optional<std::string> parse_top() {
    const std::string any = render(CharSet::any()) + "*";
    std::vector<std::string> alts;
    while (true) {
      const bool anchored_start = peek() == '^';
      if (anchored_start) ++pos_;
      std::optional<Piece> body = parse_sequence(true);
      if (!body) return std::nullopt;
      const bool anchored_end = peek() == '$';
      if (anchored_end) ++pos_;
      std::string alt;
      if (!anchored_start) alt = any;
      if (!body->gbnf.empty()) alt += (alt.empty() ? "" : " ") + body->gbnf;
      if (!anchored_end) alt += (alt.empty() ? "" : " ") + any;
      alts.push_back(alt.empty() ? "\"\"" : alt);
      if (peek() == '|') {
        ++pos_;
        continue;
      }
      if (eof()) break;
      if (peek() == ')') return fail(pos_, "unmatched ')'");
      return fail(pos_, "unexpected character");
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " | " : " ") + alts[i];
    return out + " )";
  }

  // Alternatives inside a group.
  std::optional<Piece> parse_alternatives() {
    std::vector<Piece> alts;
    while (true) {
      std::optional<Piece> seq = parse_sequence(false);
      if (!seq) return std::nullopt;
      alts.push_back(std::move(*seq));
      if (peek() != '|') break;
      ++pos_;
    }
    Piece out{"(", false};
    for (size_t i = 0; i < alts.size(); ++i) {
      out.gbnf += (i > 0 ? " | " : " ") + alts[i].gbnf;
      out.nullable = out.nullable || alts[i].nullable;
    }
    out.gbnf += " )";
    return out;
  }

  std::optional<Piece> parse_sequence(bool top) {
    Piece seq{"", true};
    while (!eof()) {
      const uint32_t c = peek();
      if (c == '|' || c == ')') break;
      if (c == '$') {
        if (top && (pos_ + 1 == cps_.size() || cps_[pos_ + 1] == '|')) break;
        return fail(pos_,
                    "'$' is supported only at the end of the pattern or of a top-level "
                    "alternative");
      }
      if (c == '^') {
        return fail(pos_,
                    "'^' is supported only at the start of the pattern or of a top-level "
                    "alternative");
      }
      const size_t at = pos_;
      std::optional<Piece> atom = parse_atom();
      if (!atom) return std::nullopt;
      std::optional<Piece> item = parse_quantifier(at, std::move(*atom));
      if (!item) return std::nullopt;
      if (!item->gbnf.empty()) seq.gbnf += (seq.gbnf.empty() ? "" : " ") + item->gbnf;
      seq.nullable = seq.nullable && item->nullable;
    }
    return seq;
  }

  // {n}, {n,}, {n,m} at pos_ ('{'): the bounds, or nullopt if this is not a
  // quantifier (then '{' is a literal, as in ECMAScript's web grammar).
  struct Bounds {
    uint64_t min = 0;
    std::optional<uint64_t> max;
    size_t length = 0;  // code points including the braces
  };
  std::optional<Bounds> read_bounds() const {
    size_t p = pos_ + 1;
    auto number = [&](uint64_t* v) {
      const size_t start = p;
      *v = 0;
      while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
        *v = std::min<uint64_t>(*v * 10 + (cps_[p] - '0'), uint64_t{1} << 40);
        ++p;
      }
      return p > start;
    };
    Bounds b;
    if (!number(&b.min)) return std::nullopt;
    if (p < cps_.size() && cps_[p] == ',') {
      ++p;
      uint64_t m = 0;
      if (number(&m)) b.max = m;
    } else {
      b.max = b.min;
    }
    if (p >= cps_.size() || cps_[p] != '}') return std::nullopt;
    b.length = p + 1 - pos_;
    return b;
  }

  std::optional<Piece> parse_quantifier(size_t at, Piece atom) {
    const uint32_t c = peek();
    uint64_t min = 0;
    std::optional<uint64_t> max;
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      ++pos_;
      min = 1;
    } else if (c == '?') {
      ++pos_;
      max = 1;
    } else if (c == '{' && read_bounds()) {
      const Bounds b = *read_bounds();
      pos_ += b.length;
      min = b.min;
      max = b.max;
      if (max && *max < min) return fail(at, "quantifier {{{},{}}} has max below min", min, *max);
      if (min > kMaxRepetitionBound || (max && *max > kMaxRepetitionBound)) {
        return fail(at, "quantifier bound above {}", kMaxRepetitionBound);
      }
    } else {
      return atom;
    }
    if (peek() == '?') ++pos_;  // lazy: the same set of strings
    if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && read_bounds())) {
      return fail(pos_, "nothing to repeat");
    }
    if (!max && atom.nullable) {
      return fail(at,
                  "unbounded repetition of a part that can match the empty string is not "
                  "supported");
    }
    Piece out;
    out.nullable = atom.nullable || min == 0;
    const std::string x = "(" + atom.gbnf + ")";
    if (!max) {
      out.gbnf = min == 0 ? x + "*" : min == 1 ? x + "+" : fmt::format("{}{{{},}}", x, min);
    } else if (*max == 0) {
      out.gbnf = "";  // x{0}: nothing
    } else if (min == 0 && *max == 1) {
      out.gbnf = x + "?";
    } else if (min == *max) {
      out.gbnf = fmt::format("{}{{{}}}", x, min);
    } else {
      out.gbnf = fmt::format("{}{{{},{}}}", x, min, *max);
    }
    return out;
  }

  std::optional<Piece> parse_atom() {
    const size_t at = pos_;
    const uint32_t c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        if (peek(1) == ':') {
          pos_ += 2;
        } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
          pos_ += 2;  // named group: a plain group here
          while (!eof() && peek() != '>') ++pos_;
          if (eof()) return fail(at, "unterminated group name");
          ++pos_;
        } else {
          return fail(at, "lookaround and other (?...) groups are not supported");
        }
      }
      if (++depth_ > kMaxGroupNesting) return fail(at, "groups nested too deeply");
      std::optional<Piece> inner = parse_alternatives();
      if (!inner) return std::nullopt;
      --depth_;
      if (peek() != ')') return fail(at, "'(' is never closed");
      ++pos_;
      return inner;
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return Piece{render(CharSet::any().minus(line_terminators())), false};
    }
    if (c == '\\') {
      std::optional<CharSet> set = parse_escape(false);
      if (!set) return std::nullopt;
      return Piece{render(*set), false};
    }
    if (c == '*' || c == '+' || c == '?' || (c == '{' && read_bounds())) {
      return fail(at, "nothing to repeat");
    }
    ++pos_;
    return Piece{render(CharSet::single(c)), false};
  }

  std::optional<uint32_t> read_hex(size_t digits, size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      const uint32_t h = peek();
      int d = -1;
      if (h >= '0' && h <= '9') d = static_cast<int>(h - '0');
      if (h >= 'a' && h <= 'f') d = static_cast<int>(h - 'a' + 10);
      if (h >= 'A' && h <= 'F') d = static_cast<int>(h - 'A' + 10);
      if (d < 0) return fail(at, "escape needs {} hex digits", digits);
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  // After '\\' (at pos_): the set of characters the escape stands for.
  // In a class, \b is a backspace; outside it is a word boundary.
  std::optional<CharSet> parse_escape(bool in_class) {
    const size_t at = pos_++;
    if (eof()) return fail(at, "'\\' at the end of the pattern");
    const uint32_t e = peek();
    ++pos_;
    switch (e) {
      case 'd':
        return digit_set();
      case 'D':
        return digit_set().complement();
      case 'w':
        return word_set();
      case 'W':
        return word_set().complement();
      case 's':
        return space_set();
      case 'S':
        return space_set().complement();
      case 'n':
        return CharSet::single('\n');
      case 't':
        return CharSet::single('\t');
      case 'r':
        return CharSet::single('\r');
      case 'f':
        return CharSet::single('\f');
      case 'v':
        return CharSet::single('\v');
      case 'b':
        if (in_class) return CharSet::single('\b');
        return fail(at, "word boundaries (\\b) are not supported");
      case 'B':
        return fail(at, "word boundaries (\\B) are not supported");
      case '0':
        if (peek() >= '0' && peek() <= '9') return fail(at, "octal escapes are not supported");
        return CharSet::single(0);
      case 'x': {
        std::optional<uint32_t> v = read_hex(2, at);
        if (!v) return std::nullopt;
        return CharSet::single(*v);
      }
      case 'u': {
        if (peek() == '{') {
          ++pos_;
          uint32_t v = 0;
          size_t n = 0;
          while (!eof() && peek() != '}') {
            std::optional<uint32_t> d = read_hex(1, at);
            if (!d) return std::nullopt;
            v = v * 16 + *d;
            if (++n > 6 || v > kMaxCodePoint) return fail(at, "\\u{{...}} beyond U+10FFFF");
          }
          if (eof() || n == 0) return fail(at, "bad \\u{{...}} escape");
          ++pos_;
          return CharSet::single(v);
        }
        std::optional<uint32_t> v = read_hex(4, at);
        if (!v) return std::nullopt;
        // A surrogate pair written as two escapes is one character.
        if (*v >= 0xD800 && *v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          const size_t save = pos_;
          pos_ += 2;
          std::optional<uint32_t> low = read_hex(4, at);
          if (low && *low >= 0xDC00 && *low <= 0xDFFF) {
            return CharSet::single(0x10000 + ((*v - 0xD800) << 10) + (*low - 0xDC00));
          }
          error_ = Status();
          pos_ = save;
        }
        return CharSet::single(*v);
      }
      case 'c':
        return fail(at, "control escapes (\\c) are not supported");
      case 'p':
      case 'P':
        return fail(at, "Unicode property escapes are not supported");
      case 'k':
        return fail(at, "named backreferences are not supported");
      default:
        break;
    }
    if (e >= '1' && e <= '9') return fail(at, "backreferences are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
      return fail(at, "unknown escape '\\{}'", static_cast<char>(e));
    }
    return CharSet::single(e);  // escaped punctuation (or any other character) is itself
  }

  std::optional<Piece> parse_class() {
    const size_t open = pos_++;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CharSet set;
    while (true) {
      if (eof()) return fail(open, "unterminated character class");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      const size_t at = pos_;
      std::optional<CharSet> lo = class_atom();
      if (!lo) return std::nullopt;
      if (peek() == '-' && peek(1) != ']' && peek(1) != 0xFFFFFFFF) {
        ++pos_;
        std::optional<CharSet> hi = class_atom();
        if (!hi) return std::nullopt;
        const bool single = lo->ranges().size() == 1 && lo->ranges()[0].lo == lo->ranges()[0].hi &&
                            hi->ranges().size() == 1 && hi->ranges()[0].lo == hi->ranges()[0].hi;
        if (!single) return fail(at, "a class escape cannot bound a range");
        const uint32_t a = lo->ranges()[0].lo, b = hi->ranges()[0].lo;
        if (b < a) return fail(at, "range out of order");
        set = set.united(CharSet::range(a, b));
      } else {
        set = set.united(*lo);
      }
    }
    if (negated) set = set.complement();
    return Piece{render(set), false};
  }

  std::optional<CharSet> class_atom() {
    if (peek() == '\\') return parse_escape(true);
    const uint32_t c = peek();
    ++pos_;
    return CharSet::single(c);
  }

  std::string_view pattern_;
  const CharRenderer& render_;
  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  int depth_ = 0;
  Status error_;
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern, const CharRenderer& render) {
  return RegexParser(pattern, render).run();
}

}  // namespace folio::grammar
