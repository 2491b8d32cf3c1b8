#include "jinja/json.h"

#include <algorithm>
#include <cmath>

#include "jinja/error.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {

Value from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxJsonDepth)
    fail(ErrorKind::kValue, "JSON input nested deeper than {} levels", kMaxJsonDepth);
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null:
    case T::discarded:
      return Value::none();
    case T::boolean:
      return Value::boolean(j.get<bool>());
    case T::number_integer:
      return Value::integer(j.get<int64_t>());
    case T::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case T::number_float:
      return Value::floating(j.get<double>());
    case T::string:
      return Value::string(j.get<std::string>());
    case T::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e, depth + 1));
      return Value::list(std::move(items));
    }
    case T::object: {
      Dict d;
      d.items.reserve(j.size());
      for (const auto& [k, v] : j.items())
        d.items.emplace_back(Value::string(k), from_json(v, depth + 1));
      return Value::dict(std::move(d));
    }
    case T::binary:
      fail(ErrorKind::kValue, "binary JSON values are not supported");
  }
  return Value::none();
}

void append_json_string(std::string* out, std::string_view s, bool ensure_ascii) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    size_t at = i;
    uint32_t c = py::next_cp(s, &i);
    switch (c) {
      case '"':
        out->append("\\\"");
        continue;
      case '\\':
        out->append("\\\\");
        continue;
      case '\n':
        out->append("\\n");
        continue;
      case '\r':
        out->append("\\r");
        continue;
      case '\t':
        out->append("\\t");
        continue;
      case '\b':
        out->append("\\b");
        continue;
      case '\f':
        out->append("\\f");
        continue;
      default:
        break;
    }
    bool invalid_byte = c >= 0xDC80 && c <= 0xDCFF && i == at + 1;
    if (c < 0x20 || (ensure_ascii && (c > 0x7E || invalid_byte))) {
      if (c >= 0x10000 && !invalid_byte) {
        uint32_t v = c - 0x10000;
        out->append(fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)));
      } else {
        out->append(fmt::format("\\u{:04x}", c));
      }
    } else {
      out->append(s.substr(at, i - at));
    }
  }
  out->push_back('"');
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py::float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
  }

  void dump(const Value& v, int level, std::string* out) {
    if (level > kMaxJsonDepth)
      fail(ErrorKind::kValue, "value nested deeper than {} levels", kMaxJsonDepth);
    switch (v.kind()) {
      case Value::Kind::kNone:
        out->append("null");
        return;
      case Value::Kind::kBool:
        out->append(v.as_bool() ? "true" : "false");
        return;
      case Value::Kind::kInt:
        out->append(std::to_string(v.as_int()));
        return;
      case Value::Kind::kFloat:
        out->append(float_json(v.as_float()));
        return;
      case Value::Kind::kString:
        append_json_string(out, v.str(), o_.ensure_ascii);
        return;
      case Value::Kind::kList:
        if (v.is_sequence()) {
          dump_list(v.list().items, level, out);
          return;
        }
        break;
      case Value::Kind::kDict:
        dump_dict(v.dict(), level, out);
        return;
      default:
        break;
    }
    fail(ErrorKind::kType, "Object of type {} is not JSON serializable", v.type_name());
  }

 private:
  void newline(int level, std::string* out) {
    out->push_back('\n');
    for (int i = 0; i < level; ++i) out->append(*o_.indent);
  }

  void dump_list(const std::vector<Value>& items, int level, std::string* out) {
    if (items.empty()) {
      out->append("[]");
      return;
    }
    out->push_back('[');
    if (o_.indent) newline(level + 1, out);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) {
        out->append(item_sep_);
        if (o_.indent) newline(level + 1, out);
      }
      dump(items[i], level + 1, out);
    }
    if (o_.indent) newline(level, out);
    out->push_back(']');
  }

  static std::string key_string(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::kString:
        return k.str();
      case Value::Kind::kFloat:
        return float_json(k.as_float());
      case Value::Kind::kBool:
        return k.as_bool() ? "true" : "false";
      case Value::Kind::kNone:
        return "null";
      case Value::Kind::kInt:
        return std::to_string(k.as_int());
      default:
        fail(ErrorKind::kType, "keys must be str, int, float, bool or None, not {}", k.type_name());
    }
  }

  void dump_dict(const Dict& d, int level, std::string* out) {
    if (d.items.empty()) {
      out->append("{}");
      return;
    }
    std::vector<const std::pair<Value, Value>*> items;
    for (const auto& kv : d.items) items.push_back(&kv);
    if (o_.sort_keys) {
      for (const auto* kv : items) {
        if (!kv->first.is_string() && !kv->first.is_number()) {
          fail(ErrorKind::kType, "'<' not supported between instances of '{}' and '{}'",
               kv->first.type_name(), items[0]->first.type_name());
        }
        if (kv->first.is_string() != items[0]->first.is_string()) {
          fail(ErrorKind::kType, "'<' not supported between instances of '{}' and '{}'",
               kv->first.type_name(), items[0]->first.type_name());
        }
      }
      std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) {
        if (a->first.is_string()) return a->first.str() < b->first.str();
        return a->first.to_double() < b->first.to_double();
      });
    }
    out->push_back('{');
    if (o_.indent) newline(level + 1, out);
    bool first = true;
    for (const auto* kv : items) {
      if (!first) {
        out->append(item_sep_);
        if (o_.indent) newline(level + 1, out);
      }
      first = false;
      append_json_string(out, key_string(kv->first), o_.ensure_ascii);
      out->append(o_.key_separator);
      dump(kv->second, level + 1, out);
    }
    if (o_.indent) newline(level, out);
    out->push_back('}');
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
};

}  // namespace

Value value_from_json(const nlohmann::ordered_json& j) {
  return from_json(j, 0);
}

std::string dump_json(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(v, 0, &out);
  return out;
}

}  // namespace folio::jinja
