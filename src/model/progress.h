// A load progress bar on a stdio stream (stderr in the CLI). On a terminal it
// redraws one line with '\r'; otherwise (a pipe, a log file) it prints a few
// plain lines at 25 % steps, so logs stay readable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace folio::model {

class ProgressBar {
 public:
  // out == nullptr: a silent bar.
  ProgressBar(std::FILE* out, std::string label, uint64_t total);
  void update(uint64_t done);
  // Draws 100 % and ends the line.
  void finish();

 private:
  void draw(int percent);

  std::FILE* out_;
  std::string label_;
  uint64_t total_;
  bool tty_ = false;
  int last_ = -1;  // last percent (tty) or quarter (plain) drawn
  bool finished_ = false;
};

}  // namespace folio::model
