// Functionary v3.2's replies: a run of messages, each `RECIPIENT\nBODY`,
// separated by ">>>" (the generation prompt ends with the first ">>>", so
// the reply opens with a recipient). The recipient "all" is the user: its
// body is content; any other recipient is a function, its body the call's
// JSON arguments object:
//
//   all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>now\n{}
//
// A message that does not read as either (no recipient line, arguments
// that are not a JSON object) is content, as the model wrote it.
#pragma once

#include <string>
#include <vector>

#include "chat/tool_calls.h"

namespace folio::chat {

class RecipientCallReader {
 public:
  // Takes what is settled from the front of *buf: content to *content,
  // completed calls to *calls. Text that may still be a ">>>" or a
  // recipient line, or an unfinished arguments object, stays in *buf
  // unless `at_end` (the reply is over: all of it is settled).
  void feed(std::string* buf, bool at_end, std::string* content,
            std::vector<ParsedToolCall>* calls);

 private:
  enum class State { kRecipient, kContent, kArguments, kAfterCall };
  State state_ = State::kRecipient;
  std::string name_;  // kArguments: the function called
};

}  // namespace folio::chat
