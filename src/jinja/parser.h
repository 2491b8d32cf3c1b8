// Parser: tokens -> syntax tree, following jinja2's parser.py grammar and
// precedence (condexpr < or < and < not < compare < + - < ~ < * / // % < **
// < unary - + < postfix . [] () < filters | and tests `is`).
//
// Statements: if / elif / else, for (tuple targets, `if` filter, else,
// recursive), set (incl. namespace attributes and block set), macro, call,
// filter, with, print, raw, break / continue (jinja2.ext.loopcontrols) and
// Hugging Face's {% generation %}. Template inheritance and includes
// (extends, block, include, import, from) are rejected with kUnsupported:
// chat templates are single strings with no loader.
//
// Unknown filters and tests fail at parse time (TemplateAssertionError),
// except inside an if statement or conditional expression, where jinja2
// defers the error to the moment the filter runs; folio does the same.
// Nesting is limited (kMaxNesting) so hostile input cannot exhaust the stack.
#pragma once

#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace folio::jinja {

inline constexpr int kMaxNesting = 100;    // recursive-descent depth (parens, blocks)
inline constexpr int kMaxExprDepth = 200;  // height of one expression tree

// Parses the tokens of `source` (the normalised source, for positions).
// Throws JinjaError (kSyntax / kAssertion / kUnsupported) with a position.
Body parse_template(std::string_view source, const std::vector<Token>& tokens);

}  // namespace folio::jinja
