#include "jinja/interpreter.h"

#include <cmath>
#include <limits>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/lexer.h"
#include "jinja/objects.h"
#include "jinja/py_string.h"

namespace folio::jinja {

// ---------------------------------------------------------------------------
// Scope

const Value* Scope::find(std::string_view name) const {
  for (const auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(value));
}

void Scope::clear() {
  if (vars.empty()) return;
  std::vector<Value> values;
  values.reserve(vars.size());
  for (auto& [k, v] : vars) values.push_back(std::move(v));
  vars.clear();
  release_values(&values);
}

void attach_position(std::string_view source, uint32_t pos, JinjaError* error) {
  if (error->has_position()) return;
  int line, col;
  offset_to_position(source, pos, &line, &col);
  error->set_position(line, col);
}

namespace {

// RAII: redirect output into a buffer, restore on exit (also on throw).
class OutputRedirect {
 public:
  OutputRedirect(std::string** slot, std::string* buffer) : slot_(slot), saved_(*slot) {
    *slot = buffer;
  }
  ~OutputRedirect() { *slot_ = saved_; }

 private:
  std::string** slot_;
  std::string* saved_;
};

class ScopeGuard {
 public:
  ScopeGuard(ScopePtr* slot, ScopePtr scope) : slot_(slot), saved_(std::move(*slot)) {
    *slot = std::move(scope);
  }
  ~ScopeGuard() { *slot_ = std::move(saved_); }

 private:
  ScopePtr* slot_;
  ScopePtr saved_;
};

// Counts nested eval / exec frames; bounds the C++ stack whatever the mix
// of deep expressions, nested blocks and macro calls.
constexpr int kMaxEvalDepth = 1500;
class EvalDepth {
 public:
  explicit EvalDepth(int* depth) : depth_(depth) {
    if (++*depth_ > kMaxEvalDepth) {
      --*depth_;
      fail(ErrorKind::kRecursion, "template evaluation nested deeper than {} levels",
           kMaxEvalDepth);
    }
  }
  ~EvalDepth() { --*depth_; }

 private:
  int* depth_;
};

}  // namespace

// ---------------------------------------------------------------------------

Interpreter::Interpreter(std::string_view source, const RenderOptions& options,
                         const Dict* variables)
    : source_(source), options_(options), variables_(variables) {}

Interpreter::~Interpreter() {
  std::vector<Value> graveyard;
  for (auto& weak : namespaces_) {
    if (auto ns = weak.lock()) ns->release_attrs(&graveyard);
  }
  for (auto& weak : closures_) {
    if (auto scope = weak.lock()) {
      for (auto& [k, v] : scope->vars) graveyard.push_back(std::move(v));
      scope->vars.clear();
    }
  }
  release_values(&graveyard);
}

std::string Interpreter::render(const Body& body) {
  std::string out;
  OutputRedirect redirect(&out_, &out);
  ScopeGuard scope(&scope_, std::make_shared<Scope>(nullptr));
  exec_body(body);
  return out;
}

void Interpreter::step() {
  if (++steps_ > options_.max_steps) {
    fail(ErrorKind::kLimit,
         "template exceeded the step budget ({} statements, loop iterations and calls)",
         options_.max_steps);
  }
}

void Interpreter::check_string_size(size_t bytes) const {
  if (bytes > options_.max_value_bytes) {
    fail(ErrorKind::kLimit, "string of {} bytes exceeds the template value limit ({} bytes)", bytes,
         options_.max_value_bytes);
  }
}

void Interpreter::check_list_size(size_t items) const {
  if (items > options_.max_list_items) {
    fail(ErrorKind::kLimit, "list of {} items exceeds the template value limit ({} items)", items,
         options_.max_list_items);
  }
}

void Interpreter::write(std::string_view text) {
  written_ += text.size();
  if (written_ > options_.max_output_bytes) {
    fail(ErrorKind::kLimit, "template output exceeded {} bytes", options_.max_output_bytes);
  }
  out_->append(text);
}

void Interpreter::write_value(const Value& v) {
  if (v.is_string()) {
    write(v.str());
  } else if (!v.is_undefined()) {
    write(v.to_str());
  }
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Scope* s = scope_.get(); s; s = s->parent.get()) {
    if (const Value* v = s->find(name)) return *v;
  }
  if (variables_) {
    if (const Value* v = variables_->find(std::string_view(name))) return *v;
  }
  Value g = find_global(name);
  if (!g.is_undefined()) return g;
  return Value::undefined_name(name);
}

// ---------------------------------------------------------------------------
// Statements

