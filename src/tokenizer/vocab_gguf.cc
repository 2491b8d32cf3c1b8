#include "tokenizer/vocab_gguf.h"

#include <string>
#include <vector>

namespace folio::tokenizer {

namespace {

constexpr char kModelKey[] = "tokenizer.ggml.model";

Status with_file(const Status& s, const gguf::GgufFile& file) {
  if (s.ok() || file.path().empty()) return s;
  return s.with_context(file.path());
}

// Reads an optional integer id.
Status read_id(const gguf::GgufFile& file, const char* key, std::optional<int64_t>* out) {
  if (!file.has(key)) return Status();
  FOLIO_ASSIGN_OR_RETURN(*out, file.get_i64(key));
  return Status();
}

Status read_flag(const gguf::GgufFile& file, const char* key, std::optional<bool>* out) {
  if (!file.has(key)) return Status();
  FOLIO_ASSIGN_OR_RETURN(*out, file.get_bool(key));
  return Status();
}

Result<Vocab> load(const gguf::GgufFile& file) {
  if (!file.has(kModelKey)) {
    return not_found("tokenizer: the file has no tokenizer metadata ({} is missing)", kModelKey);
  }
  VocabSpec spec;
  FOLIO_ASSIGN_OR_RETURN(spec.model, file.get_string(kModelKey));
  if (file.has("general.name")) {
    FOLIO_ASSIGN_OR_RETURN(spec.name, file.get_string("general.name"));
  }
  if (file.has("tokenizer.ggml.pre")) {
    FOLIO_ASSIGN_OR_RETURN(spec.pre, file.get_string("tokenizer.ggml.pre"));
  }
  if (!file.has("tokenizer.ggml.tokens")) {
    return not_found("tokenizer: tokenizer.ggml.tokens is missing");
  }
  FOLIO_ASSIGN_OR_RETURN(spec.tokens, file.get_string_array("tokenizer.ggml.tokens"));

  std::vector<float> int_scores;  // i32 scores, converted (llama.cpp accepts both)
  if (file.has("tokenizer.ggml.scores")) {
    FOLIO_ASSIGN_OR_RETURN(const gguf::Array* a, file.get_array("tokenizer.ggml.scores"));
    if (const auto* f = a->get_if<float>()) {
      spec.scores = *f;
    } else if (const auto* i = a->get_if<int32_t>()) {
      int_scores.assign(i->begin(), i->end());
      spec.scores = int_scores;
    } else {
      return invalid_argument("tokenizer: tokenizer.ggml.scores is an array of {}, expected f32",
                              gguf::value_type_name(a->elem_type()));
    }
  }
  if (file.has("tokenizer.ggml.token_type")) {
    FOLIO_ASSIGN_OR_RETURN(spec.token_types,
                           file.get_array_of<int32_t>("tokenizer.ggml.token_type"));
  }
  if (file.has("tokenizer.ggml.merges")) {
    spec.has_merges = true;
    FOLIO_ASSIGN_OR_RETURN(spec.merges, file.get_string_array("tokenizer.ggml.merges"));
  }
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.bos_token_id", &spec.bos_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.eos_token_id", &spec.eos_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.eot_token_id", &spec.eot_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.eom_token_id", &spec.eom_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.unknown_token_id", &spec.unk_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.padding_token_id", &spec.pad_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.seperator_token_id", &spec.sep_id));
  FOLIO_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.mask_token_id", &spec.mask_id));
  FOLIO_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_bos_token", &spec.add_bos));
  FOLIO_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_eos_token", &spec.add_eos));
  FOLIO_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_space_prefix", &spec.add_space_prefix));
  return Vocab::create(spec);
}

}  // namespace

Result<Vocab> load_vocab(const gguf::GgufFile& file) {
  Result<Vocab> v = load(file);
  if (!v.ok()) return with_file(v.status(), file);
  return v;
}

}  // namespace folio::tokenizer
