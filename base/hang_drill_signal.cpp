#include "base/hang_drill_signal.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace troupe {

namespace {

constexpr int gateway_crash_value = -1;

status send_drill(int pid, int value) {
  sigval v{};
  v.sival_int = value;
  if (sigqueue(pid, hang_drill_signal, v) != 0)
    return error{"sigqueue to process " + std::to_string(pid) + ": " + std::strerror(errno)};
  return ok();
}

}  // namespace

status send_hang_drill(int pid, int ms) { return send_drill(pid, ms); }

status send_gateway_crash_drill(int pid) { return send_drill(pid, gateway_crash_value); }

status send_gateway_hang_drill(int pid, int ms) {
  if (ms < 2) return error{"a gateway hang drill lasts 2 ms or more"};
  return send_drill(pid, -ms);
}

std::optional<int> gateway_hang_drill_ms(const siginfo_t& info) {
  if (info.si_signo != hang_drill_signal || info.si_code != SI_QUEUE || info.si_value.sival_int >= gateway_crash_value)
    return std::nullopt;
  return -info.si_value.sival_int;
}

bool is_gateway_crash_drill(const siginfo_t& info) {
  return info.si_signo == hang_drill_signal && info.si_code == SI_QUEUE &&
         info.si_value.sival_int == gateway_crash_value;
}

std::optional<int> hang_drill_ms(const siginfo_t& info) {
  if (info.si_signo != hang_drill_signal || info.si_code != SI_QUEUE || info.si_value.sival_int <= 0)
    return std::nullopt;
  return info.si_value.sival_int;
}

}  // namespace troupe
