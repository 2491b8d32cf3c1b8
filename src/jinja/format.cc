// Python string formatting for templates: str.format (format-spec mini
// language: fill, align, sign, #, 0, width, grouping, precision, type) and
// printf-style `%` formatting. Markup receivers escape their arguments.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {

constexpr int64_t kMaxWidth = 1 << 20;

struct Spec {
  std::string fill = " ";
  char align = 0;  // < > ^ =
  char sign = 0;   // + - space
  bool alt = false;
  bool zero = false;
  int64_t width = -1;
  char grouping = 0;  // , _
  int64_t precision = -1;
  char type = 0;
};

Spec parse_spec(std::string_view s) {
  Spec sp;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  // [[fill]align]
  size_t first_end = 0;
  if (!s.empty()) {
    size_t k = 0;
    py::next_cp(s, &k);
    first_end = k;
  }
  if (first_end < s.size() && is_align(s[first_end])) {
    sp.fill = std::string(s.substr(0, first_end));
    sp.align = s[first_end];
    i = first_end + 1;
  } else if (!s.empty() && is_align(s[0])) {
    sp.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp.sign = s[i++];
  if (i < s.size() && s[i] == 'z') ++i;
  if (i < s.size() && s[i] == '#') sp.alt = true, ++i;
  if (i < s.size() && s[i] == '0') sp.zero = true, ++i;
  auto number = [&]() {
    int64_t v = 0;
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + (s[i++] - '0');
      if (v > kMaxWidth) fail(ErrorKind::kValue, "Too many decimal digits in format string");
    }
    return i > start ? v : -1;
  };
  sp.width = number();
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) sp.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    sp.precision = number();
    if (sp.precision < 0) fail(ErrorKind::kValue, "Format specifier missing precision");
  }
  if (i < s.size()) sp.type = s[i++];
  if (i < s.size()) fail(ErrorKind::kValue, "Invalid format specifier '{}'", s);
  return sp;
}

std::string group_digits(const std::string& digits, char sep, int every) {
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int k = 0; k < n; ++k) {
    if (k && (n - k) % every == 0) out.push_back(sep);
    out.push_back(digits[k]);
  }
  return out;
}

std::string apply_width(const std::string& body, const std::string& sign_prefix, const Spec& sp,
                        char default_align) {
  char align = sp.align ? sp.align : (sp.zero ? '=' : default_align);
  std::string fill = sp.align ? sp.fill : (sp.zero ? "0" : sp.fill);
  int64_t len = static_cast<int64_t>(py::length(body) + py::length(sign_prefix));
  if (sp.width <= len) return sign_prefix + body;
  int64_t pad = sp.width - len;
  auto rep = [&](int64_t n) {
    std::string r;
    for (int64_t k = 0; k < n; ++k) r += fill;
    return r;
  };
  switch (align) {
    case '<':
      return sign_prefix + body + rep(pad);
    case '^':
      return rep(pad / 2) + sign_prefix + body + rep(pad - pad / 2);
    case '=':
      return sign_prefix + rep(pad) + body;
    default:
      return rep(pad) + sign_prefix + body;
  }
}

std::string c_format(const char* fmt_str, int precision, double x) {
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), fmt_str, precision, x);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(big.data(), big.size(), fmt_str, precision, x);
  big.resize(static_cast<size_t>(n));
  return big;
}

