// Reads a Vocab from a GGUF file's `tokenizer.ggml.*` metadata.
#pragma once

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/vocab.h"

namespace folio::tokenizer {

// NotFound "tokenizer: ... has no tokenizer metadata" when the file carries
// no tokenizer.ggml.model; InvalidArgument when a key has the wrong type
// (tokens and merges: arrays of strings; scores: f32 or i32 array;
// token_type: i32 array; ids: integers; flags: bools); then every check of
// Vocab::create. Messages name the file.
Result<Vocab> load_vocab(const gguf::GgufFile& file);

}  // namespace folio::tokenizer
