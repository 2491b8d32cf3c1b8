// Interpreter: evaluates a parsed template against render variables.
//
// Scoping follows jinja2: the template body is the root scope; each for-loop
// iteration, macro call, call / filter / set block body and with block runs in
// a child scope, so `{% set %}` inside them does not leak out (namespace()
// objects are the way out). Macros close over the scope they were defined
// in and see its current values when called. Names resolve through the scope
// chain, then the render variables, then the globals (range, namespace, dict,
// cycler, joiner, raise_exception, strftime_now), else they are undefined.
//
// Limits (RenderOptions) make every render terminate: bytes written
// (including captured macro / block output), steps (statements + loop
// iterations + calls), macro call depth, and the size of strings and lists an
// expression may build. Exceeding one is an error, never a crash.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/value.h"

namespace folio::jinja {

struct RenderOptions {
  size_t max_output_bytes = size_t{16} << 20;  // all output written, captured blocks included
  uint64_t max_steps = 5'000'000;              // statements + loop iterations + calls
  int max_call_depth = 100;                    // nested macro calls
  size_t max_value_bytes = size_t{16} << 20;   // one string built by an expression
  size_t max_list_items = 1'000'000;           // one list built by an expression
  // strftime_now() uses this date instead of the local clock when set (the
  // hook that makes rendering deterministic in tests).
  std::optional<std::tm> now;
};

struct Scope {
  explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() { clear(); }
  // Drops the variables (without recursion, see release_values).
  void clear();

  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value value);
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  // `source` is the normalised template source (error positions);
  // `variables` the render variables (a dict; may be empty).
  Interpreter(std::string_view source, const RenderOptions& options, const Dict* variables);
  // Breaks the reference cycles a render can leave (a macro and the scope it
  // closes over, namespaces that hold themselves) so nothing leaks.
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body`; throws JinjaError.
  std::string render(const Body& body);

  // ---- services for builtins ----
  const RenderOptions& options() const { return options_; }
  Value call(const Value& callee, CallArgs& args);
  // Iterates a value like Python's iter() (materialised; generators are
  // consumed). Throws TypeError for non-iterables.
  std::vector<Value> iterate(const Value& v);
  // Fails with kLimit when a string / list about to be built is too large.
  void check_string_size(size_t bytes) const;
  void check_list_size(size_t items) const;
  void step();
  // Namespaces and macro closures are tracked so ~Interpreter can clear them.
  void track_namespace(const std::shared_ptr<class Namespace>& ns) { namespaces_.push_back(ns); }

  // Python semantics used by filters too.
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
  Value binary(BinOp op, const Value& a, const Value& b);
  bool compare(CmpOp op, const Value& a, const Value& b);
  bool contains(const Value& container, const Value& item);

  // ---- used by Macro / LoopContext objects ----
  Value invoke_macro(const MacroDef& def, const ScopePtr& closure, CallArgs& args);
  Value render_recursive_loop(const Stmt& loop, const Value& iterable, int depth);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  void exec_output(const Stmt& s);
  Flow exec_if(const Stmt& s);
  void exec_for(const Stmt& s, const Value& iterable, int depth);
  void exec_call_block(const Stmt& s);
  std::string capture(const Body& body, ScopePtr scope);
  void assign(const Expr& target, const Value& value);

  Value eval(const Expr& e);
  Value eval_inner(const Expr& e);
  Value eval_call(const Expr& e);
  void eval_call_args(const Expr& e, size_t first, CallArgs* out);
  Value eval_slice(const Value& obj, const Expr& slice);
  Value lookup(const std::string& name) const;

  void write(std::string_view text);
  void write_value(const Value& v);

  std::string_view source_;
  RenderOptions options_;
  const Dict* variables_;
  ScopePtr scope_;
  std::string* out_ = nullptr;
  size_t written_ = 0;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  const Value* block_operand_ = nullptr;  // the captured body, for filter / set blocks
  int eval_depth_ = 0;                    // nested eval / exec calls (C++ stack guard)
  std::vector<std::weak_ptr<class Namespace>> namespaces_;
  std::vector<std::weak_ptr<Scope>> closures_;
};

// Throws the UndefinedError (or SecurityError, for sandbox-refused
// attributes) that using an undefined value raises.
[[noreturn]] void raise_undefined(const Value& v);
[[noreturn]] void fail_int_overflow();
// Python accepts ints and bools as indices.
bool is_int_index(const Value& v);

// Sets the position of an error thrown while evaluating `pos` if it has none.
void attach_position(std::string_view source, uint32_t pos, JinjaError* error);

}  // namespace folio::jinja