// The digits of a non-negative finite float in the given presentation type.
std::string float_body(double x, const Spec& sp, char type) {
  int p = static_cast<int>(sp.precision < 0 ? 6 : std::min<int64_t>(sp.precision, 300));
  if (std::isnan(x)) return std::isupper(static_cast<unsigned char>(type)) ? "NAN" : "nan";
  if (std::isinf(x)) return std::isupper(static_cast<unsigned char>(type)) ? "INF" : "inf";
  switch (type) {
    case 'f':
    case 'F':
      return c_format(sp.alt ? "%#.*f" : "%.*f", p, x);
    case 'e':
      return c_format(sp.alt ? "%#.*e" : "%.*e", p, x);
    case 'E':
      return c_format(sp.alt ? "%#.*E" : "%.*E", p, x);
    case '%':
      return c_format(sp.alt ? "%#.*f" : "%.*f", p, x * 100) + "%";
    case 'g':
    case 'G':
    case 'n': {
      if (p == 0) p = 1;
      std::string r = c_format(sp.alt ? "%#.*g" : "%.*g", p, x);
      if (type == 'G') {
        for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
      return r;
    }
    default: {  // no type
      if (sp.precision < 0) return py::float_repr(x);
      std::string r = c_format("%.*g", p == 0 ? 1 : p, x);
      if (r.find_first_of(".e") == std::string::npos) r += ".0";
      return r;
    }
  }
}

std::string format_number(const Value& v, const Spec& sp) {
  char type = sp.type;
  bool is_int =
      (v.is_int() || v.is_bool()) && !(type == 'e' || type == 'E' || type == 'f' || type == 'F' ||
                                       type == 'g' || type == 'G' || type == '%');
  std::string sign_prefix;
  std::string body;
  if (is_int) {
    int64_t x = v.as_int();
    bool neg = x < 0;
    uint64_t mag = neg ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
    if (type == 'c') {
      std::string ch;
      py::append_utf8(&ch, static_cast<uint32_t>(mag));
      return apply_width(ch, "", sp, '<');
    }
    int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
    const char* prefix = type == 'b'   ? "0b"
                         : type == 'o' ? "0o"
                         : type == 'x' ? "0x"
                         : type == 'X' ? "0X"
                                       : "";
    if (type != 0 && type != 'd' && type != 'n' && base == 10) {
      fail(ErrorKind::kValue, "Unknown format code '{}' for object of type '{}'", type,
           v.type_name());
    }
    const char* digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    if (mag == 0) body = "0";
    while (mag) {
      body.insert(body.begin(), digits[mag % static_cast<uint64_t>(base)]);
      mag /= static_cast<uint64_t>(base);
    }
    if (sp.grouping) body = group_digits(body, sp.grouping, base == 10 ? 3 : 4);
    if (neg) {
      sign_prefix.push_back('-');
    } else if (sp.sign == '+' || sp.sign == ' ') {
      sign_prefix.push_back(sp.sign);
    }
    if (sp.alt) sign_prefix += prefix;
    return apply_width(body, sign_prefix, sp, '>');
  }
  if (type && std::string_view("eEfFgGn%").find(type) == std::string_view::npos) {
    fail(ErrorKind::kValue, "Unknown format code '{}' for object of type '{}'", type,
         v.type_name());
  }
  double x = v.to_double();
  bool neg = std::signbit(x) && !std::isnan(x);
  body = float_body(std::fabs(x), sp, type);
  if (sp.grouping && std::isfinite(x)) {
    size_t end = body.find_first_not_of("0123456789");
    body = group_digits(body.substr(0, end), sp.grouping, 3) +
           (end == std::string::npos ? "" : body.substr(end));
  }
  if (neg) {
    sign_prefix.push_back('-');
  } else if (sp.sign == '+' || sp.sign == ' ') {
    sign_prefix.push_back(sp.sign);
  }
  return apply_width(body, sign_prefix, sp, '>');
}

std::string format_with_spec(const Value& v, std::string_view spec_text) {
  if (spec_text.empty()) return v.to_str();
  Spec sp = parse_spec(spec_text);
  if (v.is_string()) {
    if (sp.type && sp.type != 's') {
      fail(ErrorKind::kValue, "Unknown format code '{}' for object of type 'str'", sp.type);
    }
    if (sp.sign) fail(ErrorKind::kValue, "Sign not allowed in string format specifier");
    if (sp.align == '=')
      fail(ErrorKind::kValue, "'=' alignment not allowed in string format specifier");
    std::string s = v.str();
    if (sp.precision >= 0) {
      std::vector<size_t> off = py::offsets(s);
      if (static_cast<size_t>(sp.precision) < off.size() - 1)
        s = s.substr(0, off[static_cast<size_t>(sp.precision)]);
    }
    return apply_width(s, "", sp, '<');
  }
  if (v.is_number()) return format_number(v, sp);
  fail(ErrorKind::kType, "unsupported format string passed to {}.__format__", v.type_name());
}

std::string convert(const Value& v, char conv) {
  if (conv == 'r' || conv == 'a') return v.repr();
  return v.to_str();
}

}  // namespace

