#include "line_editor.h"

#include <histedit.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <clocale>

namespace folio::tools {

LineEditor::LineEditor(const char* program, std::atomic<bool>* interrupt_flag)
    : interrupt_flag_(interrupt_flag) {
  if (!isatty(STDIN_FILENO)) return;
  // libedit decodes multibyte (UTF-8) input by the locale's character type.
  std::setlocale(LC_CTYPE, "");
  out_ = isatty(STDOUT_FILENO) ? stdout : stderr;
  el_ = el_init(program, stdin, out_, stderr);
  if (el_ == nullptr) {
    out_ = nullptr;
    return;
  }
  hist_ = history_init();
  HistEvent ev;
  history(hist_, &ev, H_SETSIZE, 1000);
  history(hist_, &ev, H_SETUNIQUE, 1);  // a line repeated at once is stored once
  el_set(el_, EL_CLIENTDATA, this);
  el_set(el_, EL_EDITOR, "emacs");
  el_set(el_, EL_HIST, history, hist_);
  el_set(el_, EL_PROMPT, &LineEditor::prompt_callback);
  // Ctrl-C as a key while editing (no SIGINT), bound to interrupt_callback.
  el_set(el_, EL_SETTY, "-d", "-isig", nullptr);
  el_set(el_, EL_ADDFN, "folio-interrupt", "discard the line", &LineEditor::interrupt_callback);
  el_set(el_, EL_BIND, "^C", "folio-interrupt", nullptr);
  el_set(el_, EL_GETCFN, &LineEditor::read_char_callback);
  el_source(el_, nullptr);  // the user's ~/.editrc, if any
}

LineEditor::~LineEditor() {
  if (el_ != nullptr) el_end(el_);
  if (hist_ != nullptr) history_end(hist_);
}

char* LineEditor::prompt_callback(EditLine* el) {
  LineEditor* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  return self->prompt_.data();
}

void LineEditor::interrupt(EditLine* el) {
  interrupted_ = true;
  const LineInfo* li = el_line(el);
  discarded_.assign(li->buffer, li->lastchar);
}

unsigned char LineEditor::interrupt_callback(EditLine* el, int /*ch*/) {
  LineEditor* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  self->interrupt(el);
  return CC_EOF;  // ends el_gets with no line; read_line tells it from Ctrl-D by the flag
}

int LineEditor::read_char_callback(EditLine* el, wchar_t* out) {
  LineEditor* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  std::mbstate_t state{};
  char bytes[MB_LEN_MAX];
  size_t n = 0;
  for (;;) {
    if (self->interrupt_flag_ != nullptr &&
        self->interrupt_flag_->exchange(false, std::memory_order_relaxed)) {
      self->interrupt(el);
      return 0;  // "end of input" to libedit; read_line sees interrupted_
    }
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&p, 1, 50);  // ms: how soon a SIGINT is noticed
    if (ready < 0 && errno != EINTR) return -1;
    if (ready <= 0) continue;
    char c = 0;
    const ssize_t got = ::read(STDIN_FILENO, &c, 1);
    if (got == 0) return 0;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    bytes[n++] = c;
    wchar_t wc = 0;
    const size_t r = std::mbrtowc(&wc, &c, 1, &state);
    if (r == static_cast<size_t>(-2) && n < sizeof(bytes)) continue;  // more bytes to come
    if (r == static_cast<size_t>(-1) || r == static_cast<size_t>(-2)) {
      *out = static_cast<unsigned char>(bytes[0]);  // not valid here: pass the byte through
      return 1;
    }
    *out = wc;
    return 1;
  }
}

LineEditor::Read LineEditor::read_line(const std::string& prompt, std::string* line) {
  line->clear();
  if (el_ != nullptr) {
    prompt_ = prompt;
    interrupted_ = false;
    el_resize(el_);  // the terminal may have changed size since the last line
    std::fflush(stdout);
    std::fflush(stderr);
    int count = 0;
    const char* got = el_gets(el_, &count);
    if (interrupted_) {
      line->swap(discarded_);
      std::fputs("^C\n", out_);
      std::fflush(out_);
      return Read::kInterrupted;
    }
    if (got == nullptr || count <= 0) return Read::kEof;
    line->assign(got, static_cast<size_t>(count));
    if (!line->empty() && line->back() == '\n') line->pop_back();
    return Read::kLine;
  }
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line->assign(pending_, 0, nl);
      pending_.erase(0, nl + 1);
      return Read::kLine;
    }
    if (eof_) {
      if (pending_.empty()) return Read::kEof;
      line->swap(pending_);  // a last line without its newline
      pending_.clear();
      return Read::kLine;
    }
    char buf[4096];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) return Read::kInterrupted;
      eof_ = true;  // a read error ends the input like EOF
    } else if (n == 0) {
      eof_ = true;
    } else {
      pending_.append(buf, static_cast<size_t>(n));
    }
  }
}

void LineEditor::add_history(const std::string& line) {
  if (hist_ == nullptr || line.empty()) return;
  HistEvent ev;
  history(hist_, &ev, H_ENTER, line.c_str());
}

}  // namespace folio::tools
