// StopMatcher: finds stop strings in a stream of detokenized text pieces.
//
// A stop string may span any number of pieces. Text that could still be the
// start of a stop string is held back (never handed out for streaming) until
// the following pieces decide it; so a client never sees any part of a stop
// string.
//
// Which match ends the text: the stream is read as one byte sequence; the
// generation stops at the first byte where some stop string is complete, and
// when several complete there, the one that starts first (the longest) wins.
// This depends only on the concatenated text, never on how it was split into
// pieces. The text before the stop string is released; the stop string and
// anything after it are dropped.
//
// Matching is bytewise. When the stop strings are valid UTF-8 (validated by
// SamplingParams) and every piece is whole UTF-8 (the streaming detokenizer's
// promise), every released piece is whole UTF-8 too: a held-back suffix always
// starts where a stop string starts, on a character boundary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

class StopMatcher {
 public:
  struct Step {
    std::string text;         // safe to stream now (may be empty)
    bool stopped = false;     // a stop string matched; `text` is the last piece
    int32_t stop_index = -1;  // which stop string (index into the list), when stopped
  };

  // Empty strings in `stops` are ignored (they would match before any text).
  explicit StopMatcher(std::vector<std::string> stops = {});

  // Appends the next piece of generated text. After a stop, further pieces are
  // ignored (empty, stopped Steps).
  Step feed(std::string_view piece);

  // The generation ended for another reason (EOS, max_tokens): releases the
  // held-back text. Empty after a stop.
  std::string flush();

  bool stopped() const { return stopped_; }
  // Bytes held back, waiting for more text.
  size_t held_bytes() const { return held_.size(); }
  const std::vector<std::string>& stops() const { return stops_; }

 private:
  // Length of the longest suffix of `text` that is a proper prefix of a stop
  // string.
  size_t partial_suffix_length(std::string_view text) const;

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  int32_t stop_index_ = -1;
};

}  // namespace folio
