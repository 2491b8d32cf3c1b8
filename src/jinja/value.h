// Value: the dynamic value of folio's Jinja engine, modelled on the Python
// objects jinja2 templates see (str, int, float, bool, None, list, tuple, dict,
// jinja2's Undefined, Markup, Namespace, LoopContext, macros, methods).
//
// Values are cheap to copy: strings, lists and dicts are shared immutable
// buffers (the sandbox jinja2 runs chat templates in forbids mutating them),
// objects (namespaces, loop contexts, callables) are shared references, as in
// Python. Only a Namespace is mutable (`{% set ns.x = ... %}`).
//
// Printing follows Python: str() of a value is what `{{ x }}` writes
// (True/False/None, 1.0, 1e-05, ['a', 1], {'k': None}); repr() is used for
// items inside containers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace folio::jinja {

class Value;
class Object;
class Interpreter;

// The sequence flavours jinja2 templates can meet:
//   kList, kTuple  Python list / tuple
//   kIterator      a single-pass iterator (`type` names it: "generator" for
//                  map / select / items..., "list_reverseiterator"); no len(),
//                  not subscriptable, not JSON serialisable. A generator whose
//                  body would raise (items of a non-mapping) carries the error
//                  and raises it when iterated, as Python's lazy body does.
//   kView          a dict view ("dict_items", "dict_keys", "dict_values"):
//                  sized and re-iterable, not subscriptable.
//   kRange         range(start, stop, step): indexable and sliceable (slices
//                  are ranges), prints as range(...), not JSON serialisable.
enum class SeqKind : uint8_t { kList, kTuple, kIterator, kView, kRange };

// Destroys values without recursion: containers hand their items to a
// thread-local queue that the outermost release drains, so a deeply nested
// structure (a chain of namespaces built in a loop) cannot overflow the stack
// when it dies.
void release_values(std::vector<Value>* values);

struct List {
  List() = default;
  List(const List&) = default;
  List(List&&) = default;
  List& operator=(const List&) = default;
  List& operator=(List&&) = default;
  ~List();

  std::vector<Value> items;
  SeqKind kind = SeqKind::kList;
  const char* type = nullptr;       // kIterator / kView type name
  std::string deferred_type_error;  // kIterator: TypeError raised on iteration
  mutable bool consumed = false;    // kIterator: exhausted after one pass
  int64_t range_start = 0, range_stop = 0, range_step = 1;  // kRange
};

// An insertion-ordered mapping (Python dict). Lookup is linear: template
// dicts are small (messages, tool schemas).
struct Dict {
  Dict() = default;
  Dict(const Dict&) = default;
  Dict(Dict&&) = default;
  Dict& operator=(const Dict&) = default;
  Dict& operator=(Dict&&) = default;
  ~Dict();

  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts or replaces (keeps the first insertion position, like Python).
  void set(Value key, Value value);
};

