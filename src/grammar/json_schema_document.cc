#include "grammar/json_schema_document.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <vector>

namespace folio::grammar::schema {
namespace {

// Keywords whose constraint the grammar cannot enforce: refused.
// clang-format off
const std::set<std::string, std::less<>> kUnsupported = {
    "not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies",
    "contains", "minContains", "maxContains", "patternProperties", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "multipleOf", "minProperties", "maxProperties",
    "$dynamicRef", "$recursiveRef"};

// Keywords that constrain values; anything else is an annotation.
const std::set<std::string, std::less<>> kValidation = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength", "pattern",
    "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf",
    "allOf", "$ref", "uniqueItems"};
// clang-format on

}  // namespace

bool has_validation(const Json& s, std::initializer_list<std::string_view> except) {
  if (!s.is_object()) return false;
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (kValidation.count(it.key()) == 0) continue;
    bool skipped = false;
    for (std::string_view e : except) skipped = skipped || it.key() == e;
    if (!skipped) return true;
  }
  return false;
}

Json without(const Json& s, std::initializer_list<std::string_view> keys) {
  Json out = Json::object();
  for (auto it = s.begin(); it != s.end(); ++it) {
    bool drop = false;
    for (std::string_view k : keys) drop = drop || it.key() == k;
    if (!drop) out[it.key()] = it.value();
  }
  return out;
}

uint32_t kind_of_value(const Json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBoolean;
  if (v.is_number_integer() || v.is_number_unsigned()) return kInteger | kNumber;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d) ? (kInteger | kNumber) : kNumber;
  }
  if (v.is_string()) return kString;
  if (v.is_array()) return kArray;
  return kObject;
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Result<const Json*> SchemaDocument::resolve(const Json& ref, const std::string& path) const {
  if (!ref.is_string()) return schema_error(path, "$ref must be a string");
  const std::string& r = ref.get_ref<const std::string&>();
  if (r == "#") return &root_;
  if (r.rfind("#/", 0) != 0) {
    return schema_error(path, "$ref '{}': only references into this document (#/...) are supported",
                        r);
  }
  const Json* node = &root_;
  size_t start = 2;
  while (true) {
    const size_t slash = r.find('/', start);
    const std::string_view raw = std::string_view(r).substr(
        start, slash == std::string::npos ? std::string::npos : slash - start);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else if (raw[i] == '%' && i + 2 < raw.size() && std::isxdigit(raw[i + 1]) &&
                 std::isxdigit(raw[i + 2])) {
        token += static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        token += raw[i];
      }
    }
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10 &&
               std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      return schema_error(path, "$ref '{}' does not resolve", r);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return node;
}

// A schema with its top-level $ref replaced by the target (merged with
// the siblings), for merging and for the oneOf check.
Result<Json> SchemaDocument::deref(Json s, const std::string& path) const {
  for (int hops = 0; s.is_object() && s.contains("$ref"); ++hops) {
    if (hops > 32) return schema_error(path, "$ref chain too long (a cycle?)");
    FOLIO_ASSIGN_OR_RETURN(const Json* target, resolve(s["$ref"], path));
    Json rest = without(s, {"$ref"});
    if (has_validation(rest)) {
      FOLIO_ASSIGN_OR_RETURN(Json merged, merge(*target, rest, path, 0));
      s = std::move(merged);
    } else {
      s = *target;
    }
  }
  return s;
}

// ---- allOf: merging two schemas into one ----

