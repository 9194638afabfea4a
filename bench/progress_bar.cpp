#include "bench/progress_bar.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace troupe::bench {

progress_bar::progress_bar(int total, bool enabled)
    : total_(total),
      enabled_(enabled),
      terminal_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {
  if (enabled_ && terminal_) std::fprintf(stderr, "[%s] 0/%d", std::string(30, ' ').c_str(), total_);
}

progress_bar::~progress_bar() {
  if (enabled_ && terminal_) std::fprintf(stderr, "\n");
}

void progress_bar::advance() {
  std::lock_guard lock(mutex_);
  ++done_;
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) {
    const int width = 30, filled = done_ * width / total_;
    std::fprintf(stderr, "\r[%s%s] %d/%d requests, %.1f s", std::string(size_t(filled), '=').c_str(),
                 std::string(size_t(width - filled), ' ').c_str(), done_, total_, elapsed);
    return;
  }
  const int tenths = done_ * 10 / total_;
  if (tenths == tenths_shown_) return;
  tenths_shown_ = tenths;
  std::fprintf(stderr, "troupe bench: %d/%d requests done (%d%%), %.1f s\n", done_, total_, done_ * 100 / total_,
               elapsed);
}

}  // namespace troupe::bench
