// The converter walks the schema once, writing one GBNF expression per
// subschema; objects, arrays, object members and every $ref target become
// named rules (so recursive $refs are recursive rules), the rest is inlined.
// Shared pieces (strings, numbers, any JSON value, whitespace, formats) are
// fixed rules added on first use. allOf is merged into one schema before
// conversion (SchemaDocument::merge, json_schema_document.h); anyOf / oneOf
// siblings are merged into each alternative.
#include "grammar/json_schema_to_gbnf.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/utf8.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_document.h"
#include "grammar/numeric_range_gbnf.h"
#include "grammar/regex_to_gbnf.h"

namespace folio::grammar {
namespace {

using namespace schema;  // Json, SchemaDocument, kinds, schema_error

// ---- fixed rules ----

struct Primitive {
  const char* name;
  const char* body;
  std::vector<const char*> deps;  // rules the body refers to
};

// json-u-escape: \uXXXX without lone surrogates (a high one must be followed
// by a low one), so every string decodes.
const std::vector<Primitive>& primitives() {
  static const std::vector<Primitive> k = {
      {"ws", R"g(( [ \t] | "\n" [ \t]{0,24} )?)g", {}},
      {"json-hex", R"g([0-9a-fA-F])g", {}},
      {"json-u-escape",
       R"g([0-9a-cA-Ce-fE-F] json-hex{3} | [dD] [0-7] json-hex{2} | [dD] [89abAB] json-hex{2} "\\u" [dD] [c-fC-F] json-hex{2})g",
       {"json-hex"}},
      {"json-char",
       R"g([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" json-u-escape ))g",
       {"json-u-escape"}},
      {"json-string", R"g("\"" json-char* "\"")g", {"json-char"}},
      {"json-int", R"g("0" | [1-9] [0-9]{0,15})g", {}},
      {"json-integer", R"g("-"? json-int)g", {"json-int"}},
      {"json-number",
       R"g("-"? json-int ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)g",
       {"json-int"}},
      {"json-boolean", R"g("true" | "false")g", {}},
      {"json-null", R"g("null")g", {}},
      {"json-value",
       R"g(json-object | json-array | json-string | json-number | json-boolean | json-null)g",
       {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
      {"json-object",
       R"g("{" ws ( json-member ( ws "," ws json-member )* ws )? "}")g",
       {"ws", "json-member"}},
      {"json-member", R"g(json-string ws ":" ws json-value)g", {"json-string", "ws", "json-value"}},
      {"json-array",
       R"g("[" ws ( json-value ( ws "," ws json-value )* ws )? "]")g",
       {"ws", "json-value"}},
      {"json-day31", R"g("0" [1-9] | [12] [0-9] | "3" [01])g", {}},
      {"json-day30", R"g("0" [1-9] | [12] [0-9] | "30")g", {}},
      {"json-day28", R"g("0" [1-9] | "1" [0-9] | "2" [0-8])g", {}},
      // Years 1000-9999; February up to the 28th: always a real date.
      {"json-date",
       R"g([1-9] [0-9]{3} "-" ( "0" [13578] "-" json-day31 | "1" [02] "-" json-day31 | "0" [469] "-" json-day30 | "11-" json-day30 | "02-" json-day28 ))g",
       {"json-day31", "json-day30", "json-day28"}},
      {"json-time",
       R"g(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))g",
       {}},
      {"json-date-time", R"g(json-date "T" json-time)g", {"json-date", "json-time"}},
      {"json-uuid",
       R"g(json-hex{8} "-" json-hex{4} "-" json-hex{4} "-" json-hex{4} "-" json-hex{12})g",
       {"json-hex"}},
  };
  return k;
}

const std::map<std::string, std::string, std::less<>> kFormats = {{"date", "json-date"},
                                                                  {"time", "json-time"},
                                                                  {"date-time", "json-date-time"},
                                                                  {"uuid", "json-uuid"}};

// ---- text helpers ----

std::string sanitize(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

// A GBNF string literal for UTF-8 text (valid UTF-8: text from Json::dump).
std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  Utf8State state;
  for (char c : text) {
    const Utf8Result r = utf8_step(&state, static_cast<uint8_t>(c));
    if (r.step == Utf8Step::kComplete) out += gbnf_escape(r.lo, false);
  }
  out += '"';
  return out;
}

std::string group(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " | " : " ") + alts[i];
  return out + " )";
}

// The JSON spelling of a character inside a string ("\"" for ", "\\n" for a
// newline, \u00XX for other controls, else the character).
std::string json_spelling(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (cp < 0x20) return fmt::format("\\u{:04x}", cp);
  std::string s;
  utf8_append(cp, &s, Utf8Unencodable::kReplace);  // cp is a scalar value
  return s;
}

// Characters JSON strings must escape, and the short escapes.
struct ShortEscape {
  uint32_t cp;
  char letter;
};
constexpr ShortEscape kShortEscapes[] = {{'"', '"'},  {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'},
                                         {'\n', 'n'}, {'\r', 'r'},  {'\t', 't'}};

CharSet must_escape() {
  return CharSet({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
}

// GBNF for one character of JSON string content from `set` (decoded
// characters): raw where JSON allows, else the short escape.
std::string render_json_chars(const CharSet& set) {
  const CharSet raw = set.minus(must_escape());
  std::string letters;
  for (const ShortEscape& e : kShortEscapes) {
    if (set.contains(e.cp)) letters += gbnf_escape(static_cast<uint8_t>(e.letter), true);
  }
  std::vector<std::string> alts;
  if (!raw.empty()) alts.push_back(raw.to_gbnf());
  if (!letters.empty()) alts.push_back("\"\\\\\" [" + letters + "]");
  if (alts.empty()) return "[]";
  return group(alts);
}

// ---- the converter ----

class Converter {
 public:
  explicit Converter(const Json& root) : doc_(root) {
    for (const Primitive& p : primitives()) taken_.insert(p.name);
    taken_.insert("root");
    inline_hints_.insert("root");
  }

  Result<std::string> run() {
    FOLIO_ASSIGN_OR_RETURN(std::string root, visit(doc_.root(), "", "root"));
    std::string out = "root ::= " + root + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    for (const Primitive& p : primitives()) {
      if (used_.count(p.name) != 0) out += fmt::format("{} ::= {}\n", p.name, p.body);
    }
    return out;
  }

 private:
  // ---- rules ----

  std::string use(const char* name) {
    if (used_.insert(name).second) {
      for (const Primitive& p : primitives()) {
        if (std::string_view(p.name) == name) {
          for (const char* d : p.deps) use(d);
        }
      }
    }
    return name;
  }

  std::string unique_name(const std::string& hint) {
    std::string name = sanitize(hint);
    for (int i = 2; taken_.count(name) != 0; ++i) name = fmt::format("{}-{}", sanitize(hint), i);
    taken_.insert(name);
    return name;
  }

  std::string add_rule(const std::string& hint, std::string body) {
    std::string name = unique_name(hint);
    rules_.emplace_back(name, std::move(body));
    return name;
  }

  // Objects and arrays get a rule of their own, except where the caller is
  // already defining the rule for this hint (the root, a $ref target).
  std::string rule_or_inline(const std::string& hint, std::string body) {
    if (inline_hints_.count(hint) != 0) return body;
    return add_rule(hint, std::move(body));
  }

  Result<std::string> json_text(const Json& v, const std::string& path) {
    try {
      return v.dump();
    } catch (const std::exception& e) {
      return schema_error(path, "value cannot be written as JSON: {}", e.what());
    }
  }

  // ---- $ref ----

  // The rule for a $ref target (made once, so recursion is a recursive rule).
  Result<std::string> ref_rule(const Json& ref, const std::string& path) {
    FOLIO_ASSIGN_OR_RETURN(const Json* target, doc_.resolve(ref, path));
    const std::string& r = ref.get_ref<const std::string&>();
    auto it = ref_names_.find(r);
    if (it != ref_names_.end()) return it->second;
    const size_t slash = r.rfind('/');
    const std::string name = unique_name(slash == std::string::npos ? "ref" : r.substr(slash + 1));
    ref_names_.emplace(r, name);
    const size_t slot = rules_.size();
    rules_.emplace_back(name, "");
    inline_hints_.insert(name);
    FOLIO_ASSIGN_OR_RETURN(std::string body, visit(*target, r.substr(1), name));
    rules_[slot].second = std::move(body);
    return name;
  }

  // ---- visiting ----

  Result<std::string> visit(const Json& s, const std::string& path, const std::string& hint) {
    // Bounded recursion: a schema from a request must not exhaust the stack.
    if (depth_ >= kMaxSchemaDepth) {
      return schema_error(path, "schema nested deeper than {} levels", kMaxSchemaDepth);
    }
    ++depth_;
    Result<std::string> r = visit_schema(s, path, hint);
    --depth_;
    return r;
  }

  Result<std::string> visit_schema(const Json& s, const std::string& path,
                                   const std::string& hint) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return use("json-value");
      return schema_error(path, "the schema is false: no value is valid here");
    }
    if (!s.is_object()) return schema_error(path, "a schema must be an object or a boolean");
    FOLIO_RETURN_IF_ERROR(SchemaDocument::check_unsupported(s, path));

    if (s.contains("$ref")) {
      const Json rest = without(s, {"$ref"});
      if (!has_validation(rest)) return ref_rule(s["$ref"], path);
      FOLIO_ASSIGN_OR_RETURN(Json merged, doc_.deref(s, path));
      return visit(merged, path, hint);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].empty()) {
        return schema_error(path, "allOf must be a non-empty array");
      }
      Json acc = without(s, {"allOf"});
      for (size_t i = 0; i < s["allOf"].size(); ++i) {
        FOLIO_ASSIGN_OR_RETURN(
            acc, doc_.merge(acc, s["allOf"][i], path + "/allOf/" + std::to_string(i), 0));
      }
      return visit(acc, path, hint);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) {
      if (s.contains("anyOf") && s.contains("oneOf")) {
        return schema_error(path, "anyOf together with oneOf is not supported");
      }
      const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
      const Json& alts = s[key];
      if (!alts.is_array() || alts.empty())
        return schema_error(path, "{} must be a non-empty array", key);
      if (key == "oneOf") FOLIO_RETURN_IF_ERROR(doc_.check_one_of(alts, path + "/oneOf"));
      const Json rest = without(s, {key});
      std::vector<std::string> exprs;
      for (size_t i = 0; i < alts.size(); ++i) {
        const std::string sub_path = path + "/" + key + "/" + std::to_string(i);
        const std::string sub_hint = hint + "-" + std::to_string(i);
        if (has_validation(rest)) {
          FOLIO_ASSIGN_OR_RETURN(Json merged, doc_.merge(rest, alts[i], sub_path, 0));
          FOLIO_ASSIGN_OR_RETURN(std::string e, visit(merged, sub_path, sub_hint));
          exprs.push_back(std::move(e));
        } else {
          FOLIO_ASSIGN_OR_RETURN(std::string e, visit(alts[i], sub_path, sub_hint));
          exprs.push_back(std::move(e));
        }
      }
      return group(exprs);
    }
    if (s.contains("const") || s.contains("enum")) return literals(s, path);

    FOLIO_ASSIGN_OR_RETURN(uint32_t types, SchemaDocument::generated_types(s, path));
    if ((types & kNumber) != 0) types &= ~kInteger;  // numbers already include integers
    if (types == (kAnyKind & ~kInteger) && !has_validation(s)) return use("json-value");
    std::vector<std::string> alts;
    if (types & kNull) alts.push_back("\"null\"");
    if (types & kBoolean) alts.push_back("( \"true\" | \"false\" )");
    if (types & (kInteger | kNumber)) {
      FOLIO_ASSIGN_OR_RETURN(std::string e, number(s, path, (types & kNumber) == 0));
      alts.push_back(std::move(e));
    }
    if (types & kString) {
      FOLIO_ASSIGN_OR_RETURN(std::string e, string(s, path));
      alts.push_back(std::move(e));
    }
    if (types & kArray) {
      FOLIO_ASSIGN_OR_RETURN(std::string e, array(s, path, hint));
      alts.push_back(std::move(e));
    }
    if (types & kObject) {
      FOLIO_ASSIGN_OR_RETURN(std::string e, object(s, path, hint));
      alts.push_back(std::move(e));
    }
    return group(alts);
  }

