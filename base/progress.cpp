#include "base/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace troupe {

progress::progress(std::string label, int total)
    : label_(std::move(label)), total_(total), terminal_(isatty(STDERR_FILENO) == 1) {}

void progress::update(int done) {
  done_ = done;
  if (terminal_) std::fprintf(stderr, "\r%s: %d/%d", label_.c_str(), done_, total_);
}

progress::~progress() {
  if (terminal_)
    std::fprintf(stderr, "\n");
  else
    std::fprintf(stderr, "%s: %d/%d\n", label_.c_str(), done_, total_);
}

}  // namespace troupe
