#include "tokenizer/stream_detokenizer.h"

#include "core/utf8.h"

namespace folio::tokenizer {

void append_sanitized_utf8(std::string_view s, std::string* out) {
  for (size_t i = 0; i < s.size();) {
    const Utf8Char c = utf8_decode(s, i, Utf8Invalid::kReplace);
    if (c.valid) {
      out->append(s.substr(i, c.len));
    } else {
      utf8_append(c.cp, out, Utf8Unencodable::kReplace);
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
  const size_t keep = utf8_incomplete_tail(pending_);
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