Result<Json> SchemaDocument::merge(const Json& a_in, const Json& b_in, const std::string& path,
                                   int depth) const {
  if (depth > 16) return schema_error(path, "allOf: schemas nested too deeply to merge");
  FOLIO_ASSIGN_OR_RETURN(Json a, deref(a_in, path));
  FOLIO_ASSIGN_OR_RETURN(Json b, deref(b_in, path));
  if (a.is_boolean()) {
    if (!a.get<bool>()) return schema_error(path, "allOf with a false schema: no value is valid");
    return b;
  }
  if (b.is_boolean()) {
    if (!b.get<bool>()) return schema_error(path, "allOf with a false schema: no value is valid");
    return a;
  }
  if (!a.is_object() || !b.is_object()) return schema_error(path, "a schema must be an object");
  // Nested allOf first.
  for (Json* s : {&a, &b}) {
    if (s->contains("allOf")) {
      Json parts = (*s)["allOf"];
      if (!parts.is_array()) return schema_error(path, "allOf must be an array");
      Json acc = without(*s, {"allOf"});
      for (const Json& p : parts) {
        FOLIO_ASSIGN_OR_RETURN(acc, merge(acc, p, path, depth + 1));
      }
      *s = std::move(acc);
    }
  }
  FOLIO_RETURN_IF_ERROR(check_unsupported(a, path));
  FOLIO_RETURN_IF_ERROR(check_unsupported(b, path));
  Json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& key = it.key();
    const Json& bv = it.value();
    if (kValidation.count(key) == 0) continue;  // annotations: keep a's
    if (!out.contains(key)) {
      out[key] = bv;
      continue;
    }
    Json& av = out[key];
    if (av == bv) continue;
    if (key == "type") {
      FOLIO_ASSIGN_OR_RETURN(uint32_t ka, explicit_types(a, path));
      FOLIO_ASSIGN_OR_RETURN(uint32_t kb, explicit_types(b, path));
      // Bits: integer = kInteger, number = kNumber | kInteger, so & intersects.
      const uint32_t k = ka & kb;
      if (k == 0) return schema_error(path, "allOf: the types do not intersect");
      out["type"] = types_json(k);
    } else if (key == "properties") {
      if (!av.is_object() || !bv.is_object())
        return schema_error(path, "properties must be an object");
      for (auto p = bv.begin(); p != bv.end(); ++p) {
        if (av.contains(p.key()) && av[p.key()] != p.value()) {
          FOLIO_ASSIGN_OR_RETURN(
              Json m, merge(av[p.key()], p.value(), path + "/properties/" + pointer_token(p.key()),
                            depth + 1));
          av[p.key()] = std::move(m);
        } else {
          av[p.key()] = p.value();
        }
      }
    } else if (key == "required") {
      if (!av.is_array() || !bv.is_array()) return schema_error(path, "required must be an array");
      for (const Json& r : bv) {
        if (std::find(av.begin(), av.end(), r) == av.end()) av.push_back(r);
      }
    } else if (key == "additionalProperties" || key == "items") {
      if (av.is_boolean() && !av.get<bool>()) continue;
      if (bv.is_boolean() && !bv.get<bool>()) {
        av = bv;
        continue;
      }
      FOLIO_ASSIGN_OR_RETURN(Json m, merge(av, bv, path + "/" + key, depth + 1));
      av = std::move(m);
    } else if (key == "minLength" || key == "minItems" || key == "minimum" ||
               key == "exclusiveMinimum") {
      if (!av.is_number() || !bv.is_number()) return schema_error(path, "{} must be a number", key);
      if (bv > av) av = bv;
    } else if (key == "maxLength" || key == "maxItems" || key == "maximum" ||
               key == "exclusiveMaximum") {
      if (!av.is_number() || !bv.is_number()) return schema_error(path, "{} must be a number", key);
      if (bv < av) av = bv;
    } else if (key == "enum" || key == "const") {
      Json ea = Json::array(), eb = Json::array();
      if (key == "enum" && av.is_array())
        ea = av;
      else
        ea.push_back(av);
      if (key == "enum" && bv.is_array())
        eb = bv;
      else
        eb.push_back(bv);
      Json both = Json::array();
      for (const Json& v : ea) {
        if (std::find(eb.begin(), eb.end(), v) != eb.end()) both.push_back(v);
      }
      if (both.empty()) return schema_error(path, "allOf: {} values do not intersect", key);
      av = both;
      if (key == "const") {
        out.erase("const");
        out["enum"] = both;
      }
    } else {
      return schema_error(path,
                          "allOf: both parts set '{}' differently; merging them is not "
                          "supported",
                          key);
    }
  }
  // Keys one part forbids (additionalProperties false) or constrains.
  for (const Json* side : {&a, &b}) {
    if (!side->contains("additionalProperties") || !out.contains("properties")) continue;
    const Json& extra = (*side)["additionalProperties"];
    const Json own = side->contains("properties") ? (*side)["properties"] : Json::object();
    Json& props = out["properties"];
    std::vector<std::string> names;
    for (auto p = props.begin(); p != props.end(); ++p) names.push_back(p.key());
    for (const std::string& name : names) {
      if (own.contains(name)) continue;
      if (extra.is_boolean() && extra.get<bool>()) continue;
      if (extra.is_boolean()) {
        const Json& req = out.contains("required") ? out["required"] : Json::array();
        if (std::find(req.begin(), req.end(), Json(name)) != req.end()) {
          return schema_error(path,
                              "allOf: property '{}' is required by one part and forbidden by "
                              "another (additionalProperties false)",
                              name);
        }
        props.erase(name);
      } else {
        FOLIO_ASSIGN_OR_RETURN(Json m, merge(props[name], extra, path, depth + 1));
        props[name] = std::move(m);
      }
    }
  }
  return out;
}

