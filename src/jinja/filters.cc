// Builtin filters: jinja2 3.1's semantics (filters.py), with tojson as
// Hugging Face overrides it (json.dumps, ensure_ascii=False). The lazy
// filters (map, select, reject, selectattr, rejectattr, unique, items, batch,
// slice) return single-pass "generator" iterators, as in Python, so `|list`,
// `|length` and `|tojson` behave as they do there.
#include <algorithm>
#include <cmath>
#include <map>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/json.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {

Value generator(std::vector<Value> items) {
  return Value::iterator(std::move(items), "generator");
}

// len() with Python's errors.
int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(py::length(v.str()));
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.dict().items.size());
    case Value::Kind::kList:
      if (v.seq_kind() != SeqKind::kIterator) return static_cast<int64_t>(v.list().items.size());
      break;
    default:
      break;
  }
  fail(ErrorKind::kType, "object of type '{}' has no len()", v.type_name());
}

// make_attrgetter: "a.b.0" -> getitem chain (digit parts as integers).
std::vector<Value> attribute_parts(const Value& attr) {
  std::vector<Value> parts;
  if (attr.is_none() || attr.is_undefined()) return parts;
  if (!attr.is_string()) return {attr};
  for (const auto& p : py::split(attr.str(), std::string("."), -1)) {
    bool digits =
        !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && p.size() < 18) {
      parts.push_back(Value::integer(std::stoll(p)));
    } else {
      parts.push_back(Value::string(p));
    }
  }
  return parts;
}

Value get_path(Interpreter& in, Value item, const std::vector<Value>& parts,
               const Value* dflt = nullptr) {
  for (const auto& part : parts) {
    item = in.getitem(item, part);
    if (dflt && item.is_undefined()) item = *dflt;
  }
  return item;
}

// ignore_case: lower-case strings for case-insensitive comparisons.
Value fold_case(const Value& v) {
  if (v.is_string()) return Value::string(py::lower(v.str()));
  return v;
}

// Python sorted(): stable, TypeError on incomparable items.
void py_sort(Interpreter& in, std::vector<std::pair<Value, Value>>* keyed, bool reverse) {
  auto less = [&](const Value& a, const Value& b) { return in.compare(CmpOp::kLt, a, b); };
  if (reverse) {
    std::stable_sort(keyed->begin(), keyed->end(),
                     [&](const auto& a, const auto& b) { return less(b.first, a.first); });
  } else {
    std::stable_sort(keyed->begin(), keyed->end(),
                     [&](const auto& a, const auto& b) { return less(a.first, b.first); });
  }
}

// ---------------------------------------------------------------------------

Value f_tojson(Interpreter&, const Value& v, CallArgs& call) {
  Args a("tojson", call, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.get_bool(0, false);
  if (a.has(1) && !a[1].is_none()) {
    const Value& ind = a[1];
    if (ind.is_string()) {
      o.indent = ind.str();
    } else if (ind.is_int() || ind.is_bool()) {
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, ind.as_int())), ' ');
    } else {
      fail(ErrorKind::kType, "can't multiply sequence by non-int of type '{}'", ind.type_name());
    }
  }
  if (a.has(2) && !a[2].is_none()) {
    const Value& sep = a[2];
    if (!sep.is_sequence() || sep.list().items.size() != 2 || !sep.list().items[0].is_string() ||
        !sep.list().items[1].is_string()) {
      fail(ErrorKind::kValue, "separators must be a pair of strings");
    }
    o.item_separator = sep.list().items[0].str();
    o.key_separator = sep.list().items[1].str();
  }
  o.sort_keys = a.get_bool(3, false);
  return Value::string(dump_json(v, o));
}

Value f_length(Interpreter&, const Value& v, CallArgs& call) {
  Args a("length", call, {});
  return Value::integer(py_len(v));
}

Value f_string(Interpreter&, const Value& v, CallArgs& call) {
  Args a("string", call, {});
  return to_string_value(v);
}

