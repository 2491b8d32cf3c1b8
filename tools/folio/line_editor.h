// Line input for `folio chat`. On a terminal (stdin a TTY) lines are read
// with libedit: emacs-style editing, in-session history on Up/Down, the
// prompt written to the terminal (stdout when it is one, else stderr, so a
// redirected stdout holds only replies). Otherwise lines are read plainly
// from stdin, without prompt or echo, so a script of lines can be piped in.
//
// While a line is being edited the terminal's ISIG is off: Ctrl-C arrives as
// a key, ends the read with kInterrupted and the line's text is discarded
// (the caller decides what a Ctrl-C at the prompt means). Outside read_line
// the terminal is in its usual mode, so Ctrl-C raises SIGINT as always; a
// SIGINT that lands while a line is read anyway (the terminal not yet in
// editing mode) is seen through `interrupt_flag` (set by the caller's
// handler), which the editor polls while it waits for keys: it ends the read
// the same way.
#pragma once

#include <atomic>
#include <cstdio>
#include <cwchar>
#include <string>

struct editline;
struct history;

namespace folio::tools {

class LineEditor {
 public:
  enum class Read { kLine, kEof, kInterrupted };

  // `program` names the libedit instance (its ~/.editrc section).
  // interrupt_flag: set by a SIGINT handler (may be nullptr); cleared here
  // when it ends a read.
  LineEditor(const char* program, std::atomic<bool>* interrupt_flag);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  bool interactive() const { return el_ != nullptr; }
  // Where the prompt and the edited line are drawn (nullptr when not interactive).
  std::FILE* terminal() const { return out_; }

  // Reads one line without its newline. kInterrupted: Ctrl-C on a terminal
  // (*line gets the discarded text), or a signal interrupted the plain read.
  Read read_line(const std::string& prompt, std::string* line);
  // Adds a line to the history (interactive only; empty lines are skipped).
  void add_history(const std::string& line);

 private:
  static char* prompt_callback(struct editline* el);
  static unsigned char interrupt_callback(struct editline* el, int ch);
  // libedit's character source: waits for a key while polling interrupt_flag_.
  static int read_char_callback(struct editline* el, wchar_t* out);
  // Ends the current read as interrupted, keeping the line's text.
  void interrupt(struct editline* el);

  struct editline* el_ = nullptr;
  struct history* hist_ = nullptr;
  std::FILE* out_ = nullptr;
  std::string prompt_;
  std::atomic<bool>* interrupt_flag_ = nullptr;
  bool interrupted_ = false;
  std::string discarded_;  // the line's text when Ctrl-C ended the read
  std::string pending_;    // plain reads: bytes after the last returned line
  bool eof_ = false;
};

}  // namespace folio::tools
