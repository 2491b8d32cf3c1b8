// A recursive-descent parser over the grammar text, one pass: rule
// references create placeholder rules that a later definition fills;
// groups and repetitions become generated rules as they are read (see
// grammar.h for the rewrites). Errors carry the byte offset where they were
// found; line:column is computed once, when the error is returned.
#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/utf8.h"

namespace folio::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A parse error: message and where (byte offset into the text).
struct ParseError {
  size_t offset = 0;
  std::string message;
};

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  Result<Grammar> run() {
    if (!parse_all()) return validation_error_.ok() ? to_status(error_) : validation_error_;
    return std::move(g_);
  }

 private:
  // ---- errors and positions ----

  bool fail(size_t offset, std::string message) {
    if (!failed_) {
      failed_ = true;
      error_ = {offset, std::move(message)};
    }
    return false;
  }

  // Offsets are asked for mostly in increasing order (rules are created as
  // the text is read), so the scan continues from the last answer.
  SourceLocation location(size_t offset) {
    offset = std::min(offset, src_.size());
    if (offset < loc_offset_) {
      loc_offset_ = 0;
      loc_ = {1, 1};
    }
    for (; loc_offset_ < offset; ++loc_offset_) {
      const auto c = static_cast<unsigned char>(src_[loc_offset_]);
      if (c == '\n') {
        ++loc_.line;
        loc_.column = 1;
      } else if ((c & 0xC0) != 0x80) {  // count code points, not bytes
        ++loc_.column;
      }
    }
    return loc_;
  }

  Status to_status(const ParseError& e) {
    return invalid_argument("grammar: {}: {}", location(e.offset).to_string(), e.message);
  }

  // ---- lexing ----

  bool eof() const { return pos_ >= src_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }

  // Skips blanks and comments; newlines too when `newlines` is true. A
  // comment runs to the end of its line (the newline itself is not part of
  // it).
  void skip_space(bool newlines) {
    while (!eof()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!eof() && src_[pos_] != '\n') ++pos_;
      } else if (c == '\n' && newlines) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view read_name() {
    const size_t start = pos_;
    while (!eof() && is_name_char(src_[pos_])) ++pos_;
    return src_.substr(start, pos_ - start);
  }

  // After a name: is `::=` next (on this line)?
  bool definition_follows() const {
    size_t p = pos_;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\r')) ++p;
    return src_.substr(p, 3) == "::=";
  }

  // At `name ::=`?
  bool at_definition() const {
    size_t p = pos_;
    while (p < src_.size() && is_name_char(src_[p])) ++p;
    if (p == pos_) return false;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\r')) ++p;
    return src_.substr(p, 3) == "::=";
  }

  // Exactly `digits` hex digits.
  std::optional<uint32_t> read_hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) {
        fail(at, fmt::format("escape needs {} hex digits", digits));
        return std::nullopt;
      }
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > kMaxCodePoint) {
      fail(at, fmt::format("escape U+{:X} is beyond U+10FFFF", v));
      return std::nullopt;
    }
    return v;
  }

  // One character of a literal or class: an escape or a UTF-8 character.
  std::optional<uint32_t> read_char() {
    const size_t at = pos_;
    if (peek() == '\\') {
      ++pos_;
      const char e = peek();
      if (eof()) {
        fail(at, "unfinished escape at the end of the grammar");
        return std::nullopt;
      }
      ++pos_;
      switch (e) {
        case 'n':
          return '\n';
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case '\\':
        case '"':
        case '\'':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
          return static_cast<uint32_t>(e);
        case 'x':
          return read_hex(2, at);
        case 'u':
          return read_hex(4, at);
        case 'U':
          return read_hex(8, at);
        default:
          break;
      }
      fail(at, fmt::format("unknown escape '\\{}'", printable(e)));
      return std::nullopt;
    }
    Utf8State state;
    while (true) {
      if (eof()) {
        fail(at, "invalid UTF-8 at the end of the grammar");
        return std::nullopt;
      }
      const Utf8Result r = utf8_step(&state, static_cast<uint8_t>(src_[pos_]));
      if (r.step == Utf8Step::kInvalid) {
        fail(pos_, "invalid UTF-8 in the grammar text");
        return std::nullopt;
      }
      ++pos_;
      if (r.step == Utf8Step::kComplete) return r.lo;
    }
  }

  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string(1, c);
    return fmt::format("\\x{:02X}", u);
  }

  // ---- grammar building ----

  uint32_t char_set_id(const CharSet& set) {
    auto [it, inserted] = set_ids_.try_emplace(set, static_cast<uint32_t>(g_.char_sets.size()));
    if (inserted) g_.char_sets.push_back(set);
    return it->second;
  }

  // A named rule (created undefined at its first reference).
  uint32_t named_rule(std::string_view name, size_t at) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    const auto id = static_cast<uint32_t>(g_.rules.size());
    g_.rules.push_back({std::string(name), RuleOrigin::kNamed, location(at), {}});
    defined_.push_back(false);
    first_use_.push_back(at);
    names_.emplace(std::string(name), id);
    return id;
  }

  uint32_t generated_rule(RuleOrigin origin, size_t at, std::vector<GrammarSequence> alts) {
    const auto id = static_cast<uint32_t>(g_.rules.size());
    std::string name = fmt::format("{}-{}", g_.rules[current_rule_].name, ++generated_count_);
    g_.rules.push_back({std::move(name), origin, location(at), std::move(alts)});
    defined_.push_back(true);
    first_use_.push_back(at);
    return id;
  }

  bool count_symbols(size_t n, size_t at) {
    symbols_ += n;
    if (symbols_ > kMaxGrammarSymbols) {
      return fail(at, fmt::format("grammar too large (over {} symbols after expanding "
                                  "repetitions)",
                                  kMaxGrammarSymbols));
    }
    return true;
  }

  // ---- parsing ----

  bool parse_all() {
    skip_space(true);
    while (!eof()) {
      if (!parse_rule()) return false;
      skip_space(true);
    }
    // Every referenced rule must be defined.
    for (size_t i = 0; i < g_.rules.size(); ++i) {
      if (!defined_[i]) return fail(first_use_[i], "undefined rule '" + g_.rules[i].name + "'");
    }
    auto root = names_.find(std::string_view("root"));
    if (root == names_.end()) return fail(src_.size(), "the grammar has no rule named 'root'");
    g_.root = root->second;
    make_generated_names_unique();
    Status s = validate_grammar(g_);
    if (!s.ok()) {
      // validate_grammar names the location itself.
      failed_ = true;
      validation_error_ = s;
      return false;
    }
    return true;
  }

  // Generated names ("root-3") may clash with a rule the user wrote.
  void make_generated_names_unique() {
    for (GrammarRule& r : g_.rules) {
      if (r.origin == RuleOrigin::kNamed) continue;
      while (names_.count(r.name) != 0) r.name += "-x";
      names_.emplace(r.name, 0);  // reserve (the index is not used again)
    }
  }

  bool parse_rule() {
    const size_t start = pos_;
    const std::string_view name = read_name();
    if (name.empty()) {
      if (peek() == '|') return fail(pos_, "'|' outside a rule");
      return fail(pos_, fmt::format("expected a rule name, found '{}'", printable(peek())));
    }
    skip_space(false);
    if (src_.substr(pos_, 3) != "::=") {
      return fail(pos_, fmt::format("expected '::=' after the rule name '{}' (a rule continues on "
                                    "the next line only inside parentheses or after '|')",
                                    name));
    }
    pos_ += 3;
    const uint32_t id = named_rule(name, start);
    if (defined_[id]) {
      return fail(start, fmt::format("rule '{}' is defined twice (first at {})", name,
                                     g_.rules[id].where.to_string()));
    }
    defined_[id] = true;
    g_.rules[id].where = location(start);
    current_rule_ = id;
    generated_count_ = 0;
    const size_t body = pos_;
    skip_space(true);
    std::vector<GrammarSequence> alts;
    if (at_definition() && src_.substr(body, pos_ - body).find('\n') != std::string_view::npos) {
      g_.rules[id].alternatives = {{}};  // `name ::=` alone on its line: empty
      pos_ = body;
      return true;
    }
    if (!parse_alternatives(false, &alts)) return false;
    g_.rules[id].alternatives = std::move(alts);
    skip_space(false);
    if (!eof() && peek() != '\n') {
      if (peek() == ')') return fail(pos_, "unexpected ')' (no group is open)");
      return fail(pos_, fmt::format("unexpected '{}'", printable(peek())));
    }
    return true;
  }

  bool parse_alternatives(bool nested, std::vector<GrammarSequence>* alts) {
    while (true) {
      GrammarSequence seq;
      if (!parse_sequence(nested, &seq)) return false;
      alts->push_back(std::move(seq));
      skip_space(nested);
      if (peek() == '|') {
        ++pos_;
        const size_t before = pos_;
        skip_space(true);
        // `a ::= x |` at the end of a line, then the next rule: the last
        // alternative is empty.
        if (!nested && at_definition() &&
            src_.substr(before, pos_ - before).find('\n') != std::string_view::npos) {
          alts->emplace_back();
          pos_ = before;  // the rule ends at that newline
          return true;
        }
        continue;
      }
      if (!nested) {
        // A following line that starts with '|' continues the rule.
        const size_t save = pos_;
        skip_space(true);
        if (peek() == '|') {
          ++pos_;
          skip_space(true);
          continue;
        }
        pos_ = save;
      }
      return true;
    }
  }

  bool parse_sequence(bool nested, GrammarSequence* seq) {
    while (true) {
      skip_space(nested);
      const size_t at = pos_;
      const char c = peek();
      GrammarSequence item;
      if (eof()) {
        return true;
      } else if (c == '"') {
        if (!parse_literal(&item)) return false;
      } else if (c == '[') {
        if (!parse_class(&item)) return false;
      } else if (c == '.') {
        ++pos_;
        item.push_back(GrammarSymbol::chars(char_set_id(CharSet::any())));
      } else if (c == '(') {
        if (!parse_group(&item)) return false;
      } else if (is_name_char(c)) {
        const std::string_view name = read_name();
        if (definition_follows()) {
          if (nested) return fail(open_groups_.back(), "'(' is never closed");
          return fail(at, fmt::format("the definition of '{}' must start on a new line", name));
        }
        item.push_back(GrammarSymbol::rule(named_rule(name, at)));
      } else if (c == '<' || c == '!') {
        return fail(at, "token references (<...>, !<...>) are not supported");
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        return fail(at, fmt::format("'{}' has nothing to repeat", c));
      } else {
        return true;  // the end of the sequence: the caller checks what follows
      }
      if (!parse_postfix(at, nested, &item)) return false;
      if (!count_symbols(item.size(), at)) return false;
      seq->insert(seq->end(), item.begin(), item.end());
    }
  }

  bool parse_literal(GrammarSequence* item) {
    const size_t open = pos_++;
    while (true) {
      if (eof() || peek() == '\n') return fail(open, "unterminated string literal");
      if (peek() == '"') {
        ++pos_;
        return true;
      }
      const std::optional<uint32_t> cp = read_char();
      if (!cp) return false;
      item->push_back(GrammarSymbol::chars(char_set_id(CharSet::single(*cp))));
    }
  }

  bool parse_class(GrammarSequence* item) {
    const size_t open = pos_++;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    std::vector<CodeRange> ranges;
    while (true) {
      if (eof() || peek() == '\n') return fail(open, "unterminated character class");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      const size_t at = pos_;
      const std::optional<uint32_t> lo = read_char();
      if (!lo) return false;
      uint32_t hi = *lo;
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0' && peek(1) != '\n') {
        ++pos_;
        const std::optional<uint32_t> h = read_char();
        if (!h) return false;
        if (*h < *lo) {
          return fail(at, fmt::format("bad character range: U+{:04X} > U+{:04X}", *lo, *h));
        }
        hi = *h;
      }
      ranges.push_back({*lo, hi});
    }
    CharSet set(std::move(ranges));
    if (negated) set = set.complement();
    item->push_back(GrammarSymbol::chars(char_set_id(set)));
    return true;
  }

  bool parse_group(GrammarSequence* item) {
    const size_t open = pos_++;
    if (static_cast<int>(open_groups_.size()) >= kMaxGroupNesting) {
      return fail(open, fmt::format("groups nested deeper than {}", kMaxGroupNesting));
    }
    open_groups_.push_back(open);
    skip_space(true);
    std::vector<GrammarSequence> alts;
    if (!parse_alternatives(true, &alts)) return false;
    skip_space(true);
    if (peek() != ')') {
      if (eof()) return fail(open, "'(' is never closed");
      return fail(pos_, fmt::format("unexpected '{}' inside the group opened at {}",
                                    printable(peek()), location(open).to_string()));
    }
    ++pos_;
    open_groups_.pop_back();
    // A group of one sequence is spliced in place; otherwise it is a rule.
    if (alts.size() == 1) {
      *item = std::move(alts[0]);
    } else {
      item->push_back(
          GrammarSymbol::rule(generated_rule(RuleOrigin::kGroup, open, std::move(alts))));
    }
    return true;
  }

  // Repetition suffixes (any number, applied in order) on `item`.
  bool parse_postfix(size_t item_at, bool nested, GrammarSequence* item) {
    while (true) {
      const size_t save = pos_;
      skip_space(nested);
      const size_t at = pos_;
      const char c = peek();
      uint32_t min = 0;
      std::optional<uint32_t> max;  // nullopt: unbounded
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        min = 1;
      } else if (c == '?') {
        ++pos_;
        max = 1;
      } else if (c == '{') {
        if (!parse_bounds(&min, &max)) return false;
      } else {
        pos_ = save;
        return true;
      }
      // The repeated thing must be one symbol.
      GrammarSymbol x;
      if (item->size() == 1) {
        x = (*item)[0];
      } else {
        x = GrammarSymbol::rule(generated_rule(RuleOrigin::kSequence, item_at, {*item}));
      }
      GrammarSequence out(min, x);
      if (!max) {
        // R ::= x R |
        const uint32_t r = generated_rule(RuleOrigin::kRepetition, at, {});
        g_.rules[r].alternatives = {{x, GrammarSymbol::rule(r)}, {}};
        out.push_back(GrammarSymbol::rule(r));
      } else if (*max > min) {
        // T(1) ::= x | ;  T(k) ::= x T(k-1) |
        uint32_t t = generated_rule(RuleOrigin::kRepetition, at, {{x}, {}});
        for (uint32_t k = 2; k <= *max - min; ++k) {
          t = generated_rule(RuleOrigin::kRepetition, at, {{x, GrammarSymbol::rule(t)}, {}});
        }
        out.push_back(GrammarSymbol::rule(t));
      }
      if (!count_symbols(3 * (max ? *max : min + 1) + 2, at)) return false;
      *item = std::move(out);
    }
  }

  // {m} {m,} {m,n} {,n}
  bool parse_bounds(uint32_t* min, std::optional<uint32_t>* max) {
    const size_t open = pos_++;
    auto number = [&](std::optional<uint32_t>* out) -> bool {
      skip_space(false);
      if (!(peek() >= '0' && peek() <= '9')) return true;
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + static_cast<uint64_t>(peek() - '0');
        if (v > kMaxRepetitionBound) {
          return fail(open,
                      fmt::format("repetition bound above the limit of {}", kMaxRepetitionBound));
        }
        ++pos_;
      }
      *out = static_cast<uint32_t>(v);
      return true;
    };
    std::optional<uint32_t> lo, hi;
    if (!number(&lo)) return false;
    skip_space(false);
    const bool comma = peek() == ',';
    if (comma) {
      ++pos_;
      if (!number(&hi)) return false;
      skip_space(false);
    }
    if (peek() != '}') return fail(open, "bad repetition: expected {m}, {m,}, {m,n} or {,n}");
    ++pos_;
    if (!lo && !hi) return fail(open, "bad repetition: no bounds given");
    *min = lo.value_or(0);
    if (!comma) {
      *max = *min;
    } else {
      *max = hi;
    }
    if (*max && **max < *min) {
      return fail(open, fmt::format("bad repetition bounds {{{},{}}}: the maximum is below the "
                                    "minimum",
                                    *min, **max));
    }
    return true;
  }

  std::string_view src_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, uint32_t, std::less<>> names_;  // named rules
  std::vector<bool> defined_;                           // per rule
  std::vector<size_t> first_use_;                       // per rule: offset of first mention
  std::map<CharSet, uint32_t> set_ids_;
  std::vector<size_t> open_groups_;  // offsets of the '(' being parsed
  uint32_t current_rule_ = 0;
  uint32_t generated_count_ = 0;
  size_t symbols_ = 0;
  size_t loc_offset_ = 0;     // location(): the last offset converted
  SourceLocation loc_{1, 1};  // and its line:column
  bool failed_ = false;
  ParseError error_;         // the first syntax error
  Status validation_error_;  // or validate_grammar()'s verdict
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text) {
  return Parser(text).run();
}

Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text) {
  FOLIO_ASSIGN_OR_RETURN(Grammar g, parse_gbnf(text));
  return CompiledGrammar::compile(g);
}

}  // namespace folio::grammar
