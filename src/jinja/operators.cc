// Python semantics of the operators and protocols templates use: iteration,
// attribute and item access (the sandbox's getattr / getitem fallbacks),
// arithmetic with int / float promotion and Python's floor division and
// modulo, comparisons, membership, and the TypeError / UndefinedError
// messages Python raises for each misuse.
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"

namespace folio::jinja {

void raise_undefined(const Value& v) {
  const UndefinedInfo* info = v.undefined_info();
  if (!info) fail(ErrorKind::kUndefined, "undefined value");
  ErrorKind kind =
      info->kind == UndefinedInfo::Kind::kUnsafe ? ErrorKind::kSecurity : ErrorKind::kUndefined;
  throw JinjaError(kind, info->message());
}

void fail_int_overflow() {
  fail(ErrorKind::kOverflow, "integer overflow (folio's templates use 64-bit integers)");
}

bool is_int_index(const Value& v) {
  return v.is_int() || v.is_bool();
}

namespace {

const char* op_symbol(BinOp op) {
  switch (op) {
    case BinOp::kAdd:
      return "+";
    case BinOp::kSub:
      return "-";
    case BinOp::kMul:
      return "*";
    case BinOp::kDiv:
      return "/";
    case BinOp::kFloorDiv:
      return "//";
    case BinOp::kMod:
      return "%";
    case BinOp::kPow:
      return "** or pow()";
  }
  return "?";
}

const char* cmp_symbol(CmpOp op) {
  switch (op) {
    case CmpOp::kLt:
      return "<";
    case CmpOp::kLe:
      return "<=";
    case CmpOp::kGt:
      return ">";
    case CmpOp::kGe:
      return ">=";
    default:
      return "==";
  }
}

[[noreturn]] void fail_operands(BinOp op, const Value& a, const Value& b) {
  fail(ErrorKind::kType, "unsupported operand type(s) for {}: '{}' and '{}'", op_symbol(op),
       a.type_name(), b.type_name());
}

int64_t add_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail_int_overflow();
  return r;
}
int64_t sub_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) fail_int_overflow();
  return r;
}
int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail_int_overflow();
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) fail_int_overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0.0) {
    if ((r < 0) != (b < 0)) r += b;
  } else {
    r = std::copysign(0.0, b);
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// Python semantics

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList: {
      const List& l = v.list();
      if (l.kind == SeqKind::kIterator) {
        if (l.consumed) return {};
        l.consumed = true;
        if (!l.deferred_type_error.empty())
          throw JinjaError(ErrorKind::kType, l.deferred_type_error);
      }
      return l.items;
    }
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, _] : v.dict().items) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      size_t i = 0;
      while (i < s.size()) {
        size_t at = i;
        py::next_cp(s, &i);
        chars.push_back(Value::string(s.substr(at, i - at), v.is_safe()));
      }
      return chars;
    }
    default:
      fail(ErrorKind::kType, "'{}' object is not iterable", v.type_name());
  }
}