  Result<std::string> literals(const Json& s, const std::string& path) {
    if (has_validation(s, {"const", "enum", "type"})) {
      return schema_error(path, "const / enum together with other constraints is not supported");
    }
    Json values = Json::array();
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) {
        return schema_error(path, "enum must be a non-empty array");
      }
      for (const Json& v : s["enum"]) {
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
      }
      if (s.contains("const")) values.erase(values.begin());
    }
    uint32_t types = kAnyKind;
    if (s.contains("type")) {
      FOLIO_ASSIGN_OR_RETURN(types, SchemaDocument::explicit_types(s, path));
    }
    std::vector<std::string> alts;
    for (const Json& v : values) {
      if ((kind_of_value(v) & types) == 0) continue;  // excluded by "type"
      FOLIO_ASSIGN_OR_RETURN(std::string text, json_text(v, path));
      alts.push_back(gbnf_literal(text));
    }
    if (alts.empty()) return schema_error(path, "no const / enum value is allowed by the type");
    return group(alts);
  }

  // ---- numbers ----

  struct Bounds {
    std::optional<double> min, max;
    bool min_exclusive = false, max_exclusive = false;
  };

  Result<Bounds> bounds(const Json& s, const std::string& path) {
    Bounds b;
    auto number_at = [&](const char* key) -> Result<std::optional<double>> {
      if (!s.contains(key)) return std::optional<double>();
      const Json& v = s[key];
      if (v.is_boolean()) return std::optional<double>();  // draft 4 flags, below
      if (!v.is_number()) return schema_error(path, "{} must be a number", key);
      return std::optional<double>(v.get<double>());
    };
    FOLIO_ASSIGN_OR_RETURN(b.min, number_at("minimum"));
    FOLIO_ASSIGN_OR_RETURN(b.max, number_at("maximum"));
    FOLIO_ASSIGN_OR_RETURN(std::optional<double> xmin, number_at("exclusiveMinimum"));
    FOLIO_ASSIGN_OR_RETURN(std::optional<double> xmax, number_at("exclusiveMaximum"));
    // Draft 4: exclusiveMinimum / exclusiveMaximum are flags on the bounds.
    if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean()) {
      b.min_exclusive = s["exclusiveMinimum"].get<bool>() && b.min.has_value();
    }
    if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean()) {
      b.max_exclusive = s["exclusiveMaximum"].get<bool>() && b.max.has_value();
    }
    if (xmin && (!b.min || *xmin >= *b.min)) {
      b.min = xmin;
      b.min_exclusive = true;
    }
    if (xmax && (!b.max || *xmax <= *b.max)) {
      b.max = xmax;
      b.max_exclusive = true;
    }
    return b;
  }

  static int64_t clamp_to_int(double v) {
    const double lim = 1e17;  // beyond the 16-digit cap either way
    return static_cast<int64_t>(std::max(-lim, std::min(lim, v)));
  }

  Result<std::string> number(const Json& s, const std::string& path, bool integer_only) {
    FOLIO_ASSIGN_OR_RETURN(Bounds b, bounds(s, path));
    if (!b.min && !b.max) return use(integer_only ? "json-integer" : "json-number");
    for (std::optional<double> v : {b.min, b.max}) {
      if (v && !std::isfinite(*v)) return schema_error(path, "bounds must be finite");
    }
    if (integer_only) {
      std::optional<int64_t> lo, hi;
      if (b.min) lo = clamp_to_int(b.min_exclusive ? std::floor(*b.min) + 1 : std::ceil(*b.min));
      if (b.max) hi = clamp_to_int(b.max_exclusive ? std::ceil(*b.max) - 1 : std::floor(*b.max));
      Result<std::string> r = int_range_gbnf(lo, hi);
      if (!r.ok()) return schema_error(path, "{}", r.status().message());
      return "( " + r.value() + " )";
    }
    std::optional<NumberBound> lo, hi;
    for (auto [v, exclusive, out] :
         {std::tuple{b.min, b.min_exclusive, &lo}, std::tuple{b.max, b.max_exclusive, &hi}}) {
      if (!v) continue;
      if (*v != std::floor(*v)) {
        return schema_error(path,
                            "bound {} on a number: only integer bounds are supported (or use "
                            "type integer)",
                            *v);
      }
      *out = NumberBound{clamp_to_int(*v), exclusive};
    }
    Result<std::string> r = number_range_gbnf(lo, hi);
    if (!r.ok()) return schema_error(path, "{}", r.status().message());
    return "( " + r.value() + " )";
  }

  // ---- strings ----

  Result<std::optional<uint64_t>> count_at(const Json& s, const char* key,
                                           const std::string& path) {
    if (!s.contains(key)) return std::optional<uint64_t>();
    const Json& v = s[key];
    const bool integral = v.is_number_unsigned() ||
                          (v.is_number_integer() && v.get<int64_t>() >= 0) ||
                          (v.is_number_float() && v.get<double>() >= 0 &&
                           v.get<double>() == std::floor(v.get<double>()));
    if (!integral) return schema_error(path, "{} must be a non-negative integer", key);
    const double d = v.get<double>();
    if (d > kMaxRepetitionBound) {
      return schema_error(path, "{} {} is above the supported limit of {}", key, d,
                          kMaxRepetitionBound);
    }
    return std::optional<uint64_t>(static_cast<uint64_t>(d));
  }

  Result<std::string> string(const Json& s, const std::string& path) {
    const std::string quote = R"g("\"")g";
    FOLIO_ASSIGN_OR_RETURN(std::optional<uint64_t> min_len, count_at(s, "minLength", path));
    FOLIO_ASSIGN_OR_RETURN(std::optional<uint64_t> max_len, count_at(s, "maxLength", path));
    const bool lengths = min_len || max_len;
    if (s.contains("pattern")) {
      if (lengths || s.contains("format")) {
        return schema_error(path,
                            "pattern together with minLength / maxLength / format is not "
                            "supported");
      }
      if (!s["pattern"].is_string()) return schema_error(path, "pattern must be a string");
      Result<std::string> e = regex_to_gbnf(s["pattern"].get<std::string>(), render_json_chars);
      if (!e.ok()) return schema_error(path, "{}", e.status().message());
      return quote + " " + e.value() + " " + quote;
    }
    if (s.contains("format")) {
      const Json& f = s["format"];
      auto it = f.is_string() ? kFormats.find(f.get<std::string>()) : kFormats.end();
      if (it == kFormats.end()) {
        return schema_error(path, "format {} is not supported (date, time, date-time, uuid are)",
                            f.dump());
      }
      if (lengths)
        return schema_error(path, "format together with minLength / maxLength is not supported");
      return quote + " " + use(it->second.c_str()) + " " + quote;
    }
    if (!lengths) return use("json-string");
    const uint64_t lo = min_len.value_or(0);
    if (max_len && *max_len < lo) return schema_error(path, "maxLength is below minLength");
    const std::string rep = max_len ? (lo == *max_len ? fmt::format("{{{}}}", lo)
                                                      : fmt::format("{{{},{}}}", lo, *max_len))
                                    : fmt::format("{{{},}}", lo);
    return quote + " " + use("json-char") + rep + " " + quote;
  }

  // ---- arrays ----

  Result<std::string> array(const Json& s, const std::string& path, const std::string& hint) {
    // Positional schemas (prefixItems, or the older array-form items), and
    // the schema of the items after them (nullopt: none allowed).
    std::vector<std::string> positional;
    std::optional<Json> rest = Json(true);
    std::string rest_path = path + "/items";
    const Json* prefix = nullptr;
    std::string prefix_key;
    if (s.contains("prefixItems")) {
      prefix = &s["prefixItems"];
      prefix_key = "prefixItems";
      if (s.contains("items")) rest = s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {
      prefix = &s["items"];
      prefix_key = "items";
      rest_path = path + "/additionalItems";
      if (s.contains("additionalItems")) rest = s["additionalItems"];
    } else if (s.contains("items")) {
      rest = s["items"];
    }
    if (rest->is_boolean() && !rest->get<bool>()) rest.reset();
    if (prefix != nullptr) {
      if (!prefix->is_array()) return schema_error(path, "{} must be an array", prefix_key);
      for (size_t i = 0; i < prefix->size(); ++i) {
        FOLIO_ASSIGN_OR_RETURN(
            std::string e, visit((*prefix)[i], path + "/" + prefix_key + "/" + std::to_string(i),
                                 hint + "-" + std::to_string(i)));
        positional.push_back(std::move(e));
      }
    }
    FOLIO_ASSIGN_OR_RETURN(std::optional<uint64_t> min_items, count_at(s, "minItems", path));
    FOLIO_ASSIGN_OR_RETURN(std::optional<uint64_t> max_items, count_at(s, "maxItems", path));
    const size_t k = positional.size();
    const size_t min = min_items.value_or(0);
    std::optional<size_t> max = max_items;
    if (!rest && (!max || *max > k)) max = k;
    if (max && *max < min) {
      return schema_error(path, "no array fits: minItems {} but at most {} items", min, *max);
    }
    std::string item;
    if (rest && (!max || *max > k)) {
      FOLIO_ASSIGN_OR_RETURN(item, visit(*rest, rest_path, hint + "-item"));
    }
    const std::string sep = use("ws") + R"g( "," ws)g";
    auto elem = [&](size_t j) { return j < k ? positional[j] : item; };
    auto rep = [](std::optional<size_t> r) {
      if (!r) return std::string("*");
      if (*r == 1) return std::string("?");
      return fmt::format("{{0,{}}}", *r);
    };
    // opt(j): items j, j+1, ... all optional; inner(j): item j present.
    std::function<std::string(size_t)> inner, opt;
    opt = [&](size_t j) -> std::string {
      if (max && j >= *max) return "";
      if (j >= k && !rest) return "";
      if (j >= k && j > 0) {
        std::optional<size_t> r;
        if (max) r = *max - j;
        return "( " + sep + " " + item + " )" + rep(r);
      }
      return "( " + inner(j) + " )?";
    };
    inner = [&](size_t j) -> std::string {
      std::string out = (j > 0 ? sep + " " : "") + elem(j);
      const std::string more = opt(j + 1);
      return more.empty() ? out : out + " " + more;
    };
    std::string body;
    if (min == 0) {
      const std::string o = opt(0);
      body = o.empty() ? R"g("[" ws "]")g" : R"g("[" ws ( )g" + inner(0) + R"g( ws )? "]")g";
    } else {
      body = R"g("[" ws )g";
      for (size_t j = 0; j < min; ++j) body += (j > 0 ? sep + " " : "") + elem(j) + " ";
      const std::string more = opt(min);
      if (!more.empty()) body += more + " ";
      body += R"g(ws "]")g";
    }
    return rule_or_inline(hint, body);
  }

  // ---- objects ----

  // Any JSON string except the given keys, spelled with one spelling per
  // character while it can still become one of them (a trie of the keys, a
  // rule per node), then free.
  Result<std::string> key_except(const std::vector<std::string>& keys, const std::string& path,
                                 const std::string& hint) {
    struct Node {
      std::map<uint32_t, size_t> children;
      bool terminal = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& key : keys) {
      size_t n = 0;
      Utf8State st;
      for (char c : key) {
        const Utf8Result r = utf8_step(&st, static_cast<uint8_t>(c));
        if (r.step == Utf8Step::kInvalid) return schema_error(path, "property name is not UTF-8");
        if (r.step != Utf8Step::kComplete) continue;
        auto it = trie[n].children.find(r.lo);
        if (it == trie[n].children.end()) {
          it = trie[n].children.emplace(r.lo, trie.size()).first;
          trie.emplace_back();
        }
        n = it->second;
      }
      trie[n].terminal = true;
    }
    std::vector<std::string> names(trie.size());
    for (size_t i = 0; i < trie.size(); ++i) names[i] = unique_name(hint + "-key");
    const std::string free = use("json-char") + R"g(* "\"")g";
    for (size_t i = 0; i < trie.size(); ++i) {
      std::vector<std::string> alts;
      CharSet children;
      for (const auto& [cp, child] : trie[i].children) {
        alts.push_back(gbnf_literal(json_spelling(cp)) + " " + names[child]);
        children = children.united(CharSet::single(cp));
      }
      const CharSet raw = CharSet::any().minus(must_escape()).minus(children);
      alts.push_back(raw.to_gbnf() + " " + free);
      std::string letters;
      for (const ShortEscape& e : kShortEscapes) {
        if (!children.contains(e.cp)) letters += gbnf_escape(static_cast<uint8_t>(e.letter), true);
      }
      if (!children.contains('/')) letters += "/";
      if (!letters.empty()) alts.push_back("\"\\\\\" [" + letters + "] " + free);
      if (!trie[i].terminal) alts.push_back(R"g("\"")g");
      rules_.emplace_back(names[i], group(alts));
    }
    return R"g("\"" )g" + names[0];
  }

  Result<std::string> object(const Json& s, const std::string& path, const std::string& hint) {
    const Json props = s.contains("properties") ? s["properties"] : Json::object();
    if (!props.is_object()) return schema_error(path, "properties must be an object");
    std::vector<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return schema_error(path, "required must be an array");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return schema_error(path, "required must list property names");
        required.push_back(r.get<std::string>());
      }
    }
    // Extra members: absent means none when properties are listed (see the
    // header), any when nothing is listed.
    std::optional<Json> extra;
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) extra = a;
    } else if (props.empty()) {
      extra = Json(true);
    }
    // Members in order: the listed properties, then required names that are
    // not listed (their schema is additionalProperties').
    std::vector<std::pair<std::string, Json>> members;
    for (auto it = props.begin(); it != props.end(); ++it)
      members.emplace_back(it.key(), it.value());
    for (const std::string& r : required) {
      const bool listed =
          std::any_of(members.begin(), members.end(), [&](const auto& m) { return m.first == r; });
      if (listed) continue;  // (also a name required twice)
      if (!extra && s.contains("additionalProperties")) {
        return schema_error(path,
                            "required property '{}' is forbidden by additionalProperties false", r);
      }
      members.emplace_back(r, extra ? *extra : Json(true));
    }
    std::vector<std::string> kv;
    std::vector<bool> req;
    std::vector<std::string> names;
    for (const auto& [name, schema] : members) {
      const std::string sub_path = path + "/properties/" + pointer_token(name);
      const std::string sub_hint = hint + "-" + name;
      FOLIO_ASSIGN_OR_RETURN(std::string value, visit(schema, sub_path, sub_hint));
      FOLIO_ASSIGN_OR_RETURN(std::string key, json_text(Json(name), sub_path));
      kv.push_back(add_rule(sub_hint + "-kv",
                            gbnf_literal(key) + " " + use("ws") + R"g( ":" ws )g" + value));
      req.push_back(std::find(required.begin(), required.end(), name) != required.end());
      names.push_back(name);
    }
    std::string additional;  // the rule for one extra member
    if (extra) {
      std::string key;
      if (names.empty()) {
        key = use("json-string");
      } else {
        FOLIO_ASSIGN_OR_RETURN(key, key_except(names, path, hint + "-additional"));
      }
      FOLIO_ASSIGN_OR_RETURN(std::string value,
                             visit(*extra, path + "/additionalProperties", hint + "-additional"));
      additional =
          add_rule(hint + "-additional-kv", key + " " + use("ws") + R"g( ":" ws )g" + value);
    }
    // First member j (all before it optional), then the rest in order.
    const std::string sep = use("ws") + R"g( "," ws)g";
    const std::string extra_tail = additional.empty() ? "" : "( " + sep + " " + additional + " )*";
    auto tail = [&](size_t from) {
      std::string t;
      for (size_t i = from; i < kv.size(); ++i) {
        t += req[i] ? sep + " " + kv[i] + " " : "( " + sep + " " + kv[i] + " )? ";
      }
      return t + extra_tail;
    };
    std::vector<std::string> firsts;
    bool any_required = false;
    for (size_t j = 0; j < kv.size(); ++j) {
      firsts.push_back(kv[j] + " " + tail(j + 1));
      if (req[j]) {
        any_required = true;
        break;
      }
    }
    if (!any_required && !additional.empty()) firsts.push_back(additional + " " + extra_tail);
    std::string body;
    if (firsts.empty()) {
      body = R"g("{" ws "}")g";
    } else if (any_required) {
      body = R"g("{" ws )g" + group(firsts) + R"g( ws "}")g";
    } else {
      body = R"g("{" ws ( )g" + group(firsts) + R"g( ws )? "}")g";
    }
    return rule_or_inline(hint, body);
  }

  static constexpr int kMaxSchemaDepth = 100;

  SchemaDocument doc_;
  int depth_ = 0;                                           // visit() nesting
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body; in creation order
  std::set<std::string> taken_;                             // rule names in use
  std::set<std::string> used_;                              // fixed rules needed
  std::set<std::string> inline_hints_;                      // rules being defined by the caller
  std::map<std::string, std::string> ref_names_;            // $ref -> rule
};

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  // The converter checks types before it reads values; this catches what
  // slips through (a string that is not UTF-8 in a schema built in code).
  try {
    return Converter(schema).run();
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("json schema: {}", e.what());
  }
}

std::string json_object_gbnf() {
  Result<std::string> g = json_schema_to_gbnf(Json{{"type", "object"}});
  return g.ok() ? g.value() : std::string();
}

std::string json_value_gbnf() {
  Result<std::string> g = json_schema_to_gbnf(Json(true));
  return g.ok() ? g.value() : std::string();
}

Result<std::shared_ptr<const CompiledGrammar>> compile_json_schema(
    const nlohmann::ordered_json& schema) {
  FOLIO_ASSIGN_OR_RETURN(std::string gbnf, json_schema_to_gbnf(schema));
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(gbnf);
  if (!g.ok()) {
    return invalid_argument("json schema: the generated grammar is refused: {}",
                            g.status().message());
  }
  return g;
}

}  // namespace folio::grammar
