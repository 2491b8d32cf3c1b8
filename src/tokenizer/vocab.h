// Vocab: a validated tokenizer vocabulary (token texts, scores, types, BPE
// merges, special ids and flags) with the lookups the tokenizers need. Built
// from a VocabSpec, a plain view of the fields as GGUF stores them under
// `tokenizer.ggml.*` (load_vocab_spec in vocab_gguf.h reads one from a file).
//
// Models (`tokenizer.ggml.model`):
//   "llama"  SentencePiece BPE: merges by token score, spaces as U+2581,
//            optional space prefix, byte fallback to <0xXX> tokens (Llama 2,
//            Phi-3, Gemma 1-3).
//   "gpt2"   byte-level BPE: bytes mapped to printable code points (see
//            byte_level.h), a regex pre-tokenizer (`tokenizer.ggml.pre`),
//            merges by rank (GPT-2, Llama 3, Qwen, DeepSeek, StarCoder, ...).
//   "gemma4" BPE merges by rank over raw UTF-8 with spaces as U+2581, pieces
//            split at newlines, byte fallback to <0xXX> tokens (Gemma 4).
//   "bert"   WordPiece (wpm.h): lowercased words cut greedily into the
//            longest pieces, word-initial pieces stored with a U+2581 prefix;
//            [CLS] text [SEP] (BERT and the embedding models built on it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/hash_tables.h"
#include "tokenizer/pre_tokenizer.h"

namespace folio::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// GGUF token types (tokenizer.ggml.token_type values).
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

enum class VocabModel {
  kSpm,     // "llama"
  kBpe,     // "gpt2"
  kBpeSpm,  // "gemma4"
  kWpm,     // "bert"
};

// The fields of a vocabulary as stored in GGUF. Views: the spec does not own
// them, Vocab::create copies what it keeps.
struct VocabSpec {
  std::string_view name;                 // general.name (selects per-model token attributes)
  std::string_view model;                // tokenizer.ggml.model
  std::optional<std::string_view> pre;   // tokenizer.ggml.pre
  std::span<const std::string> tokens;   // tokenizer.ggml.tokens
  std::span<const float> scores;         // tokenizer.ggml.scores: empty or one per token
  std::span<const int32_t> token_types;  // tokenizer.ggml.token_type: empty or one per token
  std::span<const std::string> merges;   // tokenizer.ggml.merges: "left right", by rank
  bool has_merges = false;               // the merges key is present (required for BPE models)
  std::optional<int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, pad_id, sep_id, mask_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

class Vocab {
 public:
  // Validates `spec` and builds the lookups. Errors (InvalidArgument,
  // OutOfRange, Unsupported) start "tokenizer: " and name the key and value:
  // unknown model, array lengths that differ from the token count, token
  // types outside 0..6, duplicate token texts, malformed merges or merges
  // that name a text that is not a token, special ids outside the
  // vocabulary, add_bos/add_eos without the id to add. An unknown
  // pre-tokenizer name is not an error: it logs a warning and uses kDefault.
  static Result<Vocab> create(const VocabSpec& spec);

  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  VocabModel model() const { return model_; }
  PreTokenizer pre_tokenizer() const { return pre_; }
  // The tokenizer.ggml.pre value as given ("" when absent).
  const std::string& pre_name() const { return pre_name_; }

  int32_t size() const { return static_cast<int32_t>(types_.size()); }
  bool valid(TokenId id) const { return id >= 0 && id < size(); }