Value f_trim(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_trim", call, {"chars"});
  Value s = to_string_value(v);
  return Value::string(py::strip(s.str(), a.get_str(0, true), true, true), s.is_safe());
}

Value f_upper(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_upper", call, {});
  Value s = to_string_value(v);
  return Value::string(py::upper(s.str()), s.is_safe());
}

Value f_lower(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_lower", call, {});
  Value s = to_string_value(v);
  return Value::string(py::lower(s.str()), s.is_safe());
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_capitalize", call, {});
  Value s = to_string_value(v);
  return Value::string(py::capitalize(s.str()), s.is_safe());
}

Value f_title(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_title", call, {});
  // Words begin after runs of [-\s({\[<]; each piece: first char upper, rest lower.
  const std::string s = to_string_value(v).str();
  std::string out;
  size_t i = 0;
  bool word_start = true;
  while (i < s.size()) {
    size_t at = i;
    uint32_t c = py::next_cp(s, &i);
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c);
    std::string_view ch(s.data() + at, i - at);
    if (sep) {
      out.append(ch);
      word_start = true;
    } else {
      out += word_start ? py::upper(ch) : py::lower(ch);
      word_start = false;
    }
  }
  return Value::string(std::move(out));
}

Value f_default(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_default", call, {"default_value", "boolean"});
  if (v.is_undefined() || (a.get_bool(1, false) && !v.truthy())) return a.get(0, Value::string(""));
  return v;
}

Value f_join(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("sync_do_join", call, {"d", "attribute"});
  std::string sep = a.has(0) ? a[0].to_str() : "";
  std::vector<Value> parts = attribute_parts(a.get(1, Value::none()));
  std::string out;
  bool first = true;
  for (const auto& item : in.iterate(v)) {
    if (!first) out += sep;
    first = false;
    (parts.empty() ? item : get_path(in, item, parts)).append_str(&out);
    in.check_string_size(out.size());
  }
  return Value::string(std::move(out));
}

Value f_items(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_items", call, {});
  if (v.is_undefined()) return generator({});
  if (!v.is_dict())
    return Value::iterator({}, "generator", "Can only get item pairs from a mapping.");
  std::vector<Value> items;
  for (const auto& [k, val] : v.dict().items)
    items.push_back(Value::list({k, val}, SeqKind::kTuple));
  return generator(std::move(items));
}

Value f_list(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("sync_do_list", call, {});
  return Value::list(in.iterate(v));
}

Value f_first(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("sync_do_first", call, {});
  if (v.is_list() && v.seq_kind() != SeqKind::kIterator) {
    if (v.list().items.empty()) return Value::undefined_hint("No first item, sequence was empty.");
    return v.list().items.front();
  }
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined_hint("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_last", call, {});
  if (v.is_list() && v.seq_kind() == SeqKind::kIterator) {
    fail(ErrorKind::kType, "'{}' object is not reversible", v.type_name());
  }
  if (!v.is_list() && !v.is_string() && !v.is_dict() && !v.is_undefined()) {
    fail(ErrorKind::kType, "'{}' object is not reversible", v.type_name());
  }
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined_hint("No last item, sequence was empty.");
  return items.back();
}

Value f_reverse(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_reverse", call, {});
  if (v.is_string()) {
    std::vector<size_t> off = py::offsets(v.str());
    std::string out;
    for (size_t k = off.size() - 1; k > 0; --k)
      out.append(v.str(), off[k - 1], off[k] - off[k - 1]);
    return Value::string(std::move(out), v.is_safe());
  }
  std::vector<Value> items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  if (v.is_indexable()) {
    const char* type = v.seq_kind() == SeqKind::kList    ? "list_reverseiterator"
                       : v.seq_kind() == SeqKind::kRange ? "range_iterator"
                                                         : "reversed";
    return Value::iterator(std::move(items), type);
  }
  if (v.is_dict()) return Value::iterator(std::move(items), "dict_reversekeyiterator");
  return Value::list(std::move(items));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_replace", call, {"old", "new", "count"}, 2);
  int64_t count = a.has(2) && !a[2].is_none() ? a.get_int(2, -1) : -1;
  std::string out = py::replace(v.to_str(), a[0].to_str(), a[1].to_str(), count);
  in.check_string_size(out.size());
  return Value::string(std::move(out));
}

