// Pre-tokenizers: split text into the pieces BPE merges run inside. Each kind
// is the regex (or regex sequence) of a model family's tokenizer.json,
// implemented as hand-written matchers over decoded code points with
// PCRE/Oniguruma leftmost-first semantics (alternatives tried in order,
// greedy quantifiers with backtracking where it matters, lookahead for
// `\s+(?!\S)`). A sequence applies its regexes one after another, each to the
// pieces of the previous one, keeping both matches and the text between them
// (Hugging Face's Split with behaviour "Isolated").
//
// The regexes (facts from the models' tokenizer.json files):
//   gpt2      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama3    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2     llama3 with \p{N} (single digits)
//   qwen35    qwen2 with [\p{L}\p{M}]+ for letters and [^\s\p{L}\p{M}\p{N}] for other
//   starcoder \p{N} then gpt2
//   falcon    [\p{P}\$\+<=>\^~\|`]+ then gpt2 then [0-9][0-9][0-9]
//   default   [\p{P}\$\+<=>\^~\|]+ then gpt2 then \p{N}+ then [0-9][0-9][0-9]
//   deepseek-llm  [\r\n], \s?[cased letters]+, \s?[ASCII/fullwidth punct]+, \s+$,
//             [CJK]+, \p{N}+
//   deepseek-coder  [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK]+, \p{N}
//   seed-coder  qwen2 with  ?[^\s\p{L}\p{N}]+ (no newlines after it)
//   newlines  [^\n]+|[\n]+ (Gemma 4: BPE over the whole line)
//   gpt4o     [^\r\n\p{L}\p{N}]?UPPER*LOWER+C?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*C?|
//             \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//             with UPPER = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], LOWER =
//             [\p{Ll}\p{Lm}\p{Lo}\p{M}], C = (?i:'s|'t|'re|'ve|'m|'ll|'d)
//             (o200k: gpt-4o, gpt-oss, llama4). llama.cpp rewrites UPPER as
//             "a letter other than a-z" and LOWER as "a letter other than
//             A-Z" (no marks); the two agree on ASCII text.
//   kimi-k2   [\p{Han}]+|gpt4o's two letter alternatives with Han taken out of
//             UPPER and LOWER|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
//             \s+(?!\S)|\s+ (tokenization_kimi.py). llama.cpp's hand-written
//             splitter for it keeps a run of letters whole (no case split, no
//             marks); the two agree on words that change case only at their
//             start.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"

namespace folio::tokenizer {

enum class PreTokenizer {
  kNone,  // the whole text is one piece (SentencePiece)
  kDefault,
  kGpt2,
  kLlama3,
  kQwen2,
  kQwen35,
  kStarcoder,
  kFalcon,
  kDeepseekLlm,
  kNewlines,
  kGpt4o,
  kTekken,     // o200k's letter classes, no contractions, single digits (Mistral)
  kDeepseek3,  // DeepSeek V3's three regexes (deepseek-v3, hunyuan-dense, joyai-llm)
  kDeepseekCoder,
  kSeedCoder,
  kKimiK2,
};

// What a `tokenizer.ggml.pre` name implies: its regex family and the defaults
// that come with it (as llama.cpp sets them).
struct PreTokenizerInfo {
  PreTokenizer kind = PreTokenizer::kDefault;
  bool ignore_merges = false;  // a piece that is one whole token is taken as is (llama3)
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  bool clean_spaces = true;    // default of Hugging Face's clean_up_tokenization_spaces
};

// Known names and aliases (llama-bpe = llama3, deepseek-r1-qwen = qwen2, ...).
// Unknown names return false and leave *info untouched.
bool pre_tokenizer_from_name(std::string_view name, PreTokenizerInfo* info);

// Splits `text` into pieces that concatenate back to `text` (no empty
// pieces). Invalid UTF-8 bytes are single code points of class "other".
// `scratch` is reused between calls to avoid allocations.
void pre_tokenize(PreTokenizer kind, std::string_view text, DecodedText* scratch,
                  std::vector<std::string_view>* pieces);

}  // namespace folio::tokenizer
