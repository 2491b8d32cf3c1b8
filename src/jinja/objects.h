// Reference objects templates meet: namespace(), loop, macros, builtin
// functions and bound methods (`s.strip`, `d.items`), cycler and joiner.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/value.h"

namespace folio::jinja {

// jinja2.utils.Namespace: the one mutable object ({% set ns.x = ... %}).
class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::string object_type_repr() const override { return "jinja2.utils.Namespace object"; }
  std::string repr(int depth) const override;
  Value get_attr(std::string_view name) const override;
  bool is_namespace() const override { return true; }
  void set(std::string_view name, Value v) {
    attrs_.set(Value::string(std::string(name)), std::move(v));
  }
  // Moves every attribute value into `out` (cycle breaking at render end).
  void release_attrs(std::vector<Value>* out) {
    for (auto& [k, v] : attrs_.items) {
      out->push_back(std::move(k));
      out->push_back(std::move(v));
    }
    attrs_.items.clear();
  }

 private:
  Dict attrs_;
};

// jinja2.runtime.LoopContext.
class LoopContext : public Object {
 public:
  // `items`: a list value (the filtered iterable).
  LoopContext(Value items, int depth0, const Stmt* recursive_loop)
      : items_(std::move(items)), depth0_(depth0), loop_(recursive_loop) {}
  std::string type_name() const override { return "LoopContext"; }
  std::string object_type_repr() const override { return "jinja2.runtime.LoopContext object"; }
  std::string repr(int depth) const override;
  Value get_attr(std::string_view name) const override;
  bool callable() const override { return loop_ != nullptr; }
  Value call(Interpreter& in, CallArgs& args) override;

  void set_index(size_t i) { index0_ = i; }
  size_t index0() const { return index0_; }
  size_t length() const { return items_.list().items.size(); }
  Value cycle(CallArgs& args) const;
  Value changed(CallArgs& args);

 private:
  Value items_;
  size_t index0_ = 0;
  int depth0_ = 0;
  const Stmt* loop_;  // non-null for `recursive` loops
  std::optional<std::vector<Value>> last_changed_;
};

// A macro (or the `caller` of a call block) bound to its defining scope.
class Macro : public Object {
 public:
  Macro(const MacroDef* def, ScopePtr closure) : def_(def), closure_(std::move(closure)) {}
  std::string type_name() const override { return "Macro"; }
  std::string object_type_repr() const override { return "jinja2.runtime.Macro object"; }
  std::string repr(int depth) const override;
  Value get_attr(std::string_view name) const override;
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;

 private:
  const MacroDef* def_;
  ScopePtr closure_;
};

using BuiltinFn = Value (*)(Interpreter& in, CallArgs& args);

// A global function (range, namespace, raise_exception, ...).
class BuiltinFunction : public Object {
 public:
  BuiltinFunction(std::string name, BuiltinFn fn) : name_(std::move(name)), fn_(fn) {}
  std::string type_name() const override { return "function"; }
  std::string repr(int depth) const override { return "<function " + name_ + ">"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return fn_(in, args); }

 private:
  std::string name_;
  BuiltinFn fn_;
};

// `obj.method` for str / dict / list / loop methods.
class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr(int depth) const override;
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;

 private:
  Value self_;
  std::string name_;
};

// jinja2.utils.Cycler and Joiner.
class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  ~Cycler() override { release_values(&items_); }
  std::string type_name() const override { return "Cycler"; }
  std::string object_type_repr() const override { return "jinja2.utils.Cycler object"; }
  std::string repr(int depth) const override { return "<jinja2.utils.Cycler object>"; }
  Value get_attr(std::string_view name) const override;
  Value next();
  void reset() { pos_ = 0; }
  const Value& current() const { return items_[pos_]; }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  std::string object_type_repr() const override { return "jinja2.utils.Joiner object"; }
  std::string repr(int depth) const override { return "<jinja2.utils.Joiner object>"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;

 private:
  std::string sep_;
  bool used_ = false;
};

}  // namespace folio::jinja