Value f_indent(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_indent", call, {"width", "first", "blank"});
  std::string indention;
  if (a.has(0) && a[0].is_string()) {
    indention = a[0].str();
  } else {
    int64_t w = a.get_int(0, 4);
    in.check_string_size(static_cast<size_t>(std::max<int64_t>(0, w)));
    indention = std::string(static_cast<size_t>(std::max<int64_t>(0, w)), ' ');
  }
  if (!v.is_string())
    fail(ErrorKind::kType, "unsupported operand type(s) for +=: '{}' and 'str'", v.type_name());
  bool safe = v.is_safe();
  std::string s = v.str() + "\n";
  std::vector<std::string> lines = py::splitlines(s, false);
  std::string rv;
  if (a.get_bool(2, false)) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
      in.check_string_size(rv.size());
    }
  }
  if (a.get_bool(1, false)) rv = indention + rv;
  return Value::string(std::move(rv), safe);
}

Value f_safe(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_mark_safe", call, {});
  return Value::string(v.to_str(), true);
}

Value f_escape(Interpreter&, const Value& v, CallArgs& call) {
  Args a("escape", call, {});
  if (v.is_safe()) return v;
  return Value::string(py::escape_html(v.to_str()), true);
}

Value f_forceescape(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_forceescape", call, {});
  return Value::string(py::escape_html(v.to_str()), true);
}

Value f_int(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_int", call, {"default", "base"});
  Value dflt = a.get(0, Value::integer(0));
  int64_t base = a.get_int(1, 10);
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = py::strip(v.str(), std::nullopt, true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits.push_back(c);
    }
    int b = static_cast<int>(base);
    std::string body = digits;
    bool neg = false;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
      neg = body[0] == '-';
      body = body.substr(1);
    }
    if (body.size() > 2 && body[0] == '0' &&
        ((b == 16 && (body[1] == 'x' || body[1] == 'X')) ||
         (b == 8 && (body[1] == 'o' || body[1] == 'O')) ||
         (b == 2 && (body[1] == 'b' || body[1] == 'B')))) {
      body = body.substr(2);
    }
    if (!body.empty() && b >= 2 && b <= 36) {
      errno = 0;
      char* end = nullptr;
      long long r = std::strtoll(body.c_str(), &end, b);
      if (end && *end == '\0' && errno == 0 && body.find_first_of("+- ") == std::string::npos) {
        return Value::integer(neg ? -r : r);
      }
    }
    // int(float(value))
    char* end = nullptr;
    std::string t = py::lower(s);
    double d = std::strtod(s.c_str(), &end);
    bool ok = !s.empty() && end && *end == '\0' && t.find("0x") == std::string::npos;
    if (ok && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(d));
    return dflt;
  }
  return dflt;
}

Value f_float(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_float", call, {"default"});
  Value dflt = a.get(0, Value::floating(0.0));
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_number()) return Value::floating(v.to_double());
  if (v.is_string()) {
    std::string s = py::strip(v.str(), std::nullopt, true, true);
    std::string t = py::lower(s);
    if (t == "inf" || t == "+inf" || t == "infinity" || t == "+infinity")
      return Value::floating(INFINITY);
    if (t == "-inf" || t == "-infinity") return Value::floating(-INFINITY);
    if (t == "nan" || t == "+nan" || t == "-nan") return Value::floating(NAN);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0' && t.find("0x") == std::string::npos &&
        t.find("inf") == std::string::npos && t.find("nan") == std::string::npos) {
      return Value::floating(d);
    }
  }
  return dflt;
}

