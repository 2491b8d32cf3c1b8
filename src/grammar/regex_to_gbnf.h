// Regular expressions (JSON Schema's "pattern": ECMA-262 syntax) -> GBNF.
//
// Supported: literal characters, escapes (\n \t \r \f \v \0 \xHH \uHHHH,
// surrogate pairs, \u{H...}, escaped punctuation), classes [a-z] [^...] with
// \d \w \s \D \W \S inside, `.` (any character but \n \r U+2028 U+2029),
// \d \w \s \D \W \S, groups ( ) (?: ) (?<name> ), alternation |,
// quantifiers * + ? {n} {n,} {n,m} (lazy forms too: a language is a
// language), and the anchors ^ at the start and $ at the end of a
// top-level alternative. JSON Schema patterns are not anchored: a side
// without its anchor matches any text there (abc means "contains abc").
//
// Refused with an error (InvalidArgument, "pattern: ..." with the offset):
// lookaround, backreferences, word boundaries (\b \B), Unicode property
// escapes, control escapes (\cX), anchors elsewhere, repetition of a part
// that can match the empty string ((a?)*), and quantifier bounds over 10000.
//
// Character classes are the caller's to render: `render` turns a set of
// characters of the matched string into a GBNF expression for one of them.
// The JSON Schema converter renders JSON string content (escaping " \ and
// control characters); tests render plain text with CharSet::to_gbnf.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/char_set.h"

namespace folio::grammar {

using CharRenderer = std::function<std::string(const CharSet&)>;

Result<std::string> regex_to_gbnf(std::string_view pattern, const CharRenderer& render);

}  // namespace folio::grammar
