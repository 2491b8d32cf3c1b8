// Methods of str, dict, list and tuple values, as the sandbox exposes them,
// plus the Args binder shared by filters, tests and globals.
#include <algorithm>
#include <set>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/objects.h"
#include "jinja/py_string.h"

namespace folio::jinja {

// ---------------------------------------------------------------------------
// Args

Args::Args(std::string_view func, CallArgs& call, std::initializer_list<std::string_view> names,
           size_t required)
    : func_(func), names_(names), bound_(names.size(), nullptr) {
  if (call.args.size() > names_.size()) {
    fail(ErrorKind::kType, "{}() takes at most {} argument{} ({} given)", func_, names_.size(),
         names_.size() == 1 ? "" : "s", call.args.size());
  }
  for (size_t i = 0; i < call.args.size(); ++i) bound_[i] = &call.args[i];
  for (const auto& [k, v] : call.kwargs) {
    auto it = std::find(names_.begin(), names_.end(), k);
    if (it == names_.end())
      fail(ErrorKind::kType, "{}() got an unexpected keyword argument '{}'", func_, k);
    size_t i = static_cast<size_t>(it - names_.begin());
    if (bound_[i]) fail(ErrorKind::kType, "{}() got multiple values for argument '{}'", func_, k);
    bound_[i] = &v;
  }
  for (size_t i = 0; i < required; ++i) {
    if (!bound_[i]) fail(ErrorKind::kType, "{}() missing required argument '{}'", func_, names_[i]);
  }
}

int64_t Args::get_int(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const Value& v = *bound_[i];
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_undefined())
    throw JinjaError(ErrorKind::kUndefined,
                     v.undefined_info() ? v.undefined_info()->message() : "undefined");
  fail(ErrorKind::kType, "'{}' object cannot be interpreted as an integer", v.type_name());
}

std::optional<std::string> Args::get_str(size_t i, bool none_ok) const {
  if (!has(i)) return std::nullopt;
  const Value& v = *bound_[i];
  if (v.is_string()) return v.str();
  if (none_ok && v.is_none()) return std::nullopt;
  fail(ErrorKind::kType, "{}() argument '{}' must be str, not {}", func_, names_[i], v.type_name());
}

Value to_string_value(const Value& v) {
  if (v.is_string()) return v;
  return Value::string(v.to_str());
}

namespace {

// ---------------------------------------------------------------------------
// Method tables

const std::set<std::string_view>& str_methods() {
  static const std::set<std::string_view> k = {
      "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
      "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
      "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
      "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
      "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
      "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
      "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
      "swapcase",     "title",       "translate", "upper",      "zfill"};
  return k;
}
const std::set<std::string_view> kDictSafe = {"copy", "fromkeys", "get", "items", "keys", "values"};
const std::set<std::string_view> kDictUnsafe = {"clear", "pop", "popitem", "setdefault", "update"};
const std::set<std::string_view> kListSafe = {"copy", "count", "index"};
const std::set<std::string_view> kListUnsafe = {"append", "clear",  "extend",  "insert",
                                                "pop",    "remove", "reverse", "sort"};

[[noreturn]] void unsupported_method(const Value& self, const std::string& name) {
  fail(ErrorKind::kUnsupported, "{}.{}() is not supported by folio's template engine",
       self.type_name(), name);
}

void no_args(const std::string& name, CallArgs& call) {
  Args a(name, call, {});
}

// Argument that must be a str (TypeError otherwise, with Python's wording).
const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) fail(ErrorKind::kType, "{} must be str, not {}", what, v.type_name());
  return v.str();
}

std::optional<int64_t> opt_index(const Args& a, size_t i) {
  if (!a.has(i) || a[i].is_none()) return std::nullopt;
  return a.get_int(i, 0);
}

Value str_list(const std::vector<std::string>& parts, bool safe) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::string(p, safe));
  return Value::list(std::move(items));
}

