// TextStream: the text side of one generating sequence. Token ids go in;
// text comes out in whole UTF-8 characters (StreamDetokenizer) with stop
// strings held back and cut (StopMatcher). Shared by the single-sequence
// Generator and the Scheduler's SequenceState.
#pragma once

#include <string>
#include <vector>

#include "engine/stop_matcher.h"
#include "tokenizer/stream_detokenizer.h"

namespace folio {

class TextStream {
 public:
  // `tok` must outlive this.
  TextStream(const tokenizer::Tokenizer* tok, bool render_special, std::vector<std::string> stops)
      : detok_(tok, render_special), stops_(std::move(stops)) {}

  // Adds a generated token: the text that is final now, and whether a stop
  // string just matched.
  StopMatcher::Step push(int32_t id) { return stops_.feed(detok_.push(id)); }

  // Generation ended for another reason (end of generation, length, ...):
  // returns the held-back text. *stopped is set when that tail completes a
  // stop string (the text then ends before it).
  std::string finish(bool* stopped) {
    StopMatcher::Step tail = stops_.feed(detok_.flush());
    *stopped = tail.stopped;
    return tail.stopped ? tail.text : tail.text + stops_.flush();
  }

 private:
  tokenizer::StreamDetokenizer detok_;
  StopMatcher stops_;
};

}  // namespace folio
