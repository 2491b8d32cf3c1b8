// Lexer: template source -> tokens, reproducing jinja2's lexer (3.1) rule for
// rule, since whitespace in the output depends on it:
//   - newlines (\r\n, \r, \n) are normalised to \n and one trailing newline is
//     dropped (keep_trailing_newline = false);
//   - `{%-`, `{{-`, `{#-` strip all whitespace before the tag; `-%}`, `-}}`,
//     `-#}` strip all whitespace after it;
//   - trim_blocks: the first newline after a block or comment tag is removed
//     (`+%}` keeps it);
//   - lstrip_blocks: spaces and tabs from the start of a line up to a block or
//     comment tag are removed (`{%+` keeps them), not before `{{`;
//   - `{% raw %}...{% endraw %}` is data;
//   - string literals are decoded like Python's unicode-escape (\n, \t, \xhh,
//     \uhhhh, octal; unknown escapes such as \d stay as written);
//   - integers (incl. 0x / 0o / 0b, `_` separators) and floats as jinja2 reads them.
// `{%` / `%}` / `}}` inside an open bracket are operators, as in jinja2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio::jinja {

enum class TokenType : uint8_t {
  kData,        // template text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,  // value holds the operator text: + - * / // % ** ~ [ ] ( ) { } == != < <= > >= = . :
              // | , ;
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  uint32_t pos = 0;   // byte offset in the normalised source
  std::string value;  // data, name, decoded string, operator
  int64_t int_value = 0;
  double float_value = 0.0;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Normalises newlines as jinja2 does before lexing (see above).
std::string normalize_source(std::string_view source, bool keep_trailing_newline);

// Tokenises a normalised source. Throws JinjaError (kSyntax, with position)
// on a lexical error.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

// 1-based line and column (in code points) of a byte offset.
void offset_to_position(std::string_view source, uint32_t pos, int* line, int* column);

}  // namespace folio::jinja