// ---- types ----

Result<uint32_t> SchemaDocument::explicit_types(const Json& s, const std::string& path) {
  if (!s.contains("type")) return kAnyKind;
  const Json& t = s["type"];
  std::vector<Json> names;
  if (t.is_string()) {
    names.push_back(t);
  } else if (t.is_array() && !t.empty()) {
    names.assign(t.begin(), t.end());
  } else {
    return schema_error(path, "type must be a type name or a non-empty list of them");
  }
  uint32_t k = 0;
  for (const Json& n : names) {
    const std::string name = n.is_string() ? n.get<std::string>() : "";
    if (name == "null")
      k |= kNull;
    else if (name == "boolean")
      k |= kBoolean;
    else if (name == "integer")
      k |= kInteger;
    else if (name == "number")
      k |= kNumber | kInteger;
    else if (name == "string")
      k |= kString;
    else if (name == "array")
      k |= kArray;
    else if (name == "object")
      k |= kObject;
    else
      return schema_error(path, "unknown type {}", n.dump());
  }
  return k;
}

Json SchemaDocument::types_json(uint32_t k) {
  Json out = Json::array();
  if (k & kNull) out.push_back("null");
  if (k & kBoolean) out.push_back("boolean");
  if (k & kNumber) {
    out.push_back("number");
  } else if (k & kInteger) {
    out.push_back("integer");
  }
  if (k & kString) out.push_back("string");
  if (k & kArray) out.push_back("array");
  if (k & kObject) out.push_back("object");
  return out.size() == 1 ? out[0] : out;
}

// The types to generate: explicit, else inferred from the keywords
// (generating fewer types than the schema allows is still valid).
Result<uint32_t> SchemaDocument::generated_types(const Json& s, const std::string& path) {
  if (s.contains("type")) return explicit_types(s, path);
  uint32_t k = 0;
  for (const char* key : {"properties", "additionalProperties", "required"}) {
    if (s.contains(key)) k |= kObject;
  }
  for (const char* key : {"items", "prefixItems", "additionalItems", "minItems", "maxItems"}) {
    if (s.contains(key)) k |= kArray;
  }
  for (const char* key : {"minLength", "maxLength", "pattern", "format"}) {
    if (s.contains(key)) k |= kString;
  }
  for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (s.contains(key)) k |= kNumber | kInteger;
  }
  return k == 0 ? kAnyKind : k;
}

Status SchemaDocument::check_unsupported(const Json& s, const std::string& path) {
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (kUnsupported.count(it.key()) != 0) {
      return schema_error(path, "keyword '{}' is not supported", it.key());
    }
  }
  if (s.contains("uniqueItems") && s["uniqueItems"] != Json(false)) {
    return schema_error(path, "keyword 'uniqueItems' is not supported");
  }
  return Status();
}

// ---- oneOf: only when the alternatives cannot both match ----

