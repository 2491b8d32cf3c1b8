// The structural brackets of JSON text, found without parsing it: '{', '[',
// '}' and ']' outside strings (a backslash escapes the next byte inside a
// string). Used where text must be measured before or instead of a parse:
// the nesting depth of a request body, the end of a JSON value inside model
// output.
#pragma once

#include <cstddef>
#include <string_view>

namespace folio {

// Calls on_bracket(i, depth) for each structural bracket at s[i], in order;
// depth counts the brackets open after it (an opening one included, a
// closing one no longer). Stops at the first call that returns false and
// returns that bracket's index; returns npos when the text ends first.
template <class OnBracket>
size_t walk_json_brackets(std::string_view s, OnBracket&& on_bracket) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (!on_bracket(i, ++depth)) return i;
    } else if (c == '}' || c == ']') {
      if (!on_bracket(i, --depth)) return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace folio