  // Token data; ids must be valid.
  std::string_view text(TokenId id) const {
    return std::string_view(blob_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  float score(TokenId id) const { return scores_.empty() ? 0.0f : scores_[id]; }
  TokenType type(TokenId id) const { return types_[id]; }
  // Control, unknown and unused tokens: never produced from plain text and
  // hidden when detokenizing unless special tokens are rendered.
  bool is_hidden(TokenId id) const {
    const TokenType t = types_[id];
    return t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUnused;
  }
  // Special tokens that swallow ASCII whitespace on their left / right when
  // split out of text (Phi-3's chat tokens, as its tokenizer.json says).
  bool lstrip(TokenId id) const { return (strip_[id] & kLstrip) != 0; }
  bool rstrip(TokenId id) const { return (strip_[id] & kRstrip) != 0; }
  // The byte a <0xXX> byte token stands for, or -1.
  int byte_value(TokenId id) const { return byte_value_[id]; }
  // End of generation: eos, eot, eom and the tokens whose text is on
  // llama.cpp's end-of-generation list (<|im_end|>, <end_of_turn>,
  // <|eot_id|>, [EOS], [e~[, ...; not "</s>", vocab.cc), with its
  // exceptions (Harmony's and Solar Open's <|end|>).
  bool is_eog(TokenId id) const;

  // The token with exactly this text (any type), or kNoToken.
  TokenId find(std::string_view text) const {
    return index_.find(text, [this](int32_t id) { return this->text(id); });
  }
  // The token for a single byte: the <0xXX> token (SPM, gemma4) or the
  // byte-level character (gpt2); kNoToken if the vocabulary lacks it.
  TokenId byte_token(uint8_t b) const { return byte_tokens_[b]; }

  // BPE merge of two adjacent tokens: rank (lower merges first) and result.
  const PairIndex::Entry* find_merge(TokenId left, TokenId right) const {
    return merges_.find(left, right);
  }
  size_t num_merges() const { return num_merges_; }

  // Special ids (kNoToken when absent).
  TokenId bos() const { return bos_; }
  TokenId eos() const { return eos_; }
  TokenId eot() const { return eot_; }
  TokenId eom() const { return eom_; }
  TokenId unk() const { return unk_; }
  TokenId pad() const { return pad_; }
  TokenId sep() const { return sep_; }
  TokenId mask() const { return mask_; }

  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // WordPiece: the separator ([SEP]) ends every tokenized text that gets
  // special tokens (whatever add_eos says, as llama.cpp).
  bool add_sep() const { return add_sep_; }
  // Bytes of the longest token text.
  size_t max_token_bytes() const { return max_token_bytes_; }
  // SPM: a space is put before the text (and before text after a special
  // token), and detokenization removes it again.
  bool add_space_prefix() const { return add_space_prefix_; }
  // A pre-tokenized piece that is one whole token is not merged (llama3).
  bool ignore_merges() const { return ignore_merges_; }
  // The vocabulary's default for Hugging Face's clean_up_tokenization_spaces.
  bool clean_spaces() const { return clean_spaces_; }
  // Spaces are stored as U+2581 (SPM and gemma4).
  bool escapes_spaces() const { return model_ != VocabModel::kBpe; }

  // Control, user-defined and unknown tokens: the texts split out of input
  // before tokenizing (user-defined always, the others with parse_special).
  std::span<const TokenId> special_tokens() const { return special_tokens_; }

 private:
  Vocab() = default;
  Status build(const VocabSpec& spec);
  Status build_merges(const VocabSpec& spec);
  Status set_special_ids(const VocabSpec& spec);
  void find_eog_tokens();
  void set_strip_flags(std::string_view name);

  static constexpr uint8_t kLstrip = 1;
  static constexpr uint8_t kRstrip = 2;

  VocabModel model_ = VocabModel::kSpm;
  PreTokenizer pre_ = PreTokenizer::kNone;
  std::string pre_name_;

  std::string blob_;                 // all token texts back to back
  std::vector<uint32_t> offsets_;    // [n + 1] text(i) = blob_[offsets_[i], offsets_[i + 1])
  std::vector<float> scores_;        // [n] or empty
  std::vector<TokenType> types_;     // [n]
  std::vector<int16_t> byte_value_;  // [n] the byte of a <0xXX> token, else -1
  std::vector<uint8_t> strip_;       // [n] kLstrip | kRstrip
  TextIndex index_;
  PairIndex merges_;
  size_t num_merges_ = 0;
  TokenId byte_tokens_[256] = {};
  std::vector<TokenId> special_tokens_;
  std::vector<TokenId> eog_ids_;

  TokenId bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken;
  TokenId unk_ = kNoToken, pad_ = kNoToken, sep_ = kNoToken, mask_ = kNoToken;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_sep_ = false;
  bool add_space_prefix_ = false;
  size_t max_token_bytes_ = 0;
  bool ignore_merges_ = false;
  bool clean_spaces_ = false;
};

}  // namespace folio::tokenizer
