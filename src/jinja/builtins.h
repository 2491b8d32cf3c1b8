// Builtin filters, tests, globals and methods, with Python's argument binding.
//
// Filters (jinja2 3.1 semantics, tojson as Hugging Face overrides it):
//   abs attr batch capitalize center count d default dictsort e escape first
//   float forceescape format indent int items join last length list lower map
//   max min reject rejectattr replace reverse round safe select selectattr
//   slice sort string sum title tojson trim truncate unique upper wordcount
// Not implemented (a clear "No filter named" error): filesizeformat, groupby,
// pprint, random, striptags, urlencode, urlize, wordwrap, xmlattr.
// Tests: boolean callable defined divisibleby eq/equalto/== escaped even false
//   filter float ge/>= gt/greaterthan/> in integer iterable le/<= lower
//   lt/lessthan/< mapping ne/!= none number odd sameas sequence string test
//   true undefined upper.
// Globals: range (the sandbox's 100000-item limit), dict, namespace, cycler,
// joiner, and Hugging Face's raise_exception(message), strftime_now(format).
// Methods: str (strip, split, format, startswith, ...), dict (get, items,
// keys, values, copy), list / tuple (index, count, copy); the mutating ones
// (list.append, dict.pop, ...) are refused like ImmutableSandboxedEnvironment
// does (SecurityError when called).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace folio::jinja {

FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
// A global function by name, or an undefined value.
Value find_global(std::string_view name);

// `self.name` for str / dict / list / tuple values: a bound method, an unsafe
// undefined for mutating methods, or a plain undefined (no info) if `name` is
// not a method of that type.
Value method_attr(const Value& self, std::string_view name);
Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args);

// Python str.format / str % args on a template string (format.cc).
std::string py_format(Interpreter& in, const std::string& fmt, CallArgs& args, bool escape_args);
std::string py_percent_format(Interpreter& in, const std::string& fmt, const Value& args,
                              bool escape_args);

// Binds positional / keyword arguments to parameter names like a Python
// function signature; TypeError on unknown, duplicate or surplus arguments.
class Args {
 public:
  Args(std::string_view func, CallArgs& call, std::initializer_list<std::string_view> names,
       size_t required = 0);
  bool has(size_t i) const { return i < bound_.size() && bound_[i] != nullptr; }
  const Value& operator[](size_t i) const { return *bound_[i]; }
  Value get(size_t i, Value fallback) const { return has(i) ? *bound_[i] : fallback; }
  // An integer argument (bool accepted, as in Python); TypeError otherwise.
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const { return has(i) ? bound_[i]->truthy() : fallback; }
  // A string argument; TypeError otherwise (None -> nullopt when `none_ok`).
  std::optional<std::string> get_str(size_t i, bool none_ok) const;

 private:
  std::string func_;
  std::vector<std::string_view> names_;
  std::vector<const Value*> bound_;
};

// Python str() / soft_str: strings stay as they are (Markup included).
Value to_string_value(const Value& v);

}  // namespace folio::jinja