Interpreter::Flow Interpreter::exec_body(const Body& body) {
  for (const auto& s : body) {
    Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
  step();
  EvalDepth depth(&eval_depth_);
  switch (s.kind) {
    case StmtKind::kOutput:
      exec_output(s);
      return Flow::kNormal;
    case StmtKind::kIf:
      return exec_if(s);
    case StmtKind::kFor:
      exec_for(s, eval(*s.expr), 0);
      return Flow::kNormal;
    case StmtKind::kSet:
      assign(*s.target, eval(*s.expr));
      return Flow::kNormal;
    case StmtKind::kSetBlock: {
      Value body = Value::string(capture(s.body, std::make_shared<Scope>(scope_)));
      if (s.expr) {
        const Value* saved = block_operand_;
        block_operand_ = &body;
        Value filtered;
        try {
          filtered = eval(*s.expr);
        } catch (...) {
          block_operand_ = saved;
          throw;
        }
        block_operand_ = saved;
        body = filtered;
      }
      assign(*s.target, body);
      return Flow::kNormal;
    }
    case StmtKind::kMacro:
      closures_.push_back(scope_);
      scope_->set(s.macro->name, Value::object(std::make_shared<Macro>(s.macro.get(), scope_)));
      return Flow::kNormal;
    case StmtKind::kCallBlock:
      exec_call_block(s);
      return Flow::kNormal;
    case StmtKind::kFilterBlock: {
      Value body = Value::string(capture(s.body, std::make_shared<Scope>(scope_)));
      const Value* saved = block_operand_;
      block_operand_ = &body;
      Value filtered;
      try {
        filtered = eval(*s.expr);
      } catch (...) {
        block_operand_ = saved;
        throw;
      }
      block_operand_ = saved;
      write_value(filtered);
      return Flow::kNormal;
    }
    case StmtKind::kWith: {
      auto scope = std::make_shared<Scope>(scope_);
      std::vector<Value> values;
      for (const auto& v : s.values) values.push_back(eval(*v));
      ScopeGuard guard(&scope_, scope);
      for (size_t i = 0; i < s.targets.size(); ++i) assign(*s.targets[i], values[i]);
      return exec_body(s.body);
    }
    case StmtKind::kScope: {
      ScopeGuard guard(&scope_, std::make_shared<Scope>(scope_));
      exec_body(s.body);
      return Flow::kNormal;
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
  }
  return Flow::kNormal;
}

void Interpreter::exec_output(const Stmt& s) {
  for (const auto& item : s.output) {
    if (!item.expr) {
      write(item.text);
    } else {
      write_value(eval(*item.expr));
    }
  }
}

Interpreter::Flow Interpreter::exec_if(const Stmt& s) {
  for (const auto& [test, body] : s.branches) {
    if (eval(*test).truthy()) return exec_body(body);
  }
  return exec_body(s.else_body);
}

void Interpreter::exec_for(const Stmt& s, const Value& iterable, int depth) {
  std::vector<Value> all;
  try {
    all = iterate(iterable);
  } catch (JinjaError& e) {
    attach_position(source_, s.expr->pos, &e);
    throw;
  }
  auto items = std::make_unique<std::vector<Value>>();
  if (s.test) {
    for (auto& item : all) {
      step();
      ScopeGuard guard(&scope_, std::make_shared<Scope>(scope_));
      assign(*s.target, item);
      if (eval(*s.test).truthy()) items->push_back(std::move(item));
    }
  } else {
    *items = std::move(all);
  }
  release_values(&all);
  if (items->empty()) {
    exec_body(s.else_body);
    return;
  }
  Value list = Value::list(std::move(*items));
  const std::vector<Value>& loop_items = list.list().items;
  auto loop = std::make_shared<LoopContext>(list, depth, s.recursive ? &s : nullptr);
  Value loop_value = Value::object(loop);
  for (size_t i = 0; i < loop_items.size(); ++i) {
    step();
    loop->set_index(i);
    ScopeGuard guard(&scope_, std::make_shared<Scope>(scope_));
    assign(*s.target, loop_items[i]);
    scope_->set("loop", loop_value);
    if (exec_body(s.body) == Flow::kBreak) break;
  }
}

Value Interpreter::render_recursive_loop(const Stmt& loop, const Value& iterable, int depth) {
  std::string buffer;
  {
    OutputRedirect redirect(&out_, &buffer);
    exec_for(loop, iterable, depth);
  }
  return Value::string(std::move(buffer));
}

void Interpreter::exec_call_block(const Stmt& s) {
  const Expr& call = *s.expr;
  Value callee = eval(*call.args[0]);
  CallArgs args;
  eval_call_args(call, 1, &args);
  closures_.push_back(scope_);
  args.kwargs.emplace_back("caller", Value::object(std::make_shared<Macro>(s.macro.get(), scope_)));
  Value result;
  try {
    result = this->call(callee, args);
  } catch (JinjaError& e) {
    attach_position(source_, call.pos, &e);
    throw;
  }
  write_value(result);
}

std::string Interpreter::capture(const Body& body, ScopePtr scope) {
  std::string buffer;
  OutputRedirect redirect(&out_, &buffer);
  ScopeGuard guard(&scope_, std::move(scope));
  exec_body(body);
  return buffer;
}

void Interpreter::assign(const Expr& target, const Value& value) {
  switch (target.kind) {
    case ExprKind::kName:
      scope_->set(target.name, value);
      return;
    case ExprKind::kNSRef: {
      Value ns = lookup(target.name);
      if (!ns.is_object() || !ns.obj().is_namespace()) {
        JinjaError e(ErrorKind::kRuntime, "cannot assign attribute on non-namespace object");
        attach_position(source_, target.pos, &e);
        throw e;
      }
      static_cast<Namespace&>(ns.obj()).set(target.name2, value);
      return;
    }
    case ExprKind::kTuple: {
      if (!value.is_list() && !value.is_dict() && !value.is_string() && !value.is_undefined()) {
        JinjaError e(ErrorKind::kType,
                     fmt::format("cannot unpack non-iterable {} object", value.type_name()));
        attach_position(source_, target.pos, &e);
        throw e;
      }
      std::vector<Value> items = iterate(value);
      size_t n = target.args.size();
      if (items.size() < n) {
        JinjaError e(
            ErrorKind::kValue,
            fmt::format("not enough values to unpack (expected {}, got {})", n, items.size()));
        attach_position(source_, target.pos, &e);
        throw e;
      }
      if (items.size() > n) {
        JinjaError e(ErrorKind::kValue, fmt::format("too many values to unpack (expected {})", n));
        attach_position(source_, target.pos, &e);
        throw e;
      }
      for (size_t i = 0; i < n; ++i) assign(*target.args[i], items[i]);
      return;
    }
    default:
      fail(ErrorKind::kSyntax, "can't assign to this expression");
  }
}

// ---------------------------------------------------------------------------
// Calls

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) raise_undefined(callee);
  if (!callee.is_object() || !callee.obj().callable()) {
    fail(ErrorKind::kType, "'{}' object is not callable", callee.type_name());
  }
  step();
  return callee.obj().call(*this, args);
}