std::string py_format(Interpreter& in, const std::string& fmt_str, CallArgs& args,
                      bool escape_args) {
  std::string out;
  size_t i = 0, n = fmt_str.size();
  int auto_index = 0;
  bool manual = false, automatic = false;
  auto lookup_field = [&](std::string_view field) -> Value {
    size_t end = field.find_first_of(".[");
    std::string_view head = field.substr(0, end);
    Value v;
    if (head.empty()) {
      if (manual)
        fail(ErrorKind::kValue,
             "cannot switch from manual field specification to automatic field numbering");
      automatic = true;
      int idx = auto_index++;
      if (idx >= static_cast<int>(args.args.size())) {
        fail(ErrorKind::kIndex, "tuple index out of range");
      }
      v = args.args[static_cast<size_t>(idx)];
    } else if (std::all_of(head.begin(), head.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (automatic)
        fail(ErrorKind::kValue,
             "cannot switch from automatic field numbering to manual field specification");
      manual = true;
      size_t idx = head.size() > 9 ? SIZE_MAX : std::stoul(std::string(head));
      if (idx >= args.args.size()) {
        fail(ErrorKind::kIndex, "tuple index out of range");
      }
      v = args.args[idx];
    } else {
      bool found = false;
      for (const auto& [k, val] : args.kwargs) {
        if (k == head) {
          v = val;
          found = true;
        }
      }
      if (!found) fail(ErrorKind::kKey, "'{}'", head);
    }
    size_t p = end == std::string_view::npos ? field.size() : end;
    while (p < field.size()) {
      if (field[p] == '.') {
        size_t q = field.find_first_of(".[", p + 1);
        if (q == std::string_view::npos) q = field.size();
        v = in.getattr(v, field.substr(p + 1, q - p - 1));
        p = q;
      } else {
        size_t q = field.find(']', p);
        if (q == std::string_view::npos) fail(ErrorKind::kValue, "Missing ']' in format string");
        std::string_view key = field.substr(p + 1, q - p - 1);
        bool digits = !key.empty() && std::all_of(key.begin(), key.end(),
                                                  [](char c) { return c >= '0' && c <= '9'; });
        v = in.getitem(v, digits && key.size() < 18 ? Value::integer(std::stoll(std::string(key)))
                                                    : Value::string(std::string(key)));
        p = q + 1;
      }
    }
    return v;
  };
  while (i < n) {
    char c = fmt_str[i];
    if (c == '}') {
      if (i + 1 < n && fmt_str[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      fail(ErrorKind::kValue, "Single '}}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < n && fmt_str[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    // Find the matching '}' (one level of nested {} in the spec).
    size_t j = i + 1;
    int depth = 1;
    while (j < n && depth > 0) {
      if (fmt_str[j] == '{') ++depth;
      if (fmt_str[j] == '}') --depth;
      if (depth > 0) ++j;
    }
    if (j >= n) fail(ErrorKind::kValue, "expected '}}' before end of string");
    std::string_view inner(fmt_str.data() + i + 1, j - i - 1);
    size_t colon = std::string_view::npos;
    size_t bang = std::string_view::npos;
    int bracket = 0;
    for (size_t k = 0; k < inner.size(); ++k) {
      if (inner[k] == '[') ++bracket;
      if (inner[k] == ']') --bracket;
      if (bracket == 0 && inner[k] == '!' && bang == std::string_view::npos &&
          colon == std::string_view::npos)
        bang = k;
      if (bracket == 0 && inner[k] == ':') {
        colon = k;
        break;
      }
    }
    std::string_view field = inner.substr(0, std::min(bang, colon));
    char conv = 0;
    if (bang != std::string_view::npos) {
      size_t conv_end = colon == std::string_view::npos ? inner.size() : colon;
      if (conv_end != bang + 2) fail(ErrorKind::kValue, "expected ':' after conversion specifier");
      conv = inner[bang + 1];
      if (conv != 'r' && conv != 's' && conv != 'a') {
        fail(ErrorKind::kValue, "Unknown conversion specifier {}", std::string(1, conv));
      }
    }
    std::string spec = colon == std::string_view::npos ? "" : std::string(inner.substr(colon + 1));
    if (spec.find('{') != std::string::npos) {
      CallArgs copy = args;
      spec = py_format(in, spec, copy, false);
    }
    Value v = lookup_field(field);
    std::string piece;
    if (conv) {
      piece = format_with_spec(Value::string(convert(v, conv)), spec);
    } else {
      piece = format_with_spec(v, spec);
    }
    if (escape_args && !v.is_safe()) piece = py::escape_html(piece);
    out += piece;
    in.check_string_size(out.size());
    i = j + 1;
  }
  return out;
}

std::string py_percent_format(Interpreter& in, const std::string& fmt_str, const Value& args,
                              bool escape_args) {
  std::vector<Value> positional;
  const Dict* mapping = nullptr;
  if (args.is_list() && args.seq_kind() == SeqKind::kTuple) {
    positional = args.list().items;
  } else {
    positional.push_back(args);
    if (args.is_dict()) mapping = &args.dict();
  }
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> Value {
    if (next >= positional.size()) fail(ErrorKind::kType, "not enough arguments for format string");
    return positional[next++];
  };
  std::string out;
  size_t i = 0, n = fmt_str.size();
  while (i < n) {
    char c = fmt_str[i++];
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    if (i >= n) fail(ErrorKind::kValue, "incomplete format");
    Value v;
    bool have_value = false;
    if (fmt_str[i] == '(') {
      size_t close = fmt_str.find(')', i);
      if (close == std::string::npos) fail(ErrorKind::kValue, "incomplete format key");
      if (!mapping) fail(ErrorKind::kType, "format requires a mapping");
      std::string key = fmt_str.substr(i + 1, close - i - 1);
      const Value* found = mapping->find(std::string_view(key));
      if (!found) fail(ErrorKind::kKey, "'{}'", key);
      v = *found;
      have_value = true;
      used_mapping = true;
      i = close + 1;
    }
    Spec sp;
    while (i < n && std::string_view("-+ #0").find(fmt_str[i]) != std::string_view::npos) {
      char f = fmt_str[i++];
      if (f == '-') sp.align = '<';
      if (f == '+' || (f == ' ' && sp.sign != '+')) sp.sign = f;
      if (f == '#') sp.alt = true;
      if (f == '0') sp.zero = true;
    }
    if (i < n && fmt_str[i] == '*') {
      ++i;
      Value w = take();
      if (!w.is_int()) fail(ErrorKind::kType, "* wants int");
      sp.width = std::min<int64_t>(w.as_int(), kMaxWidth);
      if (sp.width < 0) sp.align = '<', sp.width = -sp.width;
    } else {
      while (i < n && fmt_str[i] >= '0' && fmt_str[i] <= '9') {
        sp.width = std::max<int64_t>(sp.width, 0) * 10 + (fmt_str[i++] - '0');
        if (sp.width > kMaxWidth) fail(ErrorKind::kValue, "width too big");
      }
    }
    if (i < n && fmt_str[i] == '.') {
      ++i;
      sp.precision = 0;
      if (i < n && fmt_str[i] == '*') {
        ++i;
        Value p = take();
        if (!p.is_int()) fail(ErrorKind::kType, "* wants int");
        sp.precision = std::clamp<int64_t>(p.as_int(), 0, 300);
      } else {
        while (i < n && fmt_str[i] >= '0' && fmt_str[i] <= '9') {
          sp.precision = std::min<int64_t>(sp.precision * 10 + (fmt_str[i++] - '0'), kMaxWidth);
        }
      }
    }
    while (i < n && (fmt_str[i] == 'h' || fmt_str[i] == 'l' || fmt_str[i] == 'L')) ++i;
    if (i >= n) fail(ErrorKind::kValue, "incomplete format");
    char conv = fmt_str[i++];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!have_value) v = take();
    if (sp.zero && sp.align != '<') {
      sp.align = '=';
      sp.fill.assign(1, '0');
    }
    std::string piece;
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? v.to_str() : v.repr();
        if (sp.precision >= 0) {
          std::vector<size_t> off = py::offsets(s);
          if (static_cast<size_t>(sp.precision) < off.size() - 1)
            s = s.substr(0, off[static_cast<size_t>(sp.precision)]);
        }
        Spec str_spec = sp;
        if (str_spec.align == '=') str_spec.align = 0, str_spec.fill = " ";
        if (!str_spec.align) str_spec.align = '>';
        str_spec.sign = 0;
        piece = apply_width(s, "", str_spec, '>');
        if (escape_args && !v.is_safe()) piece = py::escape_html(piece);
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'o':
      case 'x':
      case 'X':
      case 'c': {
        if (!v.is_number()) {
          fail(ErrorKind::kType, "%{} format: {} is required, not {}", conv,
               conv == 'd' || conv == 'i' || conv == 'u' ? "a real number" : "an integer",
               v.type_name());
        }
        Value iv = v;
        if (v.is_float()) {
          if (conv != 'd' && conv != 'i' && conv != 'u') {
            fail(ErrorKind::kType, "%{} format: an integer is required, not float", conv);
          }
          double d = v.as_float();
          if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
            fail(ErrorKind::kOverflow, "cannot convert float to integer");
          iv = Value::integer(static_cast<int64_t>(d));
        }
        Spec s2 = sp;
        s2.type = conv == 'i' || conv == 'u' ? 'd' : conv;
        s2.precision = -1;
        if (!s2.align) s2.align = '>';
        piece = format_number(Value::integer(iv.as_int()), s2);
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (!v.is_number()) fail(ErrorKind::kType, "must be real number, not {}", v.type_name());
        Spec s2 = sp;
        s2.type = conv;
        if (s2.precision < 0) s2.precision = 6;
        if (!s2.align) s2.align = '>';
        piece = format_number(Value::floating(v.to_double()), s2);
        break;
      }
      default:
        fail(ErrorKind::kValue, "unsupported format character '{}'", std::string(1, conv));
    }
    out += piece;
    in.check_string_size(out.size());
  }
  if (!used_mapping && !mapping && next < positional.size()) {
    fail(ErrorKind::kType, "not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace folio::jinja
