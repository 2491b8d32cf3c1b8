// The JSON Schema side of json_schema_to_gbnf: which keywords constrain
// values and which are refused, the JSON kinds a schema allows, $ref
// resolution and allOf merging. Internal to the grammar layer.
//
// Paths in errors are JSON pointers into the schema document ("#/properties/a").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/status.h"

namespace folio::grammar::schema {

using Json = nlohmann::ordered_json;

// "json schema: at #PATH: message" (InvalidArgument).
template <typename... Args>
Status schema_error(const std::string& path, fmt::format_string<Args...> f, Args&&... args) {
  return invalid_argument("json schema: at #{}: {}", path,
                          fmt::format(f, std::forward<Args>(args)...));
}

// `s` has a keyword that constrains values (JSON Schema's validation and
// applicator keywords the converter knows), other than those in `except`.
// Anything else (title, description, unknown keywords) is an annotation.
bool has_validation(const Json& s, std::initializer_list<std::string_view> except = {});
// `s` without the given keys.
Json without(const Json& s, std::initializer_list<std::string_view> keys);
// `key` escaped for a JSON pointer (~ -> ~0, / -> ~1).
std::string pointer_token(std::string_view key);

// JSON kinds as bits. A type list is an OR; "integer" is kInteger, "number"
// is kNumber | kInteger, so & intersects type lists.
enum Kind : uint32_t {
  kNull = 1,
  kBoolean = 2,
  kInteger = 4,
  kNumber = 8,
  kString = 16,
  kArray = 32,
  kObject = 64,
};
inline constexpr uint32_t kAnyKind =
    kNull | kBoolean | kInteger | kNumber | kString | kArray | kObject;

// The kinds a JSON value is (an integral number is kInteger | kNumber).
uint32_t kind_of_value(const Json& v);

// A schema document: the root that $refs point into.
class SchemaDocument {
 public:
  explicit SchemaDocument(const Json& root) : root_(root) {}
  const Json& root() const { return root_; }

  // The target of a $ref: "#" or a JSON pointer "#/..." into this document.
  Result<const Json*> resolve(const Json& ref, const std::string& path) const;
  // `s` with its top-level $ref replaced by the target (merged with the
  // siblings of the $ref), repeatedly.
  Result<Json> deref(Json s, const std::string& path) const;
  // One schema that allows what both allow (allOf): types intersected,
  // properties and required united (a property in both: merged), bounds
  // tightened, enums intersected, additionalProperties false / schemas
  // applied to the other part's properties. Errors where that is not
  // possible (both set a pattern, ...) or nothing would be allowed.
  Result<Json> merge(const Json& a, const Json& b, const std::string& path, int depth = 0) const;

  // A keyword the grammar cannot enforce (not, if, contains, multipleOf, ...).
  static Status check_unsupported(const Json& s, const std::string& path);
  // The kinds "type" allows (all when absent).
  static Result<uint32_t> explicit_types(const Json& s, const std::string& path);
  static Json types_json(uint32_t kinds);
  // The kinds to generate: "type", else the kinds whose keywords appear
  // (properties: object, items: array, ...), else all.
  static Result<uint32_t> generated_types(const Json& s, const std::string& path);

  // oneOf is generated as anyOf, which is exact only when no value can
  // match two alternatives: the alternatives must allow disjoint kinds, or
  // be objects with a required property pinned by const / enum to distinct
  // values. Otherwise an error.
  Status check_one_of(const Json& alternatives, const std::string& path) const;

 private:
  Result<uint32_t> value_kinds(const Json& s, const std::string& path, int depth) const;
  Result<std::optional<Json>> tag_values(const Json& obj, const std::string& prop,
                                         const std::string& path) const;

  const Json& root_;
};

}  // namespace folio::grammar::schema
