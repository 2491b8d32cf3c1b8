#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/wpm.h"

namespace folio::tokenizer {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581

void escape_spaces(std::string_view text, std::string* out) {
  for (char c : text) {
    if (c == ' ') {
      out->append(kSpaceMark);
    } else {
      out->push_back(c);
    }
  }
}

void unescape_spaces(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out->push_back(' ');
      i += kSpaceMark.size();
    } else {
      out->push_back(text[i++]);
    }
  }
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  specials_.build(vocab_);
}

Result<Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  FOLIO_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file));
  return Tokenizer(std::move(vocab));
}

Result<Tokenizer> Tokenizer::open(const std::string& path) {
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
  return from_gguf(file);
}

void Tokenizer::encode_text(std::string_view text, bool after_special,
                            std::vector<TokenId>* out) const {
  switch (vocab_.model()) {
    case VocabModel::kSpm: {
      std::string escaped;
      escaped.reserve(text.size() + text.size() / 4 + 4);
      if (vocab_.add_space_prefix() && after_special) escaped.append(kSpaceMark);
      escape_spaces(text, &escaped);
      SpmScratch scratch;
      spm_encode(vocab_, escaped, &scratch, out);
      return;
    }
    case VocabModel::kBpe:
    case VocabModel::kBpeSpm: {
      std::string escaped;
      if (vocab_.model() == VocabModel::kBpeSpm) {
        escaped.reserve(text.size() + text.size() / 4);
        escape_spaces(text, &escaped);
        text = escaped;
      }
      DecodedText decoded;
      std::vector<std::string_view> pieces;
      pre_tokenize(vocab_.pre_tokenizer(), text, &decoded, &pieces);
      BpeScratch scratch;
      for (std::string_view piece : pieces) bpe_encode(vocab_, piece, &scratch, out);
      return;
    }
    case VocabModel::kWpm:
      wpm_encode(vocab_, text, out);
      return;
  }
}

// Why a cut after a lone '\n' (an ASCII letter after it, a printable ASCII
// character other than a space before it) changes no piece, for every
// regex family (pre_tokenizer.h): a newline is taken only by the
// whitespace alternatives (\s+(?!\S), \s+, \s*[\r\n]+) or by [\r\n]* /
// [\r\n/]* after punctuation, which all end at the letter, and a lone
// newline is the same piece whether a letter or the chunk's end follows it
// (\s+(?!\S) would take a longer run whole at the end); the optional
// prefix of the letter alternatives excludes \r and \n
// ([^\r\n\p{L}\p{N}]?, deepseek-v3's [^\r\n\p{L}\p{P}\p{S}]?, " ?"),
// deepseek-v3's ASCII mark + letters needs a letter right after the mark,
// and deepseek-llm and deepseek-coder, whose \s? would take it,
// isolate every newline in their first step; Gemma 4 splits at newlines.
// Nothing looks behind, so the pieces after the cut start afresh.
// In a line, a cut between ASCII punctuation and " " + a letter: the
// punctuation run ends there either way (its alternatives take no space
// after it, [\r\n]* nothing), and " " + letters is one piece that starts
// at the space (" ?\p{L}+", [^\r\n\p{L}\p{N}]?\p{L}+, \s?letters); not for
// Gemma 4, whose pieces are whole lines.
void Tokenizer::encode_text_chunked(std::string_view text, bool after_special, size_t max_chunk,
                                    std::vector<TokenId>* out) const {
  const bool bpe = vocab_.model() == VocabModel::kBpe || vocab_.model() == VocabModel::kBpeSpm;
  if (max_chunk > 0 && bpe && vocab_.pre_tokenizer() != PreTokenizer::kNone) {
    auto ascii_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    while (text.size() > max_chunk) {
      auto ascii_punct = [](char c) {
        return c > ' ' && c < 0x7f && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') &&
               !(c >= 'A' && c <= 'Z');
      };
      const bool in_lines = vocab_.pre_tokenizer() != PreTokenizer::kNewlines;
      // The first cut at or after max_chunk bytes: `at` is where the next
      // chunk starts.
      size_t at = std::max<size_t>(max_chunk, 1);
      for (; at + 1 < text.size(); ++at) {
        const char prev = text[at - 1], c = text[at], next = text[at + 1];
        if (prev == '\n' && ascii_letter(c) && at >= 2 && text[at - 2] > ' ' &&
            text[at - 2] < 0x7f) {
          break;
        }
        if (in_lines && ascii_punct(prev) && c == ' ' && ascii_letter(next)) break;
      }
      if (at + 1 >= text.size()) break;
      encode_text(text.substr(0, at), after_special, out);
      after_special = false;
      text.remove_prefix(at);
    }
  }
  encode_text(text, after_special, out);
}

std::vector<TokenId> Tokenizer::tokenize(std::string_view text, const TokenizeOptions& opts) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  if (opts.add_special && vocab_.add_bos()) out.push_back(vocab_.bos());
  std::vector<Fragment> fragments;
  specials_.split(vocab_, text, opts.parse_special, &fragments, opts.literal_spans);
  bool after_special = true;  // the start counts as "after a special token"
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_text_chunked(f.text, after_special, opts.max_chunk_bytes, &out);
      after_special = false;
    }
  }
  if (opts.add_special && vocab_.add_eos()) out.push_back(vocab_.eos());
  if (opts.add_special && vocab_.add_sep()) out.push_back(vocab_.sep());
  return out;
}

void Tokenizer::append_piece(TokenId id, bool render_special, std::string* out) const {
  if (!vocab_.valid(id)) return;
  const std::string_view text = vocab_.text(id);
  switch (vocab_.type(id)) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
      if (render_special) out->append(text);
      return;
    case TokenType::kUserDefined:
      out->append(text);
      return;
    case TokenType::kByte:
      out->push_back(static_cast<char>(vocab_.byte_value(id)));
      return;
    case TokenType::kNormal:
    case TokenType::kUndefined:
      if (vocab_.escapes_spaces()) {
        unescape_spaces(text, out);
      } else {
        byte_level_decode(text, out);
      }
      return;
  }
}

std::string Tokenizer::detokenize(std::span<const TokenId> ids,
                                  const DetokenizeOptions& opts) const {
  std::string out;
  bool strip = opts.strip_space_prefix && vocab_.add_space_prefix();
  for (TokenId id : ids) {
    if (!vocab_.valid(id)) continue;
    if (strip && vocab_.is_hidden(id) && !opts.render_special) continue;  // e.g. BOS
    const size_t start = out.size();
    append_piece(id, opts.render_special, &out);
    if (strip && out.size() > start && out[start] == ' ') out.erase(start, 1);
    strip = false;
  }
  if (opts.clean_spaces) clean_up_spaces(&out);
  return out;
}

void clean_up_spaces(std::string* text) {
  std::string& s = *text;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == '?' || n == '!' || n == '.' || n == ',') continue;
      if (n == '\'') {
        const char n2 = i + 2 < s.size() ? s[i + 2] : '\0';
        const char n3 = i + 3 < s.size() ? s[i + 3] : '\0';
        if (n2 == ' ') {  // " ' " -> "'"
          out.push_back('\'');
          i += 2;
          continue;
        }
        if (n2 == 's' || n2 == 'm' || (n2 == 'r' && n3 == 'e') || (n2 == 'v' && n3 == 'e'))
          continue;
      }
      if (n == 'n' && s.compare(i + 1, 3, "n't") == 0) continue;
    }
    out.push_back(c);
  }
  s.swap(out);
}

}  // namespace folio::tokenizer
