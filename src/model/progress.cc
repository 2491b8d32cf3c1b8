#include "model/progress.h"

#include <unistd.h>

#include <algorithm>

namespace folio::model {

ProgressBar::ProgressBar(std::FILE* out, std::string label, uint64_t total)
    : out_(out), label_(std::move(label)), total_(total) {
  tty_ = out_ != nullptr && isatty(fileno(out_)) == 1;
}

void ProgressBar::draw(int percent) {
  const double mib_done = static_cast<double>(total_) * percent / 100.0 / (1 << 20);
  const double mib_total = static_cast<double>(total_) / (1 << 20);
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(out_, "\r%s [%s] %3d%% %.1f/%.1f MiB", label_.c_str(), bar.c_str(), percent,
                 mib_done, mib_total);
  } else {
    std::fprintf(out_, "%s: %3d%% (%.1f/%.1f MiB)\n", label_.c_str(), percent, mib_done, mib_total);
  }
  std::fflush(out_);
}

void ProgressBar::update(uint64_t done) {
  if (out_ == nullptr || finished_) return;
  const int percent =
      total_ == 0 ? 100 : static_cast<int>(std::min<uint64_t>(done, total_) * 100 / total_);
  const int step = tty_ ? percent : percent / 25;
  if (step == last_ || (!tty_ && step == 0)) return;
  last_ = step;
  draw(tty_ ? percent : step * 25);
}

void ProgressBar::finish() {
  if (out_ == nullptr || finished_) return;
  if (last_ != (tty_ ? 100 : 4)) draw(100);
  if (tty_) std::fputc('\n', out_);
  std::fflush(out_);
  finished_ = true;
}

}  // namespace folio::model
