#include "tokenizer/wpm.h"

#include <algorithm>
#include <string>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace folio::tokenizer {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581

// CJK ideographs split into words of one character (BERT's
// _is_chinese_char, with llama.cpp's 0x2B920 for the start of the fifth
// range, as in Hugging Face's Rust code).
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// The normalised words of `text`, each with the U+2581 prefix.
std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto finish = [&] {
    if (!word.empty()) words.push_back(std::string(kSpaceMark) + word);
    word.clear();
  };
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = utf8_decode(text, i, Utf8Invalid::kByteAboveUnicode);
    i += c.len;
    const uint32_t cp = nfd_first(c.cp);
    if (is_whitespace(cp)) {
      finish();
      continue;
    }
    const CharClass cls = char_class(cp);
    if (cp == 0 || cp == kReplacementChar || cls == CharClass::kOther) continue;
    if (cls == CharClass::kPunct || (cp < 0x7F && cls == CharClass::kSymbol) || is_cjk(cp)) {
      finish();
      utf8_append(to_lower(cp), &word, Utf8Unencodable::kReplace);
      finish();
    } else {
      utf8_append(to_lower(cp), &word, Utf8Unencodable::kReplace);
    }
  }
  finish();
  return words;
}

}  // namespace

void wpm_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  const size_t max_len = vocab.max_token_bytes();
  for (const std::string& word : split_words(text)) {
    const size_t start = out->size();
    const size_t n = word.size();
    for (size_t i = 0; i < n;) {
      // The longest vocabulary text starting at byte i.
      TokenId id = kNoToken;
      size_t j = std::min(n, i + max_len);
      for (; j > i; --j) {
        id = vocab.find(std::string_view(word).substr(i, j - i));
        if (id != kNoToken) break;
      }
      if (id == kNoToken) {  // an unmatched part: the whole word is unknown
        out->resize(start);
        break;
      }
      out->push_back(id);
      i = j;
    }
    if (out->size() == start) out->push_back(vocab.unk());
  }
}

}  // namespace folio::tokenizer
