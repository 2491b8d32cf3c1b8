#include "jinja/value.h"

#include <fmt/format.h>

#include "jinja/error.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {
constexpr int kMaxReprDepth = 64;
}  // namespace

// ---------------------------------------------------------------------------
// Iterative destruction

namespace {
thread_local std::vector<Value>* t_pending = nullptr;
}  // namespace

void release_values(std::vector<Value>* values) {
  if (values->empty()) return;
  if (t_pending) {
    for (auto& v : *values) t_pending->push_back(std::move(v));
    values->clear();
    return;
  }
  std::vector<Value> pending = std::move(*values);
  values->clear();
  t_pending = &pending;
  while (!pending.empty()) {
    Value v = std::move(pending.back());
    pending.pop_back();
    v = Value();  // destroys the old value; its containers append to `pending`
  }
  t_pending = nullptr;
}

List::~List() {
  release_values(&items);
}

Dict::~Dict() {
  if (items.empty()) return;
  std::vector<Value> values;
  values.reserve(items.size() * 2);
  for (auto& [k, v] : items) {
    values.push_back(std::move(k));
    values.push_back(std::move(v));
  }
  items.clear();
  release_values(&values);
}

// ---------------------------------------------------------------------------
// Dict

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

// ---------------------------------------------------------------------------
// Undefined

std::string UndefinedInfo::message() const {
  switch (kind) {
    case Kind::kName:
      return fmt::format("'{}' is undefined", name);
    case Kind::kAttribute: {
      std::string out;
      py::append_repr(&out, obj_repr);
      out += " has no attribute ";
      py::append_repr(&out, name);
      return out;
    }
    case Kind::kElement:
      return fmt::format("{} has no element {}", obj_repr, name);
    case Kind::kHint:
    case Kind::kUnsafe:
      return name;
  }
  return name;
}

Value Value::undefined_name(std::string name) {
  Value v;
  auto info = std::make_shared<UndefinedInfo>();
  info->kind = UndefinedInfo::Kind::kName;
  info->name = std::move(name);
  v.ptr_ = std::move(info);
  return v;
}

Value Value::undefined_attr(const Value& obj, std::string name) {
  Value v;
  auto info = std::make_shared<UndefinedInfo>();
  info->kind = UndefinedInfo::Kind::kAttribute;
  info->name = std::move(name);
  info->obj_repr = obj.object_type_repr();
  v.ptr_ = std::move(info);
  return v;
}

Value Value::undefined_element(const Value& obj, const Value& key) {
  Value v;
  auto info = std::make_shared<UndefinedInfo>();
  info->kind = UndefinedInfo::Kind::kElement;
  info->name = key.repr();
  info->obj_repr = obj.object_type_repr();
  v.ptr_ = std::move(info);
  return v;
}

Value Value::undefined_hint(std::string message) {
  Value v;
  auto info = std::make_shared<UndefinedInfo>();
  info->kind = UndefinedInfo::Kind::kHint;
  info->name = std::move(message);
  v.ptr_ = std::move(info);
  return v;
}

Value Value::undefined_unsafe(const Value& obj, std::string attr) {
  Value v;
  auto info = std::make_shared<UndefinedInfo>();
  info->kind = UndefinedInfo::Kind::kUnsafe;
  std::string msg = "access to attribute ";
  py::append_repr(&msg, attr);
  msg += " of ";
  py::append_repr(&msg, obj.type_name());
  msg += " object is unsafe.";
  info->name = std::move(msg);
  v.ptr_ = std::move(info);
  return v;
}

// ---------------------------------------------------------------------------
// Constructors

Value Value::boolean(bool b) {
  Value v(Kind::kBool);
  v.i_ = b ? 1 : 0;  // bool is an int in Python: as_int() works on it
  return v;
}

Value Value::integer(int64_t i) {
  Value v(Kind::kInt);
  v.i_ = i;
  return v;
}

Value Value::floating(double f) {
  Value v(Kind::kFloat);
  v.f_ = f;
  return v;
}

Value Value::string(std::string s, bool safe) {
  Value v(Kind::kString);
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  v.flag_ = safe;
  return v;
}

Value Value::list(std::vector<Value> items, SeqKind kind) {
  Value v(Kind::kList);
  auto l = std::make_shared<List>();
  l->items = std::move(items);
  l->kind = kind;
  v.ptr_ = std::move(l);
  return v;
}

Value Value::iterator(std::vector<Value> items, const char* type, std::string deferred_type_error) {
  Value v(Kind::kList);
  auto l = std::make_shared<List>();
  l->items = std::move(items);
  l->kind = SeqKind::kIterator;
  l->type = type;
  l->deferred_type_error = std::move(deferred_type_error);
  v.ptr_ = std::move(l);
  return v;
}

Value Value::view(std::vector<Value> items, const char* type) {
  Value v(Kind::kList);
  auto l = std::make_shared<List>();
  l->items = std::move(items);
  l->kind = SeqKind::kView;
  l->type = type;
  v.ptr_ = std::move(l);
  return v;
}

Value Value::range(int64_t start, int64_t stop, int64_t step) {
  Value v(Kind::kList);
  auto l = std::make_shared<List>();
  l->kind = SeqKind::kRange;
  l->range_start = start;
  l->range_stop = stop;
  l->range_step = step;
  for (int64_t x = start; step > 0 ? x < stop : x > stop; x += step) {
    l->items.push_back(Value::integer(x));
    if (step > 0 ? stop - x <= step : x - stop <= -step) break;
  }
  v.ptr_ = std::move(l);
  return v;
}