// startswith / endswith: a str or a tuple of str, optional start / end.
bool affix_match(const Value& self, const Args& a, bool prefix, const char* fname) {
  const std::string& s = self.str();
  std::vector<size_t> off = py::offsets(s);
  int64_t len = static_cast<int64_t>(off.size()) - 1;
  int64_t b = opt_index(a, 1).value_or(0), e = opt_index(a, 2).value_or(len);
  if (b < 0) b = std::max<int64_t>(0, b + len);
  if (e < 0) e = std::max<int64_t>(0, e + len);
  e = std::min(e, len);
  if (b > len) return false;
  std::string_view window =
      b <= e ? std::string_view(s).substr(off[b], off[e] - off[b]) : std::string_view();
  auto check = [&](const Value& affix) {
    if (!affix.is_string()) {
      fail(ErrorKind::kType, "{} first arg must be str or a tuple of str, not {}", fname,
           affix.type_name());
    }
    if (b > e) return false;
    const std::string& x = affix.str();
    if (x.size() > window.size()) return false;
    return prefix ? window.substr(0, x.size()) == x : window.substr(window.size() - x.size()) == x;
  };
  const Value& arg = a[0];
  if (arg.is_list() && arg.seq_kind() == SeqKind::kTuple) {
    for (const auto& item : arg.list().items) {
      if (check(item)) return true;
    }
    return false;
  }
  return check(arg);
}

