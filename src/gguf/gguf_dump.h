// Human-readable rendering of a GGUF file, in the spirit of llama.cpp's
// gguf-dump: a header, every metadata key with its type and value (arrays by
// their first items and length; strings quoted, escaped and cut), then the
// tensor table. Used by `folio gguf`; returns text, prints nothing.
#pragma once

#include <cstddef>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/value.h"

namespace folio::gguf {

struct DumpOptions {
  bool metadata = true;
  bool tensors = true;
  size_t max_array_items = 8;     // items shown per array
  size_t max_string_bytes = 120;  // bytes shown of a string value (array items: at most 40)
};

// `"llama"`, `32000`, `1e-05`, `true`, `[ "<unk>", "<s>", ... ] (32000 items)`.
std::string format_value(const Value& value, const DumpOptions& options = {});
// "u32", "string", "[string]", "[array]".
std::string format_type(const Value& value);
std::string dump_gguf(const GgufFile& file, const DumpOptions& options = {});

}  // namespace folio::gguf
