// JSON <-> Value. Inputs arrive as nlohmann::ordered_json so object keys keep
// their order, as Python dicts do (tojson output depends on it). Output
// reproduces Python's json.dumps byte for byte: separators (', ', ': '), or
// (',', ': ') with an indent; ensure_ascii escapes with surrogate pairs;
// floats as repr() (NaN / Infinity); keys converted like Python (True ->
// "true", 1 -> "1"); non-serialisable values raise TypeError "Object of type
// X is not JSON serializable".
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "jinja/value.h"

namespace folio::jinja {

inline constexpr int kMaxJsonDepth = 128;

// Throws JinjaError (kValue) for values nested deeper than kMaxJsonDepth.
Value value_from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: one line
  std::optional<std::string> item_separator;  // default ", " (or "," with indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Python json.dumps. Throws JinjaError (kType / kValue).
std::string dump_json(const Value& v, const JsonDumpOptions& options);

}  // namespace folio::jinja
