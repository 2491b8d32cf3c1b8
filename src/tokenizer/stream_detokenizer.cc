#include "tokenizer/stream_detokenizer.h"

#include "tokenizer/unicode.h"

namespace folio::tokenizer {

namespace {

// Whether `b` may follow lead byte `lead` as the second byte (the ranges that
// exclude overlong forms, surrogates and values above U+10FFFF).
bool valid_second_byte(uint8_t lead, uint8_t b) {
  if ((b & 0xC0) != 0x80) return false;
  if (lead == 0xE0) return b >= 0xA0;
  if (lead == 0xED) return b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90;
  if (lead == 0xF4) return b <= 0x8F;
  return true;
}

}  // namespace

size_t incomplete_utf8_tail(std::string_view s) {
  // A lead byte at most 3 bytes from the end whose sequence runs past it.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto lead = static_cast<uint8_t>(s[n - back]);
    if ((lead & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const int len = utf8_sequence_length(lead);
    if (len <= static_cast<int>(back)) return 0;  // complete, ASCII or invalid lead
    for (size_t k = 1; k < back; ++k) {
      const auto b = static_cast<uint8_t>(s[n - back + k]);
      if (k == 1 ? !valid_second_byte(lead, b) : (b & 0xC0) != 0x80) return 0;
    }
    return back;
  }
  return 0;
}

void append_sanitized_utf8(std::string_view s, std::string* out) {
  for (size_t i = 0; i < s.size();) {
    const Utf8Char c = decode_utf8(s, i);
    if (c.cp >= kInvalidByteBase) {
      append_utf8(kReplacementChar, out);
    } else {
      out->append(s.substr(i, c.len));
    }
    i += c.len;
  }
}

StreamDetokenizer::StreamDetokenizer(const Tokenizer* tokenizer, bool render_special,
                                     bool strip_space_prefix)
    : tokenizer_(tokenizer),
      render_special_(render_special),
      strip_(strip_space_prefix && tokenizer->vocab().add_space_prefix()) {}

std::string StreamDetokenizer::push(TokenId id) {
  const size_t start = pending_.size();
  tokenizer_->append_piece(id, render_special_, &pending_);
  if (strip_ && pending_.size() > start) {
    if (pending_[start] == ' ') pending_.erase(start, 1);
    strip_ = false;
  }
  const size_t keep = incomplete_utf8_tail(pending_);
  std::string out;
  append_sanitized_utf8(std::string_view(pending_).substr(0, pending_.size() - keep), &out);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StreamDetokenizer::flush() {
  std::string out;
  append_sanitized_utf8(pending_, &out);
  pending_.clear();
  return out;
}

}  // namespace folio::tokenizer
