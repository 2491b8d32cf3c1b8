// Builtin tests (`x is defined`, `x is mapping`, ...): jinja2 3.1 tests.py.
#include <algorithm>
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {

void no_args(const char* name, CallArgs& call) {
  Args a(name, call, {});
}

const Value& one_arg(const char* name, CallArgs& call) {
  if (call.args.size() + call.kwargs.size() != 1) {
    fail(ErrorKind::kType, "{}() takes exactly one argument ({} given)", name,
         call.args.size() + call.kwargs.size());
  }
  return call.args.empty() ? call.kwargs[0].second : call.args[0];
}

bool t_defined(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_defined", c), !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_undefined", c), v.is_undefined();
}
bool t_none(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_none", c), v.is_none();
}
bool t_boolean(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_boolean", c), v.is_bool();
}
bool t_true(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_true", c), v.is_bool() && v.as_bool();
}
bool t_false(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_false", c), v.is_bool() && !v.as_bool();
}
bool t_integer(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_integer", c), v.is_int();
}
bool t_float(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_float", c), v.is_float();
}
bool t_number(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_number", c), v.is_number();
}
bool t_string(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_string", c), v.is_string();
}
bool t_mapping(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_mapping", c), v.is_dict();
}
bool t_escaped(Interpreter&, const Value& v, CallArgs& c) {
  return no_args("test_escaped", c), v.is_safe();
}

bool t_sequence(Interpreter&, const Value& v, CallArgs& c) {
  no_args("test_sequence", c);
  return v.is_undefined() || v.is_string() || v.is_dict() || v.is_indexable();
}

bool t_iterable(Interpreter&, const Value& v, CallArgs& c) {
  no_args("test_iterable", c);
  return v.is_undefined() || v.is_string() || v.is_dict() || v.is_list();
}

bool t_callable(Interpreter&, const Value& v, CallArgs& c) {
  no_args("test_callable", c);
  return v.is_object() && v.obj().callable();
}

// value % 2 with Python semantics (ints, floats, bools).
Value mod_of(Interpreter& in, const Value& v, const Value& n) {
  return in.binary(BinOp::kMod, v, n);
}

bool t_odd(Interpreter& in, const Value& v, CallArgs& c) {
  no_args("test_odd", c);
  return mod_of(in, v, Value::integer(2)) == Value::integer(1);
}
bool t_even(Interpreter& in, const Value& v, CallArgs& c) {
  no_args("test_even", c);
  return mod_of(in, v, Value::integer(2)) == Value::integer(0);
}
bool t_divisibleby(Interpreter& in, const Value& v, CallArgs& c) {
  return mod_of(in, v, one_arg("test_divisibleby", c)) == Value::integer(0);
}

bool t_lower(Interpreter& in, const Value& v, CallArgs& c) {
  no_args("test_lower", c);
  CallArgs none;
  return call_method(in, to_string_value(v), "islower", none).truthy();
}
bool t_upper(Interpreter& in, const Value& v, CallArgs& c) {
  no_args("test_upper", c);
  CallArgs none;
  return call_method(in, to_string_value(v), "isupper", none).truthy();
}

bool t_eq(Interpreter& in, const Value& v, CallArgs& c) {
  return in.compare(CmpOp::kEq, v, one_arg("eq", c));
}
bool t_ne(Interpreter& in, const Value& v, CallArgs& c) {
  return in.compare(CmpOp::kNe, v, one_arg("ne", c));
}
bool t_lt(Interpreter& in, const Value& v, CallArgs& c) {
  return in.compare(CmpOp::kLt, v, one_arg("lt", c));
}
bool t_le(Interpreter& in, const Value& v, CallArgs& c) {
  return in.compare(CmpOp::kLe, v, one_arg("le", c));
}
bool t_gt(Interpreter& in, const Value& v, CallArgs& c) {
  return in.compare(CmpOp::kGt, v, one_arg("gt", c));
}
bool t_ge(Interpreter& in, const Value& v, CallArgs& c) {
  return in.compare(CmpOp::kGe, v, one_arg("ge", c));
}
bool t_in(Interpreter& in, const Value& v, CallArgs& c) {
  return in.contains(one_arg("test_in", c), v);
}
bool t_sameas(Interpreter&, const Value& v, CallArgs& c) {
  return v.same_ref(one_arg("test_sameas", c));
}

bool t_filter(Interpreter&, const Value& v, CallArgs& c) {
  no_args("test_filter", c);
  return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, CallArgs& c) {
  no_args("test_test", c);
  return v.is_string() && find_test(v.str()) != nullptr;
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

// Sorted by name (binary search).
constexpr TestEntry kTests[] = {
    {"!=", t_ne},
    {"<", t_lt},
    {"<=", t_le},
    {"==", t_eq},
    {">", t_gt},
    {">=", t_ge},
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"escaped", t_escaped},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge},
    {"greaterthan", t_gt},
    {"gt", t_gt},
    {"in", t_in},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le},
    {"lessthan", t_lt},
    {"lower", t_lower},
    {"lt", t_lt},
    {"mapping", t_mapping},
    {"ne", t_ne},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

TestFn find_test(std::string_view name) {
  auto it = std::lower_bound(std::begin(kTests), std::end(kTests), name,
                             [](const TestEntry& e, std::string_view n) { return e.name < n; });
  if (it != std::end(kTests) && it->name == name) return it->fn;
  return nullptr;
}

}  // namespace folio::jinja
