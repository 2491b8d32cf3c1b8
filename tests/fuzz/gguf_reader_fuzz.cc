// libFuzzer target for the GGUF reader. Any input must either fail with a
// "gguf: ..." error or parse into a file whose every part can be used: the
// dump, every typed getter, every tensor view and every tensor byte; and the
// parsed file must survive a write -> read round trip unchanged. Anything else
// (a sanitizer report, a CHECK, a trap below) is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_dump.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace {

using folio::Result;
using folio::gguf::GgufFile;

void exercise(const GgufFile& f) {
  volatile size_t sink = folio::gguf::dump_gguf(f).size();
  for (const folio::gguf::KeyValue& kv : f.metadata()) {
    if (f.find(kv.key) != &kv.value) __builtin_trap();
    sink = sink + f.get_u32(kv.key).ok() + f.get_i64(kv.key).ok() + f.get_f32(kv.key).ok() +
           f.get_bool(kv.key).ok() + f.get_string(kv.key).ok() + f.get_string_array(kv.key).ok() +
           f.get_array_of<float>(kv.key).ok() + f.get_int_array(kv.key).ok();
  }
  for (const folio::gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_bytes(t);
    if (bytes.size() != t.nbytes || bytes.empty()) __builtin_trap();
    sink = sink + bytes.front() + bytes.back();  // sanitizers check both ends
    Result<folio::TensorView> v = f.tensor_view(t.name);
    if (v.ok() && v->nbytes_contiguous() != t.nbytes) __builtin_trap();
  }
  (void)sink;
}

void round_trip(const GgufFile& f) {
  Result<folio::gguf::GgufWriter> w = folio::gguf::GgufWriter::from_file(f);
  if (!w.ok()) __builtin_trap();
  const std::vector<uint8_t> bytes = w->to_bytes();
  Result<GgufFile> g = GgufFile::parse(bytes);
  if (!g.ok()) __builtin_trap();
  if (g->alignment() != f.alignment() || g->metadata().size() != f.metadata().size() ||
      g->tensors().size() != f.tensors().size()) {
    __builtin_trap();
  }
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    if (g->metadata()[i].key != f.metadata()[i].key ||
        !(g->metadata()[i].value == f.metadata()[i].value)) {
      __builtin_trap();
    }
  }
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = g->tensors()[i];
    if (a.name != b.name || a.type_id != b.type_id || a.n_dims != b.n_dims || a.ne != b.ne ||
        a.nbytes != b.nbytes) {
      __builtin_trap();
    }
    const auto x = f.tensor_bytes(a);
    const auto y = g->tensor_bytes(b);
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end())) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<GgufFile> f = GgufFile::parse(std::span<const uint8_t>(data, size));
  if (!f.ok()) {
    const std::string& m = f.status().message();
    if (m.rfind("gguf: ", 0) != 0) __builtin_trap();
    return 0;
  }
  exercise(*f);
  round_trip(*f);
  return 0;
}
