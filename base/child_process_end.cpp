#include "base/child_process_end.hpp"

#include <sys/wait.h>

#include <csignal>
#include <thread>

namespace troupe {

void reap_or_kill(int pid, std::chrono::steady_clock::time_point deadline) {
  while (waitpid(pid, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace troupe
