#include "gguf/gguf_dump.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/escape.h"

namespace folio::gguf {

namespace {

constexpr size_t kMaxItemStringBytes = 40;

class ValueFormatter {
 public:
  explicit ValueFormatter(const DumpOptions& options)
      : options_(options),
        // Bounds the output of arrays of arrays: at most this many items in all.
        budget_(std::max<size_t>(1, options.max_array_items) * 4) {}

  void value(const Value& v, std::string* out) {
    std::visit([&](const auto& x) { scalar(x, options_.max_string_bytes, true, out); },
               v.storage());
  }

 private:
  void string(const std::string& s, size_t max_bytes, std::string* out) {
    *out += '"';
    *out += escape_string(s, max_bytes);
    *out += '"';
    if (s.size() > max_bytes) *out += fmt::format(" ({} bytes)", s.size());
  }

  template <typename T>
  void scalar(const T& x, size_t max_bytes, bool top, std::string* out) {
    if constexpr (std::is_same_v<T, std::string>) {
      string(x, max_bytes, out);
    } else if constexpr (std::is_same_v<T, Array>) {
      array(x, top, out);
    } else if constexpr (std::is_same_v<T, bool>) {
      *out += x ? "true" : "false";
    } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
      *out += fmt::format("{}", static_cast<int>(x));
    } else {
      *out += fmt::format("{}", x);
    }
  }

  void array(const Array& a, bool top, std::string* out) {
    const size_t n = a.size();
    const size_t shown = std::min({n, options_.max_array_items, budget_});
    budget_ -= shown;
    *out += '[';
    const std::vector<uint8_t>* bools = a.bools();
    std::visit(
        [&](const auto& items) {
          for (size_t i = 0; i < shown; ++i) {
            *out += i == 0 ? " " : ", ";
            using T = typename std::decay_t<decltype(items)>::value_type;
            if constexpr (std::is_same_v<T, uint8_t>) {
              if (bools != nullptr) {
                *out += items[i] ? "true" : "false";
                continue;
              }
            }
            scalar(items[i], std::min(kMaxItemStringBytes, options_.max_string_bytes), false, out);
          }
        },
        a.storage());
    if (shown < n) *out += shown == 0 ? " ..." : ", ...";
    *out += n == 0 ? "]" : " ]";
    if (top || shown < n) *out += fmt::format(" ({} items)", n);
  }

  const DumpOptions& options_;
  size_t budget_;
};

std::string shape_of(const TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += fmt::format("{}{}", d ? ", " : "", t.ne[d]);
  return s + "]";
}

}  // namespace

std::string format_value(const Value& value, const DumpOptions& options) {
  std::string out;
  ValueFormatter(options).value(value, &out);
  return out;
}

std::string format_type(const Value& value) {
  if (const Array* a = value.array()) return fmt::format("[{}]", value_type_name(a->elem_type()));
  return value_type_name(value.type());
}

std::string dump_gguf(const GgufFile& file, const DumpOptions& options) {
  std::string out;
  if (!file.path().empty()) out += fmt::format("file:        {}\n", file.path());
  out += fmt::format("version:     {}\n", file.version());
  out += fmt::format("tensors:     {}\n", file.tensors().size());
  out += fmt::format("kv pairs:    {}\n", file.metadata().size());
  out += fmt::format("alignment:   {}\n", file.alignment());
  out += fmt::format("data offset: {}\n", file.data_offset());
  out += fmt::format("file size:   {}\n", file.file_size());
  if (options.metadata) {
    out += fmt::format("\nmetadata ({} keys):\n", file.metadata().size());
    size_t i = 0;
    for (const KeyValue& kv : file.metadata()) {
      out += fmt::format("{:6}  {:<9} {} = {}\n", ++i, format_type(kv.value),
                         escape_string(kv.key, 200), format_value(kv.value, options));
    }
  }
  if (options.tensors) {
    out += fmt::format("\ntensors ({}; offsets relative to the data section at {}):\n",
                       file.tensors().size(), file.data_offset());
    out += fmt::format("{:>6}  {:<8} {:<24} {:>12} {:>12}  {}\n", "index", "type", "shape", "bytes",
                       "offset", "name");
    size_t i = 0;
    for (const TensorInfo& t : file.tensors()) {
      out += fmt::format("{:6}  {:<8} {:<24} {:>12} {:>12}  {}\n", i++, t.type_name(), shape_of(t),
                         t.nbytes, t.offset, escape_string(t.name, 200));
    }
  }
  return out;
}

}  // namespace folio::gguf