Result<uint32_t> SchemaDocument::value_kinds(const Json& s_in, const std::string& path,
                                             int depth) const {
  if (depth > 16) return kAnyKind;
  FOLIO_ASSIGN_OR_RETURN(Json s, deref(s_in, path));
  if (s.is_boolean()) return s.get<bool>() ? kAnyKind : 0u;
  if (!s.is_object()) return schema_error(path, "a schema must be an object or a boolean");
  auto collapse = [](uint32_t k) { return (k & kInteger) ? ((k & ~kInteger) | kNumber) : k; };
  if (s.contains("const")) return collapse(kind_of_value(s["const"]));
  if (s.contains("enum") && s["enum"].is_array()) {
    uint32_t k = 0;
    for (const Json& v : s["enum"]) k |= collapse(kind_of_value(v));
    return k;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (s.contains(key) && s[key].is_array()) {
      uint32_t k = 0;
      for (const Json& alt : s[key]) {
        FOLIO_ASSIGN_OR_RETURN(uint32_t ka, value_kinds(alt, path, depth + 1));
        k |= ka;
      }
      return k;
    }
  }
  FOLIO_ASSIGN_OR_RETURN(uint32_t k, generated_types(s, path));
  return collapse(k);
}

// The values a property must take in an object schema, if it is required
// and pinned by const / enum.
Result<std::optional<Json>> SchemaDocument::tag_values(const Json& obj, const std::string& prop,
                                                       const std::string& path) const {
  if (!obj.is_object() || !obj.contains("properties") || !obj["properties"].is_object() ||
      !obj["properties"].contains(prop)) {
    return std::optional<Json>();
  }
  const Json& req = obj.contains("required") ? obj["required"] : Json::array();
  if (!req.is_array() || std::find(req.begin(), req.end(), Json(prop)) == req.end()) {
    return std::optional<Json>();
  }
  FOLIO_ASSIGN_OR_RETURN(Json p, deref(obj["properties"][prop], path));
  if (p.is_object() && p.contains("const")) return std::optional<Json>(Json::array({p["const"]}));
  if (p.is_object() && p.contains("enum") && p["enum"].is_array()) {
    return std::optional<Json>(p["enum"]);
  }
  return std::optional<Json>();
}

Status SchemaDocument::check_one_of(const Json& alts, const std::string& path) const {
  std::vector<uint32_t> kinds;
  bool disjoint = true;
  for (size_t i = 0; i < alts.size(); ++i) {
    FOLIO_ASSIGN_OR_RETURN(uint32_t k, value_kinds(alts[i], path, 0));
    for (uint32_t prev : kinds) disjoint = disjoint && (prev & k) == 0;
    kinds.push_back(k);
  }
  if (disjoint) return Status();
  // Objects told apart by a tag property.
  std::vector<Json> objs;
  for (const Json& alt : alts) {
    FOLIO_ASSIGN_OR_RETURN(Json o, deref(alt, path));
    objs.push_back(std::move(o));
  }
  if (objs[0].is_object() && objs[0].contains("properties") && objs[0]["properties"].is_object()) {
    for (auto p = objs[0]["properties"].begin(); p != objs[0]["properties"].end(); ++p) {
      std::vector<Json> seen;
      bool ok = true;
      for (size_t i = 0; i < objs.size() && ok; ++i) {
        FOLIO_ASSIGN_OR_RETURN(uint32_t k, value_kinds(objs[i], path, 0));
        FOLIO_ASSIGN_OR_RETURN(std::optional<Json> tags, tag_values(objs[i], p.key(), path));
        ok = k == kObject && tags.has_value();
        if (!ok) break;
        for (const Json& v : *tags) {
          if (std::find(seen.begin(), seen.end(), v) != seen.end()) ok = false;
          seen.push_back(v);
        }
      }
      if (ok) return Status();
    }
  }
  return schema_error(path,
                      "oneOf: the alternatives are not provably exclusive (different types, or "
                      "objects with a required const / enum tag property with distinct values); "
                      "a grammar cannot forbid matching two of them: use anyOf if that is "
                      "what is meant");
}

}  // namespace folio::grammar::schema
