// What `folio chat` makes of the lines typed at its prompt: physical lines
// are assembled into one input (multi-line rules below), and a one-line input
// starting with "/" is a command. Pure logic, no I/O, so it is unit-tested
// (tests/chat/chat_input_test.cc).
//
// Multi-line input:
//   - a line ending in "\" continues on the next line: the backslash is
//     dropped and a newline joins the two lines (llama.cpp's convention);
//   - a line that is exactly `"""` opens a block; every following line is
//     taken verbatim (no "\" or "/" rules) until the next `"""` line closes it.
// Commands (one-line inputs only; multi-line inputs are always text):
//   /help, /reset, /exit, /quit; "//..." sends "/..." as text; any other
//   "/word" is an unknown command and is not sent to the model.
#pragma once

#include <string>
#include <string_view>

namespace folio::tools {

class InputAssembler {
 public:
  struct Input {
    std::string text;
    bool multi_line = false;  // assembled from several lines ("\" or a """ block)
  };

  // Takes one physical line (without its newline). Returns true when an input
  // is complete; it is then in *out.
  bool add_line(std::string_view line, Input* out);
  // True while a "\" continuation or a """ block waits for more lines.
  bool pending() const { return state_ != State::kIdle; }
  bool in_block() const { return state_ == State::kBlock; }
  // Drops a partly assembled input (Ctrl-C at a continuation prompt).
  void clear();

 private:
  enum class State { kIdle, kContinued, kBlock };
  State state_ = State::kIdle;
  std::string buf_;
  bool first_block_line_taken_ = false;  // a """ block's lines are joined by newlines
};

enum class ChatCommand { kText, kEmpty, kHelp, kReset, kExit, kUnknown, kBadArguments };

struct ParsedInput {
  ChatCommand command = ChatCommand::kText;
  std::string text;  // kText: the message; kUnknown / kBadArguments: the command word
};

ParsedInput parse_chat_input(const InputAssembler::Input& in);

// The /help text (one command per line).
const char* chat_help_text();

}  // namespace folio::tools
