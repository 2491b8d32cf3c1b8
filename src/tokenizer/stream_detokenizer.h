// StreamDetokenizer: turns generated tokens into text as they arrive without
// ever emitting broken UTF-8. A token's bytes may end inside a multi-byte
// character (byte-fallback tokens <0xE2><0x96><0x81>, byte-level BPE tokens
// that split an emoji); those trailing bytes wait in a buffer until the next
// token completes them. Bytes that can never form valid UTF-8 are emitted as
// U+FFFD (one per byte), and so is an incomplete tail at flush().
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace folio::tokenizer {

class StreamDetokenizer {
 public:
  // `tokenizer` must outlive this. render_special: control tokens print their
  // text. strip_space_prefix: drop a leading space of the first text token
  // (for a stream that starts the sequence on an add_space_prefix vocabulary;
  // off for continuations of a prompt).
  explicit StreamDetokenizer(const Tokenizer* tokenizer, bool render_special = false,
                             bool strip_space_prefix = false);

  // Adds a token; returns the text that is complete now (maybe empty).
  std::string push(TokenId id);
  // Ends the stream: returns what is buffered, an incomplete tail as U+FFFD.
  std::string flush();
  // Bytes held back, waiting for the rest of a character.
  size_t pending() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  bool strip_;
  std::string pending_;
};

// Appends `s` with every byte that is not part of a valid UTF-8 sequence
// replaced by U+FFFD.
void append_sanitized_utf8(std::string_view s, std::string* out);

}  // namespace folio::tokenizer
