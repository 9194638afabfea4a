#pragma once
// Progress of long work (loading, filling weights) on stderr: redrawn in place on a
// terminal, a single closing line in logs.
#include <string>

namespace troupe {

class progress {
 public:
  progress(std::string label, int total);
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  void update(int done);

 private:
  std::string label_;
  int total_;
  int done_ = 0;
  bool terminal_;
};

}  // namespace troupe
