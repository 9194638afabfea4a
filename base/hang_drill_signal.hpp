#pragma once
// The hang drill's signal (`troupe chaos run`, action hang): SIGUSR1 sent with sigqueue
// and a value N > 0 makes every pipeline stage of the receiving process (troupe serve,
// cluster up, node) block its next step for N ms, as a hung device or a collective that
// never returns would. A plain SIGUSR1 (kill) carries no value and is ignored, so a stray
// one does no harm.
#include <signal.h>

#include <optional>

#include "base/result.hpp"

namespace troupe {

constexpr int hang_drill_signal = SIGUSR1;

// Asks process `pid` to hang its stages' next step for `ms` milliseconds.
status send_hang_drill(int pid, int ms);

// The milliseconds a signal taken with sigwaitinfo asks for; none for any other signal or
// a plain SIGUSR1.
std::optional<int> hang_drill_ms(const siginfo_t& info);

// The gateway drill: the same signal with the value -1 makes the gateway actor of the
// receiving process (troupe serve, cluster up) fail as a crash would; its supervisor
// starts it again. Node processes, which run no gateway, ignore it.
status send_gateway_crash_drill(int pid);
bool is_gateway_crash_drill(const siginfo_t& info);

// The gateway hang drill: the value -N (N >= 2) makes the gateway actor's thread block for
// N ms, as a handler stuck on it would; /health then answers 503 from the HTTP server.
status send_gateway_hang_drill(int pid, int ms);
std::optional<int> gateway_hang_drill_ms(const siginfo_t& info);

}  // namespace troupe
