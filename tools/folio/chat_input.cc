#include "chat_input.h"

namespace folio::tools {

namespace {

constexpr std::string_view kBlockFence = R"(""")";

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

bool InputAssembler::add_line(std::string_view line, Input* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF scripts
  if (state_ == State::kBlock) {
    if (trim(line) == kBlockFence) {
      out->text = std::move(buf_);
      out->multi_line = true;
      clear();
      return true;
    }
    if (first_block_line_taken_) buf_ += '\n';
    buf_ += line;
    first_block_line_taken_ = true;
    return false;
  }
  if (state_ == State::kIdle && trim(line) == kBlockFence) {
    state_ = State::kBlock;
    buf_.clear();
    first_block_line_taken_ = false;
    return false;
  }
  const bool continued = !line.empty() && line.back() == '\\';
  if (continued) line.remove_suffix(1);
  const bool was_continued = state_ == State::kContinued;
  if (was_continued) buf_ += '\n';
  buf_ += line;
  if (continued) {
    state_ = State::kContinued;
    return false;
  }
  out->text = std::move(buf_);
  out->multi_line = was_continued;
  clear();
  return true;
}

void InputAssembler::clear() {
  state_ = State::kIdle;
  buf_.clear();
  first_block_line_taken_ = false;
}

ParsedInput parse_chat_input(const InputAssembler::Input& in) {
  ParsedInput p;
  if (trim(in.text).empty()) {
    p.command = ChatCommand::kEmpty;
    return p;
  }
  if (in.multi_line || in.text.front() != '/') {
    p.text = in.text;
    return p;
  }
  if (in.text.starts_with("//")) {
    p.text = in.text.substr(1);
    return p;
  }
  const std::string_view line = trim(in.text);
  const size_t end = line.find_first_of(" \t");
  const std::string_view word = line.substr(0, end);
  const bool has_args = end != std::string_view::npos;
  p.text = std::string(word);
  if (word == "/help" || word == "/?") {
    p.command = ChatCommand::kHelp;
  } else if (word == "/reset") {
    p.command = ChatCommand::kReset;
  } else if (word == "/exit" || word == "/quit") {
    p.command = ChatCommand::kExit;
  } else {
    p.command = ChatCommand::kUnknown;
    return p;
  }
  if (has_args) p.command = ChatCommand::kBadArguments;
  return p;
}

const char* chat_help_text() {
  return "commands:\n"
         "  /help, /?       this list\n"
         "  /reset          forget the conversation (the system prompt stays)\n"
         "  /exit, /quit    leave (so does Ctrl-D)\n"
         "input:\n"
         "  //text          send a line that starts with \"/\" (one \"/\" is dropped)\n"
         "  line \\          end a line with \"\\\" to continue the message on the next line\n"
         "  \"\"\"             a line of three double quotes opens and closes a multi-line block\n"
         "keys:\n"
         "  Ctrl-C          stop a reply (its text so far stays in the conversation);\n"
         "                  at the prompt it clears the line, twice on an empty line quits\n"
         "  Ctrl-D          quit (at an empty prompt)\n"
         "  Up/Down         input history; Left/Right, Home/End, Ctrl-W, ... edit the line\n";
}

}  // namespace folio::tools
