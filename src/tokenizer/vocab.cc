#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/log.h"
#include "core/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace folio::tokenizer {

namespace {

// Texts that mark the end of a turn when no eot id is given, in priority
// order, and further texts that end generation (llama.cpp's lists, less
// "</s>": llama.cpp stops there for PaddleOCR, which folio does not run,
// and Qwen's vocabularies hold "</s>" as ordinary text, token 128247).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",  // Kimi K2
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // DeepSeek
    "<end_of_utterance>",
};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<|return|>",  // Harmony (gpt-oss), see find_eog_tokens
    "<|call|>",
    "<|flush|>",  // Solar Open
    "<|calls|>",
    "[EOT]",  // Kimi K2
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",  // Gemma 4
    "<turn|>",
    "<|tool_response>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "[e~[",  // MiniMax M2
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xHH>" -> HH, else -1.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  const int hi = hex_digit(s[3]);
  const int lo = hex_digit(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

Result<Vocab> Vocab::create(const VocabSpec& spec) {
  Vocab v;
  FOLIO_RETURN_IF_ERROR(v.build(spec));
  return v;
}

bool Vocab::is_eog(TokenId id) const {
  return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

Status Vocab::build(const VocabSpec& spec) {
  // --- model and pre-tokenizer -------------------------------------------
  PreTokenizerInfo pre_info;
  if (spec.model == "llama") {
    model_ = VocabModel::kSpm;
    pre_ = PreTokenizer::kNone;
    add_bos_ = true;
    add_space_prefix_ = true;
    clean_spaces_ = false;
  } else if (spec.model == "gpt2" || spec.model == "gemma4") {
    model_ = spec.model == "gpt2" ? VocabModel::kBpe : VocabModel::kBpeSpm;
    pre_name_ = std::string(spec.pre.value_or(""));
    if (model_ == VocabModel::kBpeSpm) {
      // Gemma 4 files name no pre-tokenizer; the model implies it (and BOS).
      pre_info = PreTokenizerInfo{PreTokenizer::kNewlines, false, true, true};
    } else if (!spec.pre.has_value() || !pre_tokenizer_from_name(*spec.pre, &pre_info)) {
      FOLIO_LOG_WARN(
          "tokenizer: {} tokenizer.ggml.pre '{}': using the default pre-tokenizer; "
          "tokenization may differ from the model's reference tokenizer",
          spec.pre.has_value() ? "unknown" : "missing", pre_name_);
      pre_info = PreTokenizerInfo{};
    }
    pre_ = pre_info.kind;
    add_bos_ = pre_info.add_bos;
    ignore_merges_ = pre_info.ignore_merges;
    clean_spaces_ = pre_info.clean_spaces;
    add_space_prefix_ = false;
  } else if (spec.model == "bert") {
    model_ = VocabModel::kWpm;
    pre_ = PreTokenizer::kNone;
    pre_name_ = std::string(spec.pre.value_or(""));
    add_bos_ = true;  // [CLS]
    add_sep_ = true;
    add_space_prefix_ = false;
    clean_spaces_ = true;
  } else if (spec.model.empty()) {
    return invalid_argument("tokenizer: tokenizer.ggml.model is empty");
  } else {
    return unsupported(
        "tokenizer: unsupported tokenizer.ggml.model '{}' (folio reads llama, "
        "gpt2, gemma4, bert)",
        spec.model);
  }

  // --- tokens, scores, types ---------------------------------------------
  const size_t n = spec.tokens.size();
  if (n == 0) return invalid_argument("tokenizer: tokenizer.ggml.tokens is empty");
  if (n >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument("tokenizer: tokenizer.ggml.tokens has {} entries (too many)", n);
  }
  if (!spec.scores.empty() && spec.scores.size() != n) {
    return invalid_argument(
        "tokenizer: tokenizer.ggml.scores has {} entries but tokenizer.ggml.tokens has {}",
        spec.scores.size(), n);
  }
  if (!spec.token_types.empty() && spec.token_types.size() != n) {
    return invalid_argument(
        "tokenizer: tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {}",
        spec.token_types.size(), n);
  }

  size_t total = 0;
  for (const std::string& t : spec.tokens) total += t.size();
  if (total >= std::numeric_limits<uint32_t>::max()) {
    return invalid_argument("tokenizer: token texts total {} bytes (too many)", total);
  }
  blob_.reserve(total);
  offsets_.resize(n + 1);
  types_.resize(n);
  byte_value_.assign(n, -1);
  scores_.assign(spec.scores.begin(), spec.scores.end());
  for (float& s : scores_) {
    if (std::isnan(s)) s = -std::numeric_limits<float>::infinity();  // keeps the heap order strict
  }
  index_.reset(n);
  auto text_of = [this](int32_t id) { return text(id); };
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = spec.tokens[i];
    offsets_[i] = static_cast<uint32_t>(blob_.size());
    blob_ += t;
    offsets_[i + 1] = static_cast<uint32_t>(blob_.size());
    max_token_bytes_ = std::max(max_token_bytes_, t.size());
    if (spec.token_types.empty()) {
      types_[i] = TokenType::kNormal;
    } else {
      const int32_t ty = spec.token_types[i];
      if (ty < 0 || ty > static_cast<int32_t>(TokenType::kByte)) {
        return invalid_argument(
            "tokenizer: tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", i, ty);
      }
      types_[i] = static_cast<TokenType>(ty);
    }
    if (types_[i] == TokenType::kByte) {
      const int b = parse_byte_token(t);
      if (b < 0) {
        return invalid_argument("tokenizer: token {} has type byte but its text '{}' is not <0xHH>",
                                i, t);
      }
      byte_value_[i] = static_cast<int16_t>(b);
    }
    if (t.empty()) continue;  // never looked up nor produced
    const int32_t prev = index_.insert(t, static_cast<int32_t>(i), text_of);
    if (prev >= 0) {
      return invalid_argument("tokenizer: duplicate token text '{}' (ids {} and {})", t, prev, i);
    }
  }

  // --- byte tokens ---------------------------------------------------------
  for (int b = 0; b < 256; ++b) {
    TokenId id = kNoToken;
    if (model_ == VocabModel::kBpe) {
      std::string s;
      utf8_append(byte_to_unicode(static_cast<uint8_t>(b)), &s, Utf8Unencodable::kReplace);
      id = find(s);
    } else {
      const char hex[] = "0123456789ABCDEF";
      const char s[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
      id = find(std::string_view(s, 6));
      const char c = static_cast<char>(b);
      if (id == kNoToken && b < 0x80) id = find(std::string_view(&c, 1));
    }
    byte_tokens_[b] = id;
  }

  FOLIO_RETURN_IF_ERROR(build_merges(spec));
  FOLIO_RETURN_IF_ERROR(set_special_ids(spec));

  for (TokenId id = 0; id < size(); ++id) {
    const TokenType t = types_[id];
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !text(id).empty()) {
      special_tokens_.push_back(id);
    }
  }
  find_eog_tokens();
  set_strip_flags(spec.name);
  return Status();
}

void Vocab::set_strip_flags(std::string_view name) {
  strip_.assign(types_.size(), 0);
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // GGUF has no per-token lstrip / rstrip; Phi-3's tokenizer.json sets rstrip
  // on its chat tokens and </s> (llama.cpp keys this on the model name too).
  if (lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos) {
    for (TokenId id : special_tokens_) strip_[id] |= kRstrip;
    if (TokenId id = find("</s>"); id != kNoToken) strip_[id] |= kRstrip;
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (TokenId id = find(t); id != kNoToken) strip_[id] &= ~kRstrip;
    }
  }
}

Status Vocab::build_merges(const VocabSpec& spec) {
  // SPM merges by score; WordPiece has no merges.
  if (model_ == VocabModel::kSpm || model_ == VocabModel::kWpm) return Status();
  if (!spec.has_merges) {
    return invalid_argument("tokenizer: tokenizer.ggml.merges is missing (required for model '{}')",
                            spec.model);
  }
  merges_.reset(spec.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const std::string& m = spec.merges[rank];
    // The separator is the first space after the first byte (a left part
    // never starts with a space in practice, but may be one byte long).
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos || sp + 1 >= m.size()) {
      return invalid_argument("tokenizer: tokenizer.ggml.merges[{}] = '{}' is not 'left right'",
                              rank, m);
    }
    const std::string_view left = std::string_view(m).substr(0, sp);
    const std::string_view right = std::string_view(m).substr(sp + 1);
    const TokenId l = find(left);
    const TokenId r = find(right);
    if (l == kNoToken || r == kNoToken) {
      return invalid_argument(
          "tokenizer: tokenizer.ggml.merges[{}] = '{}' names '{}', which is not a token", rank, m,
          l == kNoToken ? left : right);
    }
    joined.assign(left);
    joined.append(right);
    const TokenId result = find(joined);
    if (result == kNoToken) {
      return invalid_argument(
          "tokenizer: tokenizer.ggml.merges[{}] = '{}' makes '{}', which is not a token", rank, m,
          joined);
    }
    merges_.insert(l, r, static_cast<int32_t>(rank),
                   result);  // a repeated pair keeps its first rank
  }
  num_merges_ = spec.merges.size();
  return Status();
}

Status Vocab::set_special_ids(const VocabSpec& spec) {
  const int64_t n = size();
  if (model_ == VocabModel::kSpm) {
    // llama.cpp's defaults for SentencePiece files that name no ids.
    if (n > 1) bos_ = 1;
    if (n > 2) eos_ = 2;
    unk_ = 0;
  } else if (model_ == VocabModel::kWpm) {
    // llama.cpp's defaults for WordPiece files: BERT's vocabulary layout
    // ([PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103).
    pad_ = 0;
    if (n > 100) unk_ = 100;
    if (n > 101) bos_ = 101;
    if (n > 102) sep_ = 102;
    if (n > 103) mask_ = 103;
  }
  struct Field {
    const char* key;
    const std::optional<int64_t>& value;
    TokenId* id;
  };
  const Field fields[] = {
      {"tokenizer.ggml.bos_token_id", spec.bos_id, &bos_},
      {"tokenizer.ggml.eos_token_id", spec.eos_id, &eos_},
      {"tokenizer.ggml.eot_token_id", spec.eot_id, &eot_},
      {"tokenizer.ggml.eom_token_id", spec.eom_id, &eom_},
      {"tokenizer.ggml.unknown_token_id", spec.unk_id, &unk_},
      {"tokenizer.ggml.padding_token_id", spec.pad_id, &pad_},
      {"tokenizer.ggml.seperator_token_id", spec.sep_id, &sep_},
      {"tokenizer.ggml.mask_token_id", spec.mask_id, &mask_},
  };
  for (const Field& f : fields) {
    if (!f.value.has_value()) continue;
    const int64_t v = *f.value;
    if (v < 0 || v >= n) {
      return out_of_range("tokenizer: {} = {} is outside the vocabulary (0..{})", f.key, v, n - 1);
    }
    *f.id = static_cast<TokenId>(v);
  }
  if (spec.add_bos.has_value()) add_bos_ = *spec.add_bos;
  if (spec.add_eos.has_value()) add_eos_ = *spec.add_eos;
  if (spec.add_space_prefix.has_value()) add_space_prefix_ = *spec.add_space_prefix;
  if (model_ == VocabModel::kBpeSpm) add_bos_ = true;  // Gemma 4 always starts with <bos>
  if (model_ == VocabModel::kWpm) {
    // [CLS] text [SEP] whatever the flags say (llama.cpp); words no piece
    // spells become the unknown token.
    add_bos_ = true;
    add_eos_ = false;
    if (bos_ == kNoToken || sep_ == kNoToken || unk_ == kNoToken) {
      return invalid_argument(
          "tokenizer: a WordPiece (bert) vocabulary needs [CLS], [SEP] and [UNK] ids "
          "(tokenizer.ggml.bos_token_id, seperator_token_id, unknown_token_id; default 101, "
          "102, 100) inside its {} tokens",
          n);
    }
  }
  if (add_bos_ && bos_ == kNoToken) {
    return invalid_argument(
        "tokenizer: tokenizer.ggml.add_bos_token is true but no tokenizer.ggml.bos_token_id");
  }
  if (add_eos_ && eos_ == kNoToken) {
    return invalid_argument(
        "tokenizer: tokenizer.ggml.add_eos_token is true but no tokenizer.ggml.eos_token_id");
  }
  return Status();
}

void Vocab::find_eog_tokens() {
  if (eot_ == kNoToken) {
    for (std::string_view t : kEotTexts) {
      const TokenId id = find(t);
      if (id != kNoToken) {
        eot_ = id;
        break;
      }
    }
  }
  auto add = [this](TokenId id) {
    if (id != kNoToken && std::find(eog_ids_.begin(), eog_ids_.end(), id) == eog_ids_.end()) {
      eog_ids_.push_back(id);
    }
  };
  add(eos_);
  add(eot_);
  add(eom_);
  for (std::string_view t : kEogTexts) {
    add(find(t));
  }
  // Harmony (gpt-oss): <|end|> closes one message of a reply that goes on
  // (analysis, then final); the reply ends at <|return|>, or at <|call|>
  // after a tool call. Solar Open likewise ends at <|flush|> or <|calls|>.
  // A vocabulary with <|return|> and a call token, or with a call token and
  // <|flush|>, does not end generation at <|end|> (llama.cpp's rule).
  auto eog_text = [this](std::string_view text) {
    const TokenId id = find(text);
    return id != kNoToken && is_eog(id);
  };
  const bool call = eog_text("<|call|>") || eog_text("<|calls|>");
  if (call && (eog_text("<|return|>") || eog_text("<|flush|>"))) {
    const TokenId end = find("<|end|>");
    if (end != kNoToken && end != eos_ && end != eot_) std::erase(eog_ids_, end);
  }
}

}  // namespace folio::tokenizer