void Interpreter::eval_call_args(const Expr& e, size_t first, CallArgs* out) {
  for (size_t i = first; i < e.args.size(); ++i) out->args.push_back(eval(*e.args[i]));
  for (const auto& [k, v] : e.kwargs) out->kwargs.emplace_back(k, eval(*v));
  if (e.dyn_args) {
    for (auto& v : iterate(eval(*e.dyn_args))) out->args.push_back(std::move(v));
  }
  if (e.dyn_kwargs) {
    Value d = eval(*e.dyn_kwargs);
    if (!d.is_dict())
      fail(ErrorKind::kType, "argument after ** must be a mapping, not {}", d.type_name());
    for (const auto& [k, v] : d.dict().items) {
      if (!k.is_string()) fail(ErrorKind::kType, "keywords must be strings");
      out->kwargs.emplace_back(k.str(), v);
    }
  }
}

Value Interpreter::invoke_macro(const MacroDef& def, const ScopePtr& closure, CallArgs& args) {
  if (call_depth_ >= options_.max_call_depth) {
    fail(ErrorKind::kRecursion, "macro calls nested deeper than {} (recursive macro?)",
         options_.max_call_depth);
  }
  auto scope = std::make_shared<Scope>(closure);
  size_t n_params = def.params.size();
  std::vector<std::pair<std::string, Value>> kwargs = std::move(args.kwargs);
  auto take_kwarg = [&](const std::string& name, Value* out) {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == name) {
        *out = std::move(it->second);
        kwargs.erase(it);
        return true;
      }
    }
    return false;
  };
  std::vector<std::optional<Value>> bound(n_params);
  size_t n_pos = std::min(args.args.size(), n_params);
  for (size_t i = 0; i < n_pos; ++i) bound[i] = args.args[i];
  bool found_caller = false;
  if (n_pos != n_params) {
    for (size_t i = n_pos; i < n_params; ++i) {
      Value v;
      if (take_kwarg(def.params[i], &v)) bound[i] = std::move(v);
      if (def.params[i] == "caller") found_caller = true;
    }
  }
  if (def.caller && !found_caller) {
    Value c;
    if (!take_kwarg("caller", &c)) c = Value::undefined_hint("No caller defined");
    scope->set("caller", c);
  }
  if (def.catch_kwargs) {
    Dict d;
    for (auto& [k, v] : kwargs) d.set(Value::string(k), v);
    scope->set("kwargs", Value::dict(std::move(d)));
  } else if (!kwargs.empty()) {
    if (kwargs.front().first == "caller") {
      fail(ErrorKind::kType,
           "macro '{}' was invoked with two values for the special caller argument. This is most "
           "likely a bug.",
           def.name);
    }
    fail(ErrorKind::kType, "macro '{}' takes no keyword argument '{}'", def.name,
         kwargs.front().first);
  }
  if (def.catch_varargs) {
    std::vector<Value> rest;
    for (size_t i = n_params; i < args.args.size(); ++i) rest.push_back(args.args[i]);
    scope->set("varargs", Value::list(std::move(rest), SeqKind::kTuple));
  } else if (args.args.size() > n_params) {
    fail(ErrorKind::kType, "macro '{}' takes not more than {} argument(s)", def.name, n_params);
  }

  ++call_depth_;
  struct DepthGuard {
    int* d;
    ~DepthGuard() { --*d; }
  } depth_guard{&call_depth_};
  ScopeGuard guard(&scope_, scope);
  size_t first_default = n_params - def.defaults.size();
  for (size_t i = 0; i < n_params; ++i) {
    if (bound[i]) {
      scope->set(def.params[i], *bound[i]);
    } else if (i >= first_default) {
      scope->set(def.params[i], eval(*def.defaults[i - first_default]));
    } else {
      scope->set(def.params[i], Value::undefined_hint(
                                    fmt::format("parameter '{}' was not provided", def.params[i])));
    }
  }
  std::string buffer;
  {
    OutputRedirect redirect(&out_, &buffer);
    exec_body(def.body);
  }
  return Value::string(std::move(buffer));
}

