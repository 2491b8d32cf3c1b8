// Tokenizer: text <-> token ids for a Vocab.
//
// tokenize(): special-token texts are split out first (special_tokens.h);
// each text fragment then goes through the model's path:
//   llama (SPM)  " " prefix at the start and after a special token when
//                add_space_prefix, spaces -> U+2581, spm_encode;
//   gpt2         pre-tokenizer regex pieces, byte-level BPE per piece;
//   gemma4       spaces -> U+2581, pieces split at newlines, BPE per piece;
//   bert         WordPiece (wpm.h): normalised, lowercased words cut into
//                the longest pieces.
// BOS / EOS are added when the options and the vocabulary ask for them
// (WordPiece: [CLS] first, [SEP] last).
// Any byte string is accepted: invalid UTF-8 bytes pass through byte-level
// BPE as bytes and through SPM / gemma4 as <0xXX> byte tokens (unk if the
// vocabulary has none), so detokenize() gives the bytes back.
//
// detokenize(): each token's piece (normal: its text with U+2581 -> " " or
// byte-level decoded; byte tokens: the byte; user-defined: the text;
// control / unknown / unused: the text only with render_special), then
// optionally the space-prefix strip and Hugging Face's space clean-up.
//
// Round trip: detokenize(tokenize(s)) == s (with the default options) for
// every refdata string and almost every byte string, valid UTF-8 or not,
// except with WordPiece, which normalises (lowercase, no accents, no
// controls) and spells spaces only between words.
// Exceptions: U+2581 in SPM / gemma4 input comes back as a space; with
// parse_special, SPM puts a space after each special token; characters an
// SPM / gemma4 vocabulary can neither spell nor byte-encode become unk; bytes
// whose byte-level character a gpt2 vocabulary lacks are dropped (falcon:
// some ASCII controls such as \v, and F2; starcoder: F1; both: C0, C1,
// F5..FF) or, where it has them only as user-defined tokens that stand for
// the characters themselves (deepseek-llm: C0, C1, F5..FF), come back as
// those characters.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace folio::tokenizer {

struct TokenizeOptions {
  bool add_special = true;     // BOS / EOS as the vocabulary's add_bos / add_eos say
  bool parse_special = false;  // control-token texts in the input become those tokens
  // With parse_special: byte spans of the text (sorted, disjoint) whose
  // control-token texts stay text, as without parse_special (the request
  // content inside a rendered chat prompt). Borrowed for the call.
  std::span<const TextSpan> literal_spans;
  // BPE: a text longer than this goes through the pre-tokenizer in chunks
  // of about this size (its scratch holds ~20 bytes per input byte), cut
  // where every pre-tokenizer cuts (after a lone '\n' before an ASCII
  // letter; in a line, between ASCII punctuation and " " + an ASCII
  // letter, except for Gemma 4, which encodes whole lines), so the tokens
  // are the same. 0: one piece of work, however long.
  size_t max_chunk_bytes = size_t{64} << 10;
};

struct DetokenizeOptions {
  bool render_special = false;     // control / unknown / unused tokens print their text
  bool strip_space_prefix = true;  // add_space_prefix vocabularies: drop the leading space
                                   // tokenize() put before the text
  bool clean_spaces = false;       // " ." -> "." etc. (HF clean_up_tokenization_spaces;
                                   // the vocabulary's default is vocab().clean_spaces())
};

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab);
  static Result<Tokenizer> from_gguf(const gguf::GgufFile& file);
  // Opens a GGUF file and reads its vocabulary.
  static Result<Tokenizer> open(const std::string& path);

  Tokenizer(Tokenizer&&) = default;
  Tokenizer& operator=(Tokenizer&&) = default;

  const Vocab& vocab() const { return vocab_; }

  std::vector<TokenId> tokenize(std::string_view text, const TokenizeOptions& opts = {}) const;
  // Appends the spans of `text` that only parse_special makes tokens
  // (control and unknown token texts), in order.
  void find_control_texts(std::string_view text, std::vector<TextSpan>* out) const {
    specials_.find_controls(text, out);
  }

  // Appends the bytes token `id` stands for (nothing for an id outside the
  // vocabulary, or a hidden token without render_special).
  void append_piece(TokenId id, bool render_special, std::string* out) const;
  std::string piece(TokenId id, bool render_special = false) const {
    std::string s;
    append_piece(id, render_special, &s);
    return s;
  }

  // Ids outside the vocabulary are skipped.
  std::string detokenize(std::span<const TokenId> ids, const DetokenizeOptions& opts = {}) const;

 private:
  void encode_text(std::string_view text, bool after_special, std::vector<TokenId>* out) const;
  void encode_text_chunked(std::string_view text, bool after_special, size_t max_chunk,
                           std::vector<TokenId>* out) const;

  Vocab vocab_;
  SpecialTokenMatcher specials_;
};

// Hugging Face's clean_up_tokenization_spaces, in place: " ?", " !", " .",
// " ," lose the space, " ' " loses both, " n't", " 's", " 'm", " 're",
// " 've" lose it.
void clean_up_spaces(std::string* text);

}  // namespace folio::tokenizer