Value Interpreter::getattr(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      raise_undefined(obj);
    case Value::Kind::kDict: {
      Value m = method_attr(obj, name);
      if (!m.is_undefined() || m.undefined_info()) return m;
      if (const Value* v = obj.dict().find(name)) return *v;
      return Value::undefined_attr(obj, std::string(name));
    }
    case Value::Kind::kString:
    case Value::Kind::kList: {
      Value m = method_attr(obj, name);
      if (!m.is_undefined() || m.undefined_info()) return m;
      return Value::undefined_attr(obj, std::string(name));
    }
    case Value::Kind::kObject: {
      Value v = obj.obj().get_attr(name);
      if (!v.is_undefined() || v.undefined_info()) return v;
      return Value::undefined_attr(obj, std::string(name));
    }
    default:
      return Value::undefined_attr(obj, std::string(name));
  }
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      raise_undefined(obj);
    case Value::Kind::kDict:
      if (key.hashable()) {
        if (const Value* v = obj.dict().find(key)) return *v;
      }
      break;
    case Value::Kind::kList:
      if (is_int_index(key) && obj.is_indexable()) {
        const auto& items = obj.list().items;
        int64_t i = key.as_int(), n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return items[i];
        return Value::undefined_element(obj, key);
      }
      break;
    case Value::Kind::kString:
      if (is_int_index(key)) {
        std::vector<size_t> off = py::offsets(obj.str());
        int64_t i = key.as_int(), n = static_cast<int64_t>(off.size()) - 1;
        if (i < 0) i += n;
        if (i >= 0 && i < n)
          return Value::string(obj.str().substr(off[i], off[i + 1] - off[i]), obj.is_safe());
        return Value::undefined_element(obj, key);
      }
      break;
    default:
      break;
  }
  if (key.is_string()) {
    if (obj.is_dict()) {
      Value m = method_attr(obj, key.str());
      if (!m.is_undefined() || m.undefined_info()) return m;
      return Value::undefined_attr(obj, key.str());
    }
    return getattr(obj, key.str());
  }
  return Value::undefined_element(obj, key);
}

