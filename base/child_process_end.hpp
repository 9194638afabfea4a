#pragma once
// Ending a child process that was asked to stop (SIGTERM): reaped when it exits by the
// deadline, killed (SIGKILL) and reaped when it does not, so no caller waits forever.
#include <chrono>

namespace troupe {

void reap_or_kill(int pid, std::chrono::steady_clock::time_point deadline);

}  // namespace troupe
