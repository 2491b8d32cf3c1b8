// Lazy grammars: a grammar that constrains the output only from a trigger
// on, as llama.cpp's lazy grammars do. Before the trigger the output is
// free (end-of-generation allowed or not, as the triggers say); the trigger
// is a token id (a control token such as mistral's [TOOL_CALLS]) or a word
// (text matched across token boundaries, e.g. "<tool_call>"), and the
// grammar then reads the text from the trigger's start (the trigger token's
// own text, or the word and whatever follows it in the token that completed
// it), so a grammar for a lazy request starts with its trigger's text.
//
// TriggerWatch follows the output token by token and says when a trigger
// fires and what text the grammar must read first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio::grammar {

struct GrammarTriggers {
  std::vector<int32_t> tokens;     // token ids that start the grammar
  std::vector<std::string> words;  // non-empty texts that start the grammar
  // Whether the output may end before a trigger (false: the grammar's part
  // is required, e.g. tool_choice "required" on a format that lets the model
  // write text before its call).
  bool end_before_trigger = true;
  // No trigger: the grammar holds from the first token.
  bool empty() const { return tokens.empty() && words.empty(); }
};

class TriggerWatch {
 public:
  explicit TriggerWatch(GrammarTriggers triggers);

  // Whether the token `id` with text `text`, coming next, fires a trigger;
  // if so *start (when not null) gets the text the grammar reads first: the
  // token's text for a trigger token, else the text from the start of the
  // earliest word occurrence (which may begin in earlier tokens) to the end
  // of `text`.
  bool fires(int32_t id, std::string_view text, std::string* start) const;
  // Appends a token that did not fire to the text followed.
  void push(std::string_view text);

  const GrammarTriggers& triggers() const { return triggers_; }
  // The longest word's length (0 without words).
  size_t max_word() const { return max_word_; }

 private:
  GrammarTriggers triggers_;
  size_t max_word_ = 0;
  std::string tail_;  // the last max_word_ - 1 bytes followed (holds no whole word)
};

}  // namespace folio::grammar