Value Interpreter::binary(BinOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_number() && b.is_number()) {
    bool fl = a.is_float() || b.is_float();
    if (fl) {
      double x = a.to_double(), y = b.to_double();
      switch (op) {
        case BinOp::kAdd:
          return Value::floating(x + y);
        case BinOp::kSub:
          return Value::floating(x - y);
        case BinOp::kMul:
          return Value::floating(x * y);
        case BinOp::kDiv:
          if (y == 0.0) fail(ErrorKind::kZeroDivision, "float division by zero");
          return Value::floating(x / y);
        case BinOp::kFloorDiv:
          if (y == 0.0) fail(ErrorKind::kZeroDivision, "float floor division by zero");
          return Value::floating(std::floor(x / y));
        case BinOp::kMod:
          if (y == 0.0) fail(ErrorKind::kZeroDivision, "float modulo");
          return Value::floating(float_mod(x, y));
        case BinOp::kPow:
          if (x == 0.0 && y < 0)
            fail(ErrorKind::kZeroDivision, "0.0 cannot be raised to a negative power");
          return Value::floating(std::pow(x, y));
      }
    }
    int64_t x = a.as_int(), y = b.as_int();
    switch (op) {
      case BinOp::kAdd:
        return Value::integer(add_checked(x, y));
      case BinOp::kSub:
        return Value::integer(sub_checked(x, y));
      case BinOp::kMul:
        return Value::integer(mul_checked(x, y));
      case BinOp::kDiv:
        if (y == 0) fail(ErrorKind::kZeroDivision, "division by zero");
        return Value::floating(static_cast<double>(x) / static_cast<double>(y));
      case BinOp::kFloorDiv:
        if (y == 0) fail(ErrorKind::kZeroDivision, "integer division or modulo by zero");
        return Value::integer(floor_div(x, y));
      case BinOp::kMod:
        if (y == 0) fail(ErrorKind::kZeroDivision, "integer modulo by zero");
        return Value::integer(floor_mod(x, y));
      case BinOp::kPow: {
        if (y < 0) {
          if (x == 0) fail(ErrorKind::kZeroDivision, "0.0 cannot be raised to a negative power");
          return Value::floating(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        int64_t result = 1, base = x;
        for (int64_t e = y; e > 0; e >>= 1) {
          if (e & 1) result = mul_checked(result, base);
          if (e > 1) base = mul_checked(base, base);
        }
        return Value::integer(result);
      }
    }
  }
  if (op == BinOp::kAdd) {
    if (a.is_string() && b.is_string()) {
      check_string_size(a.str().size() + b.str().size());
      if (a.is_safe() && !b.is_safe())
        return Value::string(a.str() + py::escape_html(b.str()), true);
      if (b.is_safe() && !a.is_safe())
        return Value::string(py::escape_html(a.str()) + b.str(), true);
      return Value::string(a.str() + b.str(), a.is_safe());
    }
    if (a.is_string())
      fail(ErrorKind::kType, "can only concatenate str (not \"{}\") to str", b.type_name());
    if (a.is_sequence()) {
      const char* what = a.seq_kind() == SeqKind::kList ? "list" : "tuple";
      if (!b.is_list() || b.seq_kind() != a.seq_kind()) {
        fail(ErrorKind::kType, "can only concatenate {} (not \"{}\") to {}", what, b.type_name(),
             what);
      }
      check_list_size(a.list().items.size() + b.list().items.size());
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::list(std::move(items), a.seq_kind());
    }
    fail_operands(op, a, b);
  }
  if (op == BinOp::kMul) {
    const Value* seq = nullptr;
    const Value* count = nullptr;
    if ((a.is_string() || a.is_list()) && is_int_index(b)) seq = &a, count = &b;
    if ((b.is_string() || b.is_list()) && is_int_index(a)) seq = &b, count = &a;
    if (seq && (seq->is_string() || seq->is_sequence())) {
      int64_t n = std::max<int64_t>(0, count->as_int());
      if (seq->is_string()) {
        if (n > 0 && seq->str().size() > options_.max_value_bytes / static_cast<uint64_t>(n)) {
          check_string_size(options_.max_value_bytes + 1);
        }
        std::string out;
        out.reserve(seq->str().size() * n);
        for (int64_t i = 0; i < n; ++i) out += seq->str();
        return Value::string(std::move(out), seq->is_safe());
      }
      const auto& items = seq->list().items;
      if (n > 0 && items.size() > options_.max_list_items / static_cast<uint64_t>(n)) {
        check_list_size(options_.max_list_items + 1);
      }
      std::vector<Value> out;
      for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
      return Value::list(std::move(out), seq->seq_kind());
    }
  }
  if (op == BinOp::kMod && a.is_string()) {
    std::string out = py_percent_format(*this, a.str(), b, a.is_safe());
    check_string_size(out.size());
    return Value::string(std::move(out), a.is_safe());
  }
  fail_operands(op, a, b);
}

bool Interpreter::compare(CmpOp op, const Value& a, const Value& b) {
  switch (op) {
    case CmpOp::kEq:
      return a == b;
    case CmpOp::kNe:
      return !(a == b);
    case CmpOp::kIn:
      return contains(b, a);
    case CmpOp::kNotIn:
      return !contains(b, a);
    default:
      break;
  }
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  int c = 0;
  auto order = [&](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.to_double(), y = b.to_double();
      if (std::isnan(x) || std::isnan(y)) return false;
      c = order(x, y);
    } else {
      c = order(a.as_int(), b.as_int());
    }
  } else if (a.is_string() && b.is_string()) {
    c = a.str().compare(b.str());
    c = c < 0 ? -1 : (c > 0 ? 1 : 0);
  } else if (a.is_sequence() && b.is_sequence() && a.seq_kind() == b.seq_kind()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    size_t i = 0;
    while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
    if (i < x.size() && i < y.size()) return compare(op, x[i], y[i]);
    c = order(x.size(), y.size());
  } else {
    fail(ErrorKind::kType, "'{}' not supported between instances of '{}' and '{}'", cmp_symbol(op),
         a.type_name(), b.type_name());
  }
  switch (op) {
    case CmpOp::kLt:
      return c < 0;
    case CmpOp::kLe:
      return c <= 0;
    case CmpOp::kGt:
      return c > 0;
    case CmpOp::kGe:
      return c >= 0;
    default:
      return false;
  }
}

bool Interpreter::contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        fail(ErrorKind::kType, "'in <string>' requires string as left operand, not {}",
             item.type_name());
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const auto& v : iterate(container)) {
        if (v == item) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (!item.hashable()) fail(ErrorKind::kType, "unhashable type: '{}'", item.type_name());
      return container.dict().find(item) != nullptr;
    default:
      fail(ErrorKind::kType, "argument of type '{}' is not iterable", container.type_name());
  }
}

}  // namespace folio::jinja
