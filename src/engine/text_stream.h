// TextStream: the text side of one generating sequence. Token ids go in;
// text comes out in whole UTF-8 characters (StreamDetokenizer) with stop
// strings held back and cut (StopMatcher). Shared by the single-sequence
// Generator and the Scheduler's SequenceState.
//
// It also says which tokens the output keeps (kept_tokens): a token is kept
// when its text starts before the cut, i.e. the byte where its text enters
// the stream the StopMatcher reads (bytes the detokenizer emitted before it
// was pushed) lies before the first byte of the matched stop string. A token
// whose text straddles the stop string's start is kept; one whose text lies
// wholly at or after it is not (nor an empty-text token there). Since a cut
// falls on a character boundary, a character completed by token k whose
// first bytes came from token k - 1 counts for both alike. Logprobs follow
// this: an OpenAI answer cut at a stop string lists the kept tokens only.
#pragma once

#include <cstdint>
#include <deque>
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
  StopMatcher::Step push(int32_t id) {
    ++n_tokens_;
    unsettled_.push_back(fed_);
    std::string piece = detok_.push(id);
    fed_ += static_cast<int64_t>(piece.size());
    StopMatcher::Step step = stops_.feed(piece);
    settle(step);
    return step;
  }

  // Generation ended for another reason (end of generation, length, ...):
  // returns the held-back text. *stopped is set when that tail completes a
  // stop string (the text then ends before it).
  std::string finish(bool* stopped) {
    std::string piece = detok_.flush();
    fed_ += static_cast<int64_t>(piece.size());
    StopMatcher::Step tail = stops_.feed(piece);
    settle(tail);
    *stopped = tail.stopped;
    if (tail.stopped) return tail.text;
    // No cut: every token is kept, also empty-text ones at the end.
    unsettled_.clear();
    kept_ = n_tokens_;
    return tail.text + stops_.flush();
  }

  // Tokens pushed so far.
  int64_t n_tokens() const { return n_tokens_; }
  // Tokens known to be kept: the first kept_tokens() pushed ones. While
  // generating, those whose text starts in text already released (the rest
  // may still be cut by a stop string); after a stop, those whose text
  // starts before the cut; after finish() without a stop, all.
  int64_t kept_tokens() const { return kept_; }

 private:
  // `step`'s text is released: tokens whose text starts before the end of
  // all released text are kept. After a stop, released text ends at the cut
  // and the tokens left are dropped.
  void settle(const StopMatcher::Step& step) {
    released_ += static_cast<int64_t>(step.text.size());
    while (!unsettled_.empty() && unsettled_.front() < released_) {
      unsettled_.pop_front();
      ++kept_;
    }
    if (step.stopped) unsettled_.clear();
  }

  tokenizer::StreamDetokenizer detok_;
  StopMatcher stops_;
  int64_t n_tokens_ = 0;
  int64_t fed_ = 0;       // bytes of text fed to the stop matcher
  int64_t released_ = 0;  // bytes it released (after a stop: the cut)
  int64_t kept_ = 0;
  // Where the text of each token not yet known to be kept starts (offsets
  // into the fed text), in push order.
  std::deque<int64_t> unsettled_;
};

}  // namespace folio
