// JSON Schema -> GBNF: the grammar behind OpenAI's response_format
// (json_schema, json_object) and llama-server's json_schema field.
//
// The grammar generates JSON text that validates against the schema; it may
// generate a subset of the valid documents, never more: numbers of at most
// 16 integer and 16 fraction digits (no exponent where bounds are given),
// no lone surrogate escapes, no duplicate keys, one spelling per character
// in keys while they could still equal a listed property, dates in years
// 1000-9999 with February up to the 28th, members in schema order, bounded
// whitespace. A schema the converter cannot enforce is an error rather than
// a grammar that lets invalid output through.
//
// Supported:
//   type (one or a list; inferred from the keywords when absent), const,
//   enum; objects: properties (in schema order), required (the others may be
//   left out, order kept), additionalProperties (false / true / a schema;
//   ABSENT MEANS NONE when properties are given, as in llama.cpp: the extra
//   keys are allowed by the schema but never generated; with no properties
//   any member is generated); arrays: items, prefixItems (and the older
//   array-form items / additionalItems), minItems, maxItems; strings:
//   minLength, maxLength, pattern (regex_to_gbnf.h), format date, time,
//   date-time, uuid; integers: minimum, maximum, exclusiveMinimum,
//   exclusiveMaximum (numbers: the same with integer bounds); anyOf; oneOf
//   when its alternatives are provably disjoint (different JSON types, or
//   objects told apart by a required property with distinct const / enum
//   values); allOf (merged: types intersected, properties and required
//   united, bounds tightened); $ref to #, #/$defs/..., #/definitions/... or
//   any JSON pointer into the document (recursion allowed); true / {} as any
//   JSON value. Annotations (title, description, default, examples, ...) and
//   keywords JSON Schema does not define are ignored.
// Errors (InvalidArgument, "json schema: at #/path: ..."): not, if / then /
//   else, dependent*, contains, patternProperties, propertyNames,
//   unevaluated*, multipleOf, min/maxProperties, uniqueItems: true, formats
//   other than the four, pattern with minLength / maxLength, bounds above
//   10000 (lengths, item counts), non-integer bounds on numbers, const /
//   enum beside other constraints, remote $refs, false schemas that must be
//   generated, unsatisfiable combinations, schemas nested over 100 deep.
//
// Whitespace: at most one blank, or a newline and up to 24 blanks/tabs,
// around punctuation (`ws`); none before the value or after it.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "grammar/compiled_grammar.h"

namespace folio::grammar {

// The GBNF text for `schema` (rule `root` is the document).
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// Any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();
// Any JSON value.
std::string json_value_gbnf();

// json_schema_to_gbnf + parse_gbnf + compile.
Result<std::shared_ptr<const CompiledGrammar>> compile_json_schema(
    const nlohmann::ordered_json& schema);

}  // namespace folio::grammar
