#include "base/hang_drill_signal.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace troupe {

status send_hang_drill(int pid, int ms) {
  sigval value{};
  value.sival_int = ms;
  if (sigqueue(pid, hang_drill_signal, value) != 0)
    return error{"sigqueue to process " + std::to_string(pid) + ": " + std::strerror(errno)};
  return ok();
}

std::optional<int> hang_drill_ms(const siginfo_t& info) {
  if (info.si_signo != hang_drill_signal || info.si_code != SI_QUEUE || info.si_value.sival_int <= 0)
    return std::nullopt;
  return info.si_value.sival_int;
}

}  // namespace troupe