// Why a value is undefined; the message is only built when an operation on
// it fails (printing an undefined value is fine and gives "").
struct UndefinedInfo {
  enum class Kind : uint8_t {
    kName,       // 'x' is undefined
    kAttribute,  // 'dict object' has no attribute 'x'
    kElement,    // list object has no element 3
    kHint,       // a fixed message
    kUnsafe,     // sandbox: access to attribute 'append' of 'list' object is unsafe.
  };
  Kind kind = Kind::kName;
  std::string name;      // variable / attribute name, or repr of the key
  std::string obj_repr;  // jinja2's object_type_repr of the container
  std::string message() const;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kObject
  };

  Value() = default;  // undefined
  static Value none() { return Value(Kind::kNone); }
  static Value undefined_name(std::string name);
  static Value undefined_attr(const Value& obj, std::string name);
  static Value undefined_element(const Value& obj, const Value& key);
  static Value undefined_hint(std::string message);
  static Value undefined_unsafe(const Value& obj, std::string attr);
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double f);
  static Value string(std::string s, bool safe = false);
  static Value list(std::vector<Value> items, SeqKind kind = SeqKind::kList);
  // A kIterator / kView sequence named `type` ("generator", "dict_items").
  static Value iterator(std::vector<Value> items, const char* type,
                        std::string deferred_type_error = {});
  static Value view(std::vector<Value> items, const char* type);
  // range(start, stop, step) (step != 0; the caller bounds its length).
  static Value range(int64_t start, int64_t stop, int64_t step);
  static Value dict(Dict d);
  static Value object(std::shared_ptr<Object> obj);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python's numbers.Number (bool included).
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_safe() const { return kind_ == Kind::kString && flag_; }  // markupsafe.Markup
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }  // kInt or kBool
  double as_float() const { return f_; }
  // Number as double (int, float, bool).
  double to_double() const;
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  const List& list() const { return *static_cast<const List*>(ptr_.get()); }
  SeqKind seq_kind() const { return list().kind; }
  // A Python list or tuple (indexable, sliceable, JSON serialisable).
  bool is_sequence() const {
    return kind_ == Kind::kList &&
           (list().kind == SeqKind::kList || list().kind == SeqKind::kTuple);
  }
  // Supports integer indexing and slicing: list, tuple, range.
  bool is_indexable() const {
    return is_sequence() || (kind_ == Kind::kList && list().kind == SeqKind::kRange);
  }
  const Dict& dict() const { return *static_cast<const Dict*>(ptr_.get()); }
  Object& obj() const { return *const_cast<Object*>(static_cast<const Object*>(ptr_.get())); }
  // Why the value is undefined (null for a plain undefined or another kind).
  const UndefinedInfo* undefined_info() const {
    return kind_ == Kind::kUndefined ? static_cast<const UndefinedInfo*>(ptr_.get()) : nullptr;
  }
  // Same underlying object (Python `is` for reference types).
  bool same_ref(const Value& other) const;

  // Python truthiness (Undefined is false, objects true).
  bool truthy() const;
  // Python type name for error messages: "str", "int", "NoneType", "list",
  // "dict", "generator", "Undefined", "Namespace", ...
  std::string type_name() const;
  // jinja2's object_type_repr: "dict object", "None", "jinja2.utils.Namespace object".
  std::string object_type_repr() const;

  // Python str() / repr(). Recursion through namespaces is cut at a fixed depth.
  std::string to_str() const;
  std::string repr() const;
  void append_str(std::string* out) const;
  void append_repr(std::string* out, int depth = 0) const;

  // Python ==. Never throws.
  friend bool operator==(const Value& a, const Value& b);
  // Python hash() compatibility class for dict keys: false for unhashable
  // values (list, dict, namespace).
  bool hashable() const;

 private:
  explicit Value(Kind k) : kind_(k) {}

  Kind kind_ = Kind::kUndefined;
  bool flag_ = false;  // strings: Markup
  union {
    int64_t i_ = 0;  // kInt; kBool as 0 / 1
    double f_;       // kFloat
  };
  // kString: std::string, kList: List, kDict: Dict, kObject: Object,
  // kUndefined: UndefinedInfo (or null). One pointer keeps Value at 32 bytes.
  std::shared_ptr<const void> ptr_;
};

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

// Reference-type objects: namespaces, loop contexts, callables.
class Object : public std::enable_shared_from_this<Object> {
 public:
  virtual ~Object() = default;
  // Python type name (type(x).__name__).
  virtual std::string type_name() const = 0;
  // jinja2's object_type_repr ("jinja2.utils.Namespace object").
  virtual std::string object_type_repr() const { return type_name() + " object"; }
  virtual std::string repr(int depth) const = 0;
  // Attribute lookup; returns an undefined value (no info) when missing.
  virtual Value get_attr(std::string_view name) const { return Value(); }
  virtual bool callable() const { return false; }
  virtual Value call(Interpreter& in, CallArgs& args);
  virtual bool is_namespace() const { return false; }
};

}  // namespace folio::jinja
