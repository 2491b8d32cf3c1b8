#include "jinja/objects.h"

#include "jinja/builtins.h"
#include "jinja/error.h"

namespace folio::jinja {

// ---------------------------------------------------------------------------
// Namespace

std::string Namespace::repr(int depth) const {
  std::string out = "<Namespace ";
  Value::dict(attrs_).append_repr(&out, depth);
  out += ">";
  return out;
}

Value Namespace::get_attr(std::string_view name) const {
  if (const Value* v = attrs_.find(name)) return *v;
  return Value();
}

// ---------------------------------------------------------------------------
// LoopContext

std::string LoopContext::repr(int) const {
  return fmt::format("<LoopContext {}/{}>", index0_ + 1, length());
}

namespace {
// loop.cycle / loop.changed as bound methods.
class LoopMethod : public Object {
 public:
  LoopMethod(std::shared_ptr<LoopContext> loop, bool cycle)
      : loop_(std::move(loop)), cycle_(cycle) {}
  std::string type_name() const override { return "method"; }
  std::string repr(int) const override {
    return cycle_ ? "<bound method LoopContext.cycle>" : "<bound method LoopContext.changed>";
  }
  bool callable() const override { return true; }
  Value call(Interpreter&, CallArgs& args) override {
    return cycle_ ? loop_->cycle(args) : loop_->changed(args);
  }

 private:
  std::shared_ptr<LoopContext> loop_;
  bool cycle_;
};
}  // namespace

Value LoopContext::get_attr(std::string_view name) const {
  size_t n = length();
  if (name == "index") return Value::integer(static_cast<int64_t>(index0_ + 1));
  if (name == "index0") return Value::integer(static_cast<int64_t>(index0_));
  if (name == "revindex") return Value::integer(static_cast<int64_t>(n - index0_));
  if (name == "revindex0") return Value::integer(static_cast<int64_t>(n - index0_ - 1));
  if (name == "first") return Value::boolean(index0_ == 0);
  if (name == "last") return Value::boolean(index0_ + 1 == n);
  if (name == "length") return Value::integer(static_cast<int64_t>(n));
  if (name == "depth") return Value::integer(depth0_ + 1);
  if (name == "depth0") return Value::integer(depth0_);
  if (name == "previtem") {
    if (index0_ == 0) return Value::undefined_hint("there is no previous item");
    return items_.list().items[index0_ - 1];
  }
  if (name == "nextitem") {
    if (index0_ + 1 >= n) return Value::undefined_hint("there is no next item");
    return items_.list().items[index0_ + 1];
  }
  if (name == "cycle" || name == "changed") {
    auto self = std::const_pointer_cast<LoopContext>(
        std::static_pointer_cast<const LoopContext>(shared_from_this()));
    return Value::object(std::make_shared<LoopMethod>(self, name == "cycle"));
  }
  return Value();
}

Value LoopContext::cycle(CallArgs& args) const {
  if (!args.kwargs.empty())
    fail(ErrorKind::kType, "cycle() got an unexpected keyword argument '{}'", args.kwargs[0].first);
  if (args.args.empty()) fail(ErrorKind::kType, "no items for cycling given");
  return args.args[index0_ % args.args.size()];
}

Value LoopContext::changed(CallArgs& args) {
  if (!last_changed_ || !(Value::list(*last_changed_) == Value::list(args.args))) {
    last_changed_ = args.args;
    return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value LoopContext::call(Interpreter& in, CallArgs& args) {
  if (!loop_) fail(ErrorKind::kType, "'LoopContext' object is not callable");
  if (args.args.size() != 1 || !args.kwargs.empty()) {
    fail(ErrorKind::kType, "loop() takes exactly one argument (the iterable to recurse into)");
  }
  return in.render_recursive_loop(*loop_, args.args[0], depth0_ + 1);
}

// ---------------------------------------------------------------------------
// Macro

std::string Macro::repr(int) const {
  if (def_->name == "caller") return "<Macro 'caller'>";
  return "<Macro '" + def_->name + "'>";
}

Value Macro::get_attr(std::string_view name) const {
  if (name == "name") return Value::string(def_->name);
  if (name == "arguments") {
    std::vector<Value> params;
    for (const auto& p : def_->params) params.push_back(Value::string(p));
    return Value::list(std::move(params), SeqKind::kTuple);
  }
  if (name == "catch_kwargs") return Value::boolean(def_->catch_kwargs);
  if (name == "catch_varargs") return Value::boolean(def_->catch_varargs);
  if (name == "caller") return Value::boolean(def_->caller);
  return Value();
}

Value Macro::call(Interpreter& in, CallArgs& args) {
  return in.invoke_macro(*def_, closure_, args);
}

// ---------------------------------------------------------------------------
// BoundMethod

std::string BoundMethod::repr(int) const {
  return fmt::format("<built-in method {} of {} object>", name_, self_.type_name());
}

Value BoundMethod::call(Interpreter& in, CallArgs& args) {
  return call_method(in, self_, name_, args);
}

// ---------------------------------------------------------------------------
// Cycler / Joiner

namespace {
class CyclerMethod : public Object {
 public:
  CyclerMethod(std::shared_ptr<Cycler> c, std::string name)
      : c_(std::move(c)), name_(std::move(name)) {}
  std::string type_name() const override { return "method"; }
  std::string repr(int) const override { return "<bound method Cycler." + name_ + ">"; }
  bool callable() const override { return true; }
  Value call(Interpreter&, CallArgs&) override {
    if (name_ == "next") return c_->next();
    c_->reset();
    return Value::none();
  }

 private:
  std::shared_ptr<Cycler> c_;
  std::string name_;
};
}  // namespace

Value Cycler::get_attr(std::string_view name) const {
  if (name == "current") return current();
  if (name == "next" || name == "reset") {
    auto self =
        std::const_pointer_cast<Cycler>(std::static_pointer_cast<const Cycler>(shared_from_this()));
    return Value::object(std::make_shared<CyclerMethod>(self, std::string(name)));
  }
  return Value();
}

Value Cycler::next() {
  Value v = items_[pos_];
  pos_ = (pos_ + 1) % items_.size();
  return v;
}

Value Joiner::call(Interpreter&, CallArgs&) {
  if (!used_) {
    used_ = true;
    return Value::string("");
  }
  return Value::string(sep_);
}

}  // namespace folio::jinja