Value Value::dict(Dict d) {
  Value v(Kind::kDict);
  v.ptr_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::object(std::shared_ptr<Object> obj) {
  Value v(Kind::kObject);
  v.ptr_ = std::move(obj);
  return v;
}

double Value::to_double() const {
  if (kind_ == Kind::kFloat) return f_;
  return static_cast<double>(i_);
}

bool Value::same_ref(const Value& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kString:
    case Kind::kList:
    case Kind::kDict:
    case Kind::kObject:
      return ptr_ == other.ptr_;
    default:
      return *this == other;
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return list().kind == SeqKind::kIterator || !list().items.empty();
    case Kind::kDict:
      return !dict().items.empty();
    case Kind::kObject:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return flag_ ? "Markup" : "str";
    case Kind::kList:
      switch (list().kind) {
        case SeqKind::kList:
          return "list";
        case SeqKind::kTuple:
          return "tuple";
        case SeqKind::kIterator:
        case SeqKind::kView:
          return list().type;
        case SeqKind::kRange:
          return "range";
      }
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return obj().type_name();
  }
  return "object";
}

std::string Value::object_type_repr() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kUndefined:
      return "jinja2.runtime.Undefined object";
    case Kind::kString:
      if (flag_) return "markupsafe.Markup object";
      return "str object";
    case Kind::kObject:
      return obj().object_type_repr();
    default:
      return type_name() + " object";
  }
}

std::string Value::to_str() const {
  std::string out;
  append_str(&out);
  return out;
}

std::string Value::repr() const {
  std::string out;
  append_repr(&out);
  return out;
}

void Value::append_str(std::string* out) const {
  switch (kind_) {
    case Kind::kUndefined:
      return;
    case Kind::kString:
      out->append(str());
      return;
    default:
      append_repr(out);
      return;
  }
}

void Value::append_repr(std::string* out, int depth) const {
  if (depth > kMaxReprDepth) {
    out->append("...");
    return;
  }
  switch (kind_) {
    case Kind::kUndefined:
      out->append("Undefined");
      return;
    case Kind::kNone:
      out->append("None");
      return;
    case Kind::kBool:
      out->append(i_ ? "True" : "False");
      return;
    case Kind::kInt:
      out->append(std::to_string(i_));
      return;
    case Kind::kFloat:
      out->append(py::float_repr(f_));
      return;
    case Kind::kString:
      if (flag_) {
        out->append("Markup(");
        py::append_repr(out, str());
        out->push_back(')');
      } else {
        py::append_repr(out, str());
      }
      return;
    case Kind::kList: {
      const List& l = list();
      if (l.kind == SeqKind::kIterator) {
        out->append(fmt::format("<{} object>", l.type));
        return;
      }
      if (l.kind == SeqKind::kRange) {
        out->append(fmt::format("range({}, {}", l.range_start, l.range_stop));
        if (l.range_step != 1) out->append(fmt::format(", {}", l.range_step));
        out->push_back(')');
        return;
      }
      bool view = l.kind == SeqKind::kView;
      if (view) out->append(l.type).append("(");
      bool tuple = l.kind == SeqKind::kTuple;
      out->push_back(tuple ? '(' : '[');
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out->append(", ");
        l.items[i].append_repr(out, depth + 1);
      }
      if (tuple && l.items.size() == 1) out->push_back(',');
      out->push_back(tuple ? ')' : ']');
      if (view) out->push_back(')');
      return;
    }
    case Kind::kDict: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, v] : dict().items) {
        if (!first) out->append(", ");
        first = false;
        k.append_repr(out, depth + 1);
        out->append(": ");
        v.append_repr(out, depth + 1);
      }
      out->push_back('}');
      return;
    }
    case Kind::kObject:
      out->append(obj().repr(depth + 1));
      return;
  }
}

bool operator==(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind_ == K::kFloat || b.kind_ == K::kFloat) return a.to_double() == b.to_double();
    return a.i_ == b.i_;
  }
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      return a.ptr_ == b.ptr_ || a.str() == b.str();
    case K::kList: {
      if (a.ptr_ == b.ptr_) return true;
      const List& la = a.list();
      const List& lb = b.list();
      if (la.kind != lb.kind || la.kind == SeqKind::kIterator) return false;
      if (la.items.size() != lb.items.size()) return false;
      for (size_t i = 0; i < la.items.size(); ++i) {
        if (!(la.items[i] == lb.items[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      if (a.ptr_ == b.ptr_) return true;
      if (a.dict().items.size() != b.dict().items.size()) return false;
      for (const auto& [k, v] : a.dict().items) {
        const Value* other = b.dict().find(k);
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
    case K::kObject:
      return a.ptr_ == b.ptr_;
    default:
      return false;
  }
}

bool Value::hashable() const {
  switch (kind_) {
    case Kind::kList:
      if (list().kind != SeqKind::kTuple)
        return list().kind == SeqKind::kIterator || list().kind == SeqKind::kRange;
      for (const auto& item : list().items) {
        if (!item.hashable()) return false;
      }
      return true;
    case Kind::kDict:
      return false;
    default:
      return true;
  }
}

Value Object::call(Interpreter&, CallArgs&) {
  fail(ErrorKind::kType, "'{}' object is not callable", type_name());
}

}  // namespace folio::jinja