Value f_abs(Interpreter&, const Value& v, CallArgs& call) {
  Args a("abs", call, {});
  if (v.is_float()) return Value::floating(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) fail(ErrorKind::kOverflow, "integer overflow");
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) raise_undefined(v);
  fail(ErrorKind::kType, "bad operand type for abs(): '{}'", v.type_name());
}

Value f_round(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_round", call, {"precision", "method"});
  int64_t precision = a.get_int(0, 0);
  std::string method = a.has(1) ? a[1].to_str() : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    fail(ErrorKind::kRuntime, "method must be common, ceil or floor");
  }
  if (v.is_undefined()) raise_undefined(v);
  if (!v.is_number())
    fail(ErrorKind::kType, "type {} doesn't define __round__ method", v.type_name());
  if (method == "common" && !v.is_float()) return Value::integer(v.as_int());
  double x = v.to_double();
  double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::floating(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::floating(std::floor(x * scale) / scale);
  // Python round(): round-half-even on the exact decimal value.
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 30)),
                x);
  double r = precision >= 0 ? std::strtod(buf, nullptr) : std::nearbyint(x * scale) / scale;
  return Value::floating(r);
}

Value f_count(Interpreter& in, const Value& v, CallArgs& call) {
  return f_length(in, v, call);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_wordcount", call, {});
  std::string s = v.to_str();
  int64_t n = 0;
  bool in_word = false;
  size_t i = 0;
  while (i < s.size()) {
    uint32_t c = py::next_cp(s, &i);
    bool w = c == '_' || py::is_alpha(c) || py::is_digit(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value f_center(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_center", call, {"width"});
  CallArgs inner;
  inner.args.push_back(Value::integer(a.get_int(0, 80)));
  return call_method(in, to_string_value(v), "center", inner);
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& call) {
  Args a("do_truncate", call, {"length", "killwords", "end", "leeway"});
  int64_t length = a.get_int(0, 255);
  bool killwords = a.get_bool(1, false);
  std::string end = a.has(2) ? a[2].to_str() : "...";
  int64_t leeway = a.has(3) && !a[3].is_none() ? a.get_int(3, 5) : 5;
  int64_t end_len = static_cast<int64_t>(py::length(end));
  if (length < end_len) fail(ErrorKind::kRuntime, "expected length >= {}, got {}", end_len, length);
  std::string s = v.to_str();
  std::vector<size_t> off = py::offsets(s);
  int64_t n = static_cast<int64_t>(off.size()) - 1;
  if (n <= length + leeway) return v.is_string() ? v : Value::string(s);
  std::string head = s.substr(0, off[static_cast<size_t>(length - end_len)]);
  if (killwords) return Value::string(head + end);
  size_t sp = head.rfind(' ');
  if (sp != std::string::npos) head = head.substr(0, sp);
  return Value::string(head + end);
}

Value f_format(Interpreter& in, const Value& v, CallArgs& call) {
  if (!call.args.empty() && !call.kwargs.empty()) {
    fail(ErrorKind::kRuntime, "can't handle positional and keyword arguments at the same time");
  }
  Value fmt_args;
  if (!call.kwargs.empty()) {
    Dict d;
    for (auto& [k, val] : call.kwargs) d.set(Value::string(k), val);
    fmt_args = Value::dict(std::move(d));
  } else {
    fmt_args = Value::list(call.args, SeqKind::kTuple);
  }
  Value s = to_string_value(v);
  return Value::string(py_percent_format(in, s.str(), fmt_args, s.is_safe()), s.is_safe());
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_attr", call, {"name"}, 1);
  std::string name = a[0].to_str();
  if (v.is_dict()) {
    Value m = method_attr(v, name);
    return m.is_undefined() && !m.undefined_info() ? Value::undefined_attr(v, name) : m;
  }
  return in.getattr(v, name);
}

// map(attribute=..., default=...) or map('filter', args...).
Value f_map(Interpreter& in, const Value& v, CallArgs& call) {
  if (!v.truthy()) return generator({});
  std::vector<Value> out;
  bool by_attr = call.args.empty();
  Value attribute, dflt;
  bool has_default = false;
  FilterFn filter = nullptr;
  CallArgs rest;
  if (by_attr) {
    bool found = false;
    for (auto& [k, val] : call.kwargs) {
      if (k == "attribute") {
        attribute = val;
        found = true;
      } else if (k == "default") {
        dflt = val;
        has_default = !val.is_none();
      } else {
        fail(ErrorKind::kRuntime, "Unexpected keyword argument '{}'", k);
      }
    }
    if (!found) fail(ErrorKind::kRuntime, "map requires a filter argument");
  } else {
    std::string name = call.args[0].to_str();
    filter = find_filter(name);
    if (!filter) fail(ErrorKind::kRuntime, "No filter named '{}'.", name);
    rest.args.assign(call.args.begin() + 1, call.args.end());
    rest.kwargs = call.kwargs;
  }
  std::vector<Value> parts = attribute_parts(attribute);
  for (const auto& item : in.iterate(v)) {
    if (by_attr) {
      out.push_back(get_path(in, item, parts, has_default ? &dflt : nullptr));
    } else {
      CallArgs args = rest;
      out.push_back(filter(in, item, args));
    }
  }
  return generator(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select_or_reject(Interpreter& in, const Value& v, CallArgs& call, bool select, bool by_attr) {
  if (!v.truthy()) return generator({});
  size_t off = 0;
  std::vector<Value> parts;
  if (by_attr) {
    if (call.args.empty()) fail(ErrorKind::kRuntime, "Missing parameter for attribute name");
    parts = attribute_parts(call.args[0]);
    off = 1;
  }
  TestFn test = nullptr;
  CallArgs rest;
  if (call.args.size() > off) {
    std::string name = call.args[off].to_str();
    test = find_test(name);
    if (!test) fail(ErrorKind::kRuntime, "No test named '{}'.", name);
    rest.args.assign(call.args.begin() + static_cast<long>(off) + 1, call.args.end());
    rest.kwargs = call.kwargs;
  }
  std::vector<Value> out;
  for (const auto& item : in.iterate(v)) {
    Value x = by_attr ? get_path(in, item, parts) : item;
    bool ok;
    if (test) {
      CallArgs args = rest;
      ok = test(in, x, args);
    } else {
      ok = x.truthy();
    }
    if (ok == select) out.push_back(item);
  }
  return generator(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& c) {
  return select_or_reject(in, v, c, true, false);
}
Value f_reject(Interpreter& in, const Value& v, CallArgs& c) {
  return select_or_reject(in, v, c, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& c) {
  return select_or_reject(in, v, c, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& c) {
  return select_or_reject(in, v, c, false, true);
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("sync_do_unique", call, {"case_sensitive", "attribute"});
  bool case_sensitive = a.get_bool(0, false);
  std::vector<Value> parts = attribute_parts(a.get(1, Value::none()));
  std::vector<Value> seen, out;
  for (const auto& item : in.iterate(v)) {
    Value key = parts.empty() ? item : get_path(in, item, parts);
    if (!case_sensitive) key = fold_case(key);
    if (!key.hashable()) fail(ErrorKind::kType, "unhashable type: '{}'", key.type_name());
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return generator(std::move(out));
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_sort", call, {"reverse", "case_sensitive", "attribute"});
  bool reverse = a.get_bool(0, false), case_sensitive = a.get_bool(1, false);
  std::vector<std::vector<Value>> attrs;
  Value attribute = a.get(2, Value::none());
  if (attribute.is_string()) {
    for (const auto& p : py::split(attribute.str(), std::string(","), -1)) {
      attrs.push_back(attribute_parts(Value::string(p)));
    }
  } else if (!attribute.is_none()) {
    attrs.push_back({attribute});
  } else {
    attrs.push_back({});
  }
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& item : in.iterate(v)) {
    std::vector<Value> key;
    for (const auto& parts : attrs) {
      Value k = get_path(in, item, parts);
      key.push_back(case_sensitive ? k : fold_case(k));
    }
    keyed.emplace_back(Value::list(std::move(key)), item);
  }
  py_sort(in, &keyed, reverse);
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_dictsort", call, {"case_sensitive", "by", "reverse"});
  bool case_sensitive = a.get_bool(0, false);
  std::string by = a.has(1) ? a[1].to_str() : "key";
  if (by != "key" && by != "value")
    fail(ErrorKind::kRuntime, "You can only sort by either \"key\" or \"value\"");
  if (!v.is_dict())
    fail(ErrorKind::kUndefined, "'{}' has no attribute 'items'", v.object_type_repr());
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.dict().items) {
    Value key = by == "key" ? k : val;
    keyed.emplace_back(case_sensitive ? key : fold_case(key),
                       Value::list({k, val}, SeqKind::kTuple));
  }
  py_sort(in, &keyed, a.get_bool(2, false));
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& call, bool want_min) {
  Args a(want_min ? "do_min" : "do_max", call, {"case_sensitive", "attribute"});
  bool case_sensitive = a.get_bool(0, false);
  std::vector<Value> parts = attribute_parts(a.get(1, Value::none()));
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined_hint("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    Value k = parts.empty() ? item : get_path(in, item, parts);
    return case_sensitive ? k : fold_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (in.compare(CmpOp::kLt, want_min ? k : best_key, want_min ? best_key : k)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value f_min(Interpreter& in, const Value& v, CallArgs& c) {
  return min_max(in, v, c, true);
}
Value f_max(Interpreter& in, const Value& v, CallArgs& c) {
  return min_max(in, v, c, false);
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("sync_do_sum", call, {"attribute", "start"});
  std::vector<Value> parts = attribute_parts(a.get(0, Value::none()));
  Value total = a.get(1, Value::integer(0));
  for (const auto& item : in.iterate(v)) {
    total = in.binary(BinOp::kAdd, total, parts.empty() ? item : get_path(in, item, parts));
  }
  return total;
}

Value f_batch(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("do_batch", call, {"linecount", "fill_with"}, 1);
  int64_t n = a.get_int(0, 1);
  if (n <= 0) fail(ErrorKind::kValue, "batch size must be positive");
  std::vector<Value> out, tmp;
  for (const auto& item : in.iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (a.has(1) && !a[1].is_none()) {
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(a[1]);
    }
    out.push_back(Value::list(std::move(tmp)));
  }
  return generator(std::move(out));
}

Value f_slice(Interpreter& in, const Value& v, CallArgs& call) {
  Args a("sync_do_slice", call, {"slices", "fill_with"}, 1);
  int64_t slices = a.get_int(0, 1);
  if (slices <= 0) fail(ErrorKind::kZeroDivision, "integer division or modulo by zero");
  in.check_list_size(static_cast<size_t>(slices));
  std::vector<Value> seq = in.iterate(v);
  int64_t length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices, extra = length % slices, offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (a.has(1) && !a[1].is_none() && k >= extra) tmp.push_back(a[1]);
    out.push_back(Value::list(std::move(tmp)));
  }
  return generator(std::move(out));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

// Sorted by name (binary search).
constexpr FilterEntry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_count},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", f_slice},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  auto it = std::lower_bound(std::begin(kFilters), std::end(kFilters), name,
                             [](const FilterEntry& e, std::string_view n) { return e.name < n; });
  if (it != std::end(kFilters) && it->name == name) return it->fn;
  return nullptr;
}

}  // namespace folio::jinja
