// Global functions: jinja2's defaults (range, dict, namespace, cycler,
// joiner) with the sandbox's range limit, and Hugging Face's chat-template
// helpers raise_exception(message) and strftime_now(format).
#include <chrono>
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/objects.h"

namespace folio::jinja {

namespace {

// jinja2.sandbox.MAX_RANGE
constexpr int64_t kMaxRange = 100000;

int64_t int_arg(const Value& v) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_undefined())
    throw JinjaError(ErrorKind::kUndefined,
                     v.undefined_info() ? v.undefined_info()->message() : "undefined");
  fail(ErrorKind::kType, "'{}' object cannot be interpreted as an integer", v.type_name());
}

Value g_range(Interpreter& in, CallArgs& call) {
  if (!call.kwargs.empty()) fail(ErrorKind::kType, "range() takes no keyword arguments");
  size_t n = call.args.size();
  if (n == 0) fail(ErrorKind::kType, "range expected at least 1 argument, got 0");
  if (n > 3) fail(ErrorKind::kType, "range expected at most 3 arguments, got {}", n);
  int64_t start = 0, stop, step = 1;
  if (n == 1) {
    stop = int_arg(call.args[0]);
  } else {
    start = int_arg(call.args[0]);
    stop = int_arg(call.args[1]);
    if (n == 3) step = int_arg(call.args[2]);
  }
  if (step == 0) fail(ErrorKind::kValue, "range() arg 3 must not be zero");
  // Length computed without overflow.
  long double span =
      step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  long double count = span <= 0 ? 0
                                : (span + (step > 0 ? step : -static_cast<long double>(step)) - 1) /
                                      (step > 0 ? step : -static_cast<long double>(step));
  if (count > kMaxRange) {
    fail(ErrorKind::kOverflow,
         "Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange);
  }
  (void)in;
  return Value::range(start, stop, step);
}

// dict(*args, **kwargs) as Python builds it.
Dict build_dict(Interpreter& in, CallArgs& call, const char* fname) {
  if (call.args.size() > 1)
    fail(ErrorKind::kType, "{} expected at most 1 argument, got {}", fname, call.args.size());
  Dict d;
  if (call.args.size() == 1) {
    const Value& src = call.args[0];
    if (src.is_dict()) {
      d = src.dict();
    } else if (src.is_object() && src.obj().is_namespace()) {
      fail(ErrorKind::kType, "'Namespace' object is not iterable");
    } else {
      size_t i = 0;
      for (const auto& item : in.iterate(src)) {
        std::vector<Value> pair =
            (item.is_list() || item.is_string()) ? in.iterate(item) : std::vector<Value>{};
        if (!item.is_list() && !item.is_string()) {
          fail(ErrorKind::kType,
               "cannot convert dictionary update sequence element #{} to a sequence", i);
        }
        if (pair.size() != 2) {
          fail(ErrorKind::kValue,
               "dictionary update sequence element #{} has length {}; 2 is required", i,
               pair.size());
        }
        if (!pair[0].hashable())
          fail(ErrorKind::kType, "unhashable type: '{}'", pair[0].type_name());
        d.set(pair[0], pair[1]);
        ++i;
      }
    }
  }
  for (auto& [k, v] : call.kwargs) d.set(Value::string(k), v);
  return d;
}

Value g_dict(Interpreter& in, CallArgs& call) {
  return Value::dict(build_dict(in, call, "dict"));
}

Value g_namespace(Interpreter& in, CallArgs& call) {
  Dict d = build_dict(in, call, "Namespace");
  auto ns = std::make_shared<Namespace>();
  in.track_namespace(ns);
  for (auto& [k, v] : d.items) {
    if (!k.is_string()) fail(ErrorKind::kType, "keywords must be strings");
    ns->set(k.str(), v);
  }
  return Value::object(std::move(ns));
}

Value g_cycler(Interpreter&, CallArgs& call) {
  if (call.args.empty()) fail(ErrorKind::kRuntime, "at least one item has to be provided");
  return Value::object(std::make_shared<Cycler>(call.args));
}

Value g_joiner(Interpreter&, CallArgs& call) {
  Args a("joiner", call, {"sep"});
  return Value::object(std::make_shared<Joiner>(a.has(0) ? a[0].to_str() : ", "));
}

Value g_raise_exception(Interpreter&, CallArgs& call) {
  Args a("raise_exception", call, {"message"}, 1);
  throw JinjaError(ErrorKind::kTemplate, a[0].to_str());
}

// datetime.strftime: %f, %z and %Z are Python's; the rest is C strftime.
Value g_strftime_now(Interpreter& in, CallArgs& call) {
  Args a("strftime_now", call, {"format"}, 1);
  if (!a[0].is_string())
    fail(ErrorKind::kType, "strftime() argument 1 must be str, not {}", a[0].type_name());
  std::tm tm{};
  int64_t micros = 0;
  bool aware = false;
  if (in.options().now) {
    tm = *in.options().now;
  } else {
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    localtime_r(&t, &tm);
    micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
             1000000;
  }
  const std::string& f = a[0].str();
  std::string expanded;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '%' && i + 1 < f.size()) {
      char c = f[i + 1];
      if (c == 'f') {
        expanded += fmt::format("{:06d}", micros);
        ++i;
        continue;
      }
      if ((c == 'z' || c == 'Z') && !aware) {  // naive datetime: empty
        ++i;
        continue;
      }
      expanded += f.substr(i, 2);
      ++i;
      continue;
    }
    expanded.push_back(f[i]);
  }
  if (expanded.empty()) return Value::string("");
  // strftime returns 0 when the buffer is too small: grow it (bounded).
  for (size_t size = expanded.size() * 8 + 64;; size *= 2) {
    in.check_string_size(size / 2);
    std::string out(size, '\0');
    size_t n = std::strftime(out.data(), out.size(), expanded.c_str(), &tm);
    if (n > 0 || size > expanded.size() * 64) {
      out.resize(n);
      return Value::string(std::move(out));
    }
  }
}

struct GlobalEntry {
  std::string_view name;
  BuiltinFn fn;
};

constexpr GlobalEntry kGlobals[] = {
    {"cycler", g_cycler},
    {"dict", g_dict},
    {"joiner", g_joiner},
    {"namespace", g_namespace},
    {"raise_exception", g_raise_exception},
    {"range", g_range},
    {"strftime_now", g_strftime_now},
};

}  // namespace

Value find_global(std::string_view name) {
  for (const auto& g : kGlobals) {
    if (g.name == name)
      return Value::object(std::make_shared<BuiltinFunction>(std::string(name), g.fn));
  }
  return Value();
}

}  // namespace folio::jinja