std::string pad(const std::string& s, int64_t width, const std::string& fill, int where) {
  int64_t len = static_cast<int64_t>(py::length(s));
  if (width <= len) return s;
  int64_t total = width - len;
  int64_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

std::string fill_char(const Args& a, size_t i, const char* fname) {
  if (!a.has(i)) return " ";
  const Value& v = a[i];
  if (!v.is_string() || py::length(v.str()) != 1) {
    fail(ErrorKind::kType, "The fill character must be exactly one character long");
  }
  (void)fname;
  return v.str();
}

Value call_str_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& call) {
  const std::string& s = self.str();
  bool safe = self.is_safe();
  // Markup methods escape str arguments they splice in.
  auto splice = [&](const Value& v) {
    return safe && !v.is_safe() ? py::escape_html(v.str()) : v.str();
  };
  auto text = [&](std::string r) {
    in.check_string_size(r.size());
    return Value::string(std::move(r), safe);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Args a(name, call, {"chars"});
    std::optional<std::string> chars = a.get_str(0, true);
    return text(py::strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    Args a(name, call, {"sep", "maxsplit"});
    std::optional<std::string> sep = a.get_str(0, true);
    if (sep && sep->empty()) fail(ErrorKind::kValue, "empty separator");
    int64_t maxsplit = a.get_int(1, -1);
    return str_list(name == "split" ? py::split(s, sep, maxsplit) : py::rsplit(s, sep, maxsplit),
                    safe);
  }
  if (name == "splitlines") {
    Args a(name, call, {"keepends"});
    return str_list(py::splitlines(s, a.get_bool(0, false)), safe);
  }
  if (name == "startswith" || name == "endswith") {
    Args a(name, call, {"prefix", "start", "end"}, 1);
    return Value::boolean(affix_match(self, a, name == "startswith", name.c_str()));
  }
  if (name == "upper") {
    no_args(name, call);
    return text(py::upper(s));
  }
  if (name == "lower" || name == "casefold") {
    no_args(name, call);
    return text(py::lower(s));
  }
  if (name == "title") {
    no_args(name, call);
    return text(py::title(s));
  }
  if (name == "capitalize") {
    no_args(name, call);
    return text(py::capitalize(s));
  }
  if (name == "swapcase") {
    no_args(name, call);
    return text(py::swapcase(s));
  }
  if (name == "replace") {
    Args a(name, call, {"old", "new", "count"}, 2);
    const std::string& old = need_str(a[0], "replace() argument 1");
    need_str(a[1], "replace() argument 2");
    std::string repl = splice(a[1]);
    std::string from = safe && !a[0].is_safe() ? py::escape_html(old) : old;
    return text(py::replace(s, from, repl, a.get_int(2, -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    Args a(name, call, {"sub", "start", "end"}, 1);
    const std::string& sub = need_str(a[0], "must be str");
    int64_t r = py::find(s, sub, opt_index(a, 1), opt_index(a, 2), name[0] == 'r');
    if (r < 0 && (name == "index" || name == "rindex"))
      fail(ErrorKind::kValue, "substring not found");
    return Value::integer(r);
  }
  if (name == "count") {
    Args a(name, call, {"sub"}, 1);
    return Value::integer(py::count(s, need_str(a[0], "must be str")));
  }
  if (name == "join") {
    Args a(name, call, {"iterable"}, 1);
    std::string out;
    bool first = true;
    for (const auto& item : in.iterate(a[0])) {
      if (!item.is_string()) {
        fail(ErrorKind::kType, "sequence item {}: expected str instance, {} found", 0,
             item.type_name());
      }
      if (!first) out += s;
      first = false;
      out += splice(item);
      in.check_string_size(out.size());
    }
    return text(std::move(out));
  }
  if (name == "format") {
    std::string out = py_format(in, s, call, safe);
    return text(std::move(out));
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    Args a(name, call, {"width", "fillchar"}, 1);
    int64_t width = a.get_int(0, 0);
    in.check_string_size(static_cast<size_t>(std::max<int64_t>(0, width)));
    return text(pad(s, width, fill_char(a, 1, name.c_str()),
                    name == "center"  ? 0
                    : name == "ljust" ? -1
                                      : 1));
  }
  if (name == "zfill") {
    Args a(name, call, {"width"}, 1);
    int64_t width = a.get_int(0, 0);
    in.check_string_size(static_cast<size_t>(std::max<int64_t>(0, width)));
    int64_t len = static_cast<int64_t>(py::length(s));
    if (width <= len) return text(s);
    std::string zeros(static_cast<size_t>(width - len), '0');
    if (!s.empty() && (s[0] == '+' || s[0] == '-'))
      return text(s.substr(0, 1) + zeros + s.substr(1));
    return text(zeros + s);
  }
  if (name == "partition" || name == "rpartition") {
    Args a(name, call, {"sep"}, 1);
    const std::string& sep = need_str(a[0], "must be str");
    if (sep.empty()) fail(ErrorKind::kValue, "empty separator");
    size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (at == std::string::npos) {
      parts = name == "partition"
                  ? std::vector<Value>{Value::string(s, safe), Value::string("", safe),
                                       Value::string("", safe)}
                  : std::vector<Value>{Value::string("", safe), Value::string("", safe),
                                       Value::string(s, safe)};
    } else {
      parts = {Value::string(s.substr(0, at), safe), Value::string(sep, safe),
               Value::string(s.substr(at + sep.size()), safe)};
    }
    return Value::list(std::move(parts), SeqKind::kTuple);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    Args a(name, call, {"affix"}, 1);
    const std::string& x = need_str(a[0], "must be str");
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return text(s.substr(x.size()));
    if (name == "removesuffix" && !x.empty() && s.size() >= x.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return text(s.substr(0, s.size() - x.size()));
    }
    return text(s);
  }
  auto all_of = [&](auto pred) {
    if (s.empty()) return Value::boolean(false);
    size_t i = 0;
    while (i < s.size()) {
      if (!pred(py::next_cp(s, &i))) return Value::boolean(false);
    }
    return Value::boolean(true);
  };
  if (name == "isspace") {
    no_args(name, call);
    return all_of(py::is_space);
  }
  if (name == "isalpha") {
    no_args(name, call);
    return all_of(py::is_alpha);
  }
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    no_args(name, call);
    return all_of(py::is_digit);
  }
  if (name == "isalnum") {
    {
      no_args(name, call);
      return all_of([](uint32_t c) { return py::is_alpha(c) || py::is_digit(c); });
    }
  }
  if (name == "isascii") {
    no_args(name, call);
    return Value::boolean(std::all_of(s.begin(), s.end(),
                                      [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  }
  if (name == "islower" || name == "isupper") {
    no_args(name, call);
    bool want_lower = name == "islower";
    bool cased = false;
    size_t i = 0;
    while (i < s.size()) {
      uint32_t c = py::next_cp(s, &i);
      if (py::is_upper(c)) {
        if (want_lower) return Value::boolean(false);
        cased = true;
      } else if (py::is_lower(c)) {
        if (!want_lower) return Value::boolean(false);
        cased = true;
      }
    }
    return Value::boolean(cased);
  }
  unsupported_method(self, name);
}

Value call_dict_method(Interpreter& in, const Value& self, const std::string& name,
                       CallArgs& call) {
  const Dict& d = self.dict();
  if (name == "get") {
    Args a("get", call, {"key", "default"}, 1);
    if (!a[0].hashable()) fail(ErrorKind::kType, "unhashable type: '{}'", a[0].type_name());
    if (const Value* v = d.find(a[0])) return *v;
    return a.get(1, Value::none());
  }
  if (name == "items" || name == "keys" || name == "values") {
    no_args(name, call);
    std::vector<Value> items;
    items.reserve(d.items.size());
    for (const auto& [k, v] : d.items) {
      if (name == "items") {
        items.push_back(Value::list({k, v}, SeqKind::kTuple));
      } else {
        items.push_back(name == "keys" ? k : v);
      }
    }
    const char* type = name == "items"  ? "dict_items"
                       : name == "keys" ? "dict_keys"
                                        : "dict_values";
    return Value::view(std::move(items), type);
  }
  if (name == "copy") {
    no_args(name, call);
    return self;
  }
  (void)in;
  unsupported_method(self, name);
}

Value call_list_method(Interpreter& in, const Value& self, const std::string& name,
                       CallArgs& call) {
  const auto& items = self.list().items;
  if (name == "copy") {
    no_args(name, call);
    return Value::list(items, SeqKind::kList);
  }
  if (name == "count") {
    Args a(name, call, {"value"}, 1);
    return Value::integer(std::count(items.begin(), items.end(), a[0]));
  }
  if (name == "index") {
    Args a(name, call, {"value", "start", "stop"}, 1);
    int64_t n = static_cast<int64_t>(items.size());
    int64_t b = a.get_int(1, 0), e = a.get_int(2, n);
    if (b < 0) b = std::max<int64_t>(0, b + n);
    if (e < 0) e = std::max<int64_t>(0, e + n);
    for (int64_t i = b; i < std::min(e, n); ++i) {
      if (items[i] == a[0]) return Value::integer(i);
    }
    fail(ErrorKind::kValue, "{} is not in {}", a[0].repr(),
         self.seq_kind() == SeqKind::kTuple ? "tuple" : "list");
  }
  (void)in;
  unsupported_method(self, name);
}

}  // namespace

Value method_attr(const Value& self, std::string_view name) {
  if (self.is_string()) {
    if (str_methods().count(name))
      return Value::object(std::make_shared<BoundMethod>(self, std::string(name)));
    return Value();
  }
  if (self.is_dict()) {
    if (kDictSafe.count(name))
      return Value::object(std::make_shared<BoundMethod>(self, std::string(name)));
    if (kDictUnsafe.count(name)) return Value::undefined_unsafe(self, std::string(name));
    return Value();
  }
  if (self.is_indexable()) {
    bool tuple = self.seq_kind() != SeqKind::kList;
    if (kListSafe.count(name) && !(tuple && name == "copy")) {
      return Value::object(std::make_shared<BoundMethod>(self, std::string(name)));
    }
    if (!tuple && kListUnsafe.count(name)) return Value::undefined_unsafe(self, std::string(name));
  }
  return Value();
}

Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  if (self.is_string()) return call_str_method(in, self, name, args);
  if (self.is_dict()) return call_dict_method(in, self, name, args);
  return call_list_method(in, self, name, args);
}

}  // namespace folio::jinja