// ---------------------------------------------------------------------------
// Expressions

Value Interpreter::eval(const Expr& e) {
  try {
    EvalDepth depth(&eval_depth_);
    return eval_inner(e);
  } catch (JinjaError& err) {
    attach_position(source_, e.pos, &err);
    throw;
  }
}

Value Interpreter::eval_inner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      return lookup(e.name);
    case ExprKind::kNSRef:
      return getattr(lookup(e.name), e.name2);
    case ExprKind::kGetattr:
      return getattr(eval(*e.args[0]), e.name);
    case ExprKind::kGetitem: {
      Value obj = eval(*e.args[0]);
      if (e.args[1]->kind == ExprKind::kSlice) return eval_slice(obj, *e.args[1]);
      return getitem(obj, eval(*e.args[1]));
    }
    case ExprKind::kSlice:
      fail(ErrorKind::kSyntax, "slice outside a subscript");
    case ExprKind::kCall:
      return eval_call(e);
    case ExprKind::kFilter: {
      Value operand;
      if (e.args[0]) {
        operand = eval(*e.args[0]);
      } else if (block_operand_) {
        operand = *block_operand_;
      }
      CallArgs args;
      eval_call_args(e, 1, &args);
      if (!e.filter) fail(ErrorKind::kRuntime, "No filter named '{}' found.", e.name);
      return e.filter(*this, operand, args);
    }
    case ExprKind::kTest: {
      Value operand = eval(*e.args[0]);
      CallArgs args;
      eval_call_args(e, 1, &args);
      if (!e.test) fail(ErrorKind::kRuntime, "No test named '{}' found.", e.name);
      return Value::boolean(e.test(*this, operand, args));
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      Value v = eval(*e.args[0]);
      if (v.is_undefined()) raise_undefined(v);
      bool neg = e.kind == ExprKind::kNeg;
      if (v.is_float()) return Value::floating(neg ? -v.as_float() : v.as_float());
      if (v.is_int() || v.is_bool()) {
        if (neg && v.as_int() == INT64_MIN) fail_int_overflow();
        return Value::integer(neg ? -v.as_int() : v.as_int());
      }
      fail(ErrorKind::kType, "bad operand type for unary {}: '{}'", neg ? "-" : "+", v.type_name());
    }
    case ExprKind::kNot:
      return Value::boolean(!eval(*e.args[0]).truthy());
    case ExprKind::kBinary: {
      Value a = eval(*e.args[0]);
      Value b = eval(*e.args[1]);
      return binary(e.op, a, b);
    }
    case ExprKind::kAnd: {
      Value a = eval(*e.args[0]);
      return a.truthy() ? eval(*e.args[1]) : a;
    }
    case ExprKind::kOr: {
      Value a = eval(*e.args[0]);
      return a.truthy() ? a : eval(*e.args[1]);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& a : e.args) {
        eval(*a).append_str(&out);
        check_string_size(out.size());
      }
      return Value::string(std::move(out));
    }
    case ExprKind::kCompare: {
      Value left = eval(*e.args[0]);
      for (size_t i = 0; i < e.cmp.size(); ++i) {
        Value right = eval(*e.args[i + 1]);
        if (!compare(e.cmp[i], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::kCondExpr: {
      if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
      if (e.args[2]) return eval(*e.args[2]);
      int line, col;
      offset_to_position(source_, e.pos, &line, &col);
      return Value::undefined_hint(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.",
          line));
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a));
      return Value::list(std::move(items),
                         e.kind == ExprKind::kTuple ? SeqKind::kTuple : SeqKind::kList);
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        Value v = eval(*e.args[i + 1]);
        if (!k.hashable()) fail(ErrorKind::kType, "unhashable type: '{}'", k.type_name());
        d.set(std::move(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
  }
  return Value();
}

Value Interpreter::eval_call(const Expr& e) {
  Value callee = eval(*e.args[0]);
  if (callee.is_undefined()) raise_undefined(callee);
  CallArgs args;
  eval_call_args(e, 1, &args);
  return call(callee, args);
}

Value Interpreter::eval_slice(const Value& obj, const Expr& slice) {
  std::optional<int64_t> idx[3];
  bool bad = false;
  for (int i = 0; i < 3; ++i) {
    if (!slice.args[i]) continue;
    Value v = eval(*slice.args[i]);
    if (v.is_none()) continue;
    if (!is_int_index(v)) {
      bad = true;
      continue;
    }
    idx[i] = v.as_int();
  }
  if (obj.is_undefined()) raise_undefined(obj);
  bool sliceable = obj.is_string() || obj.is_indexable();
  if (bad || !sliceable) return Value::undefined_element(obj, Value::string("slice"));
  int64_t step = idx[2].value_or(1);
  if (step == 0) fail(ErrorKind::kValue, "slice step cannot be zero");
  if (obj.is_string()) {
    const std::string& s = obj.str();
    std::vector<size_t> off = py::offsets(s);
    int64_t len = static_cast<int64_t>(off.size()) - 1;
    std::string out;
    if (step == 1) {
      std::vector<int64_t> sel = py::slice_indices(len, idx[0], idx[1], 1);
      if (!sel.empty()) out = s.substr(off[sel.front()], off[sel.back() + 1] - off[sel.front()]);
    } else {
      for (int64_t i : py::slice_indices(len, idx[0], idx[1], step))
        out += s.substr(off[i], off[i + 1] - off[i]);
    }
    return Value::string(std::move(out), obj.is_safe());
  }
  const auto& items = obj.list().items;
  if (obj.seq_kind() == SeqKind::kRange) {
    // A slice of a range is a range: start + i * step over slice.indices().
    const List& r = obj.list();
    int64_t len = static_cast<int64_t>(items.size());
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? len - 1 : len;
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
      if (!v) return dflt;
      int64_t x = *v < 0 ? *v + len : *v;
      return x < lo ? lo : (x > hi ? hi : x);
    };
    int64_t b = clamp(idx[0], step < 0 ? hi : lo), e = clamp(idx[1], step < 0 ? lo : hi);
    auto at = [&](__int128 v) {
      if (v > INT64_MAX || v < INT64_MIN) fail_int_overflow();
      return static_cast<int64_t>(v);
    };
    return Value::range(
        at(static_cast<__int128>(r.range_start) + static_cast<__int128>(b) * r.range_step),
        at(static_cast<__int128>(r.range_start) + static_cast<__int128>(e) * r.range_step),
        at(static_cast<__int128>(r.range_step) * step));
  }
  std::vector<Value> out;
  for (int64_t i : py::slice_indices(static_cast<int64_t>(items.size()), idx[0], idx[1], step)) {
    out.push_back(items[i]);
  }
  return Value::list(std::move(out), obj.seq_kind());
}

}  // namespace folio::jinja
