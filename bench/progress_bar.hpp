#pragma once
// Requests done out of the total, and the time since the start, on stderr: redrawn in
// place on a terminal, a line per tenth of the total in logs. Any thread may advance it.
#include <chrono>
#include <mutex>

namespace troupe::bench {

class progress_bar {
 public:
  progress_bar(int total, bool enabled);
  ~progress_bar();
  progress_bar(const progress_bar&) = delete;
  progress_bar& operator=(const progress_bar&) = delete;

  void advance();  // one more request done

 private:
  std::mutex mutex_;
  const int total_;
  const bool enabled_, terminal_;
  const std::chrono::steady_clock::time_point start_;
  int done_ = 0;
  int tenths_shown_ = 0;
};

}  // namespace troupe::bench
