// Sends a drill signal to a process, for the Node tests (Node cannot sigqueue):
//   send_drill PID gateway     the gateway drill (base/hang_drill_signal.hpp)
//   send_drill PID hang MS     the hang drill
//   send_drill PID gateway-hang MS  the gateway hang drill
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/hang_drill_signal.hpp"

int main(int argc, char** argv) {
  const std::string what = argc > 2 ? argv[2] : "";
  if (what != "gateway" && !((what == "hang" || what == "gateway-hang") && argc == 4)) {
    std::fprintf(stderr, "usage: send_drill PID gateway | send_drill PID hang MS | send_drill PID gateway-hang MS\n");
    return 2;
  }
  const int pid = std::atoi(argv[1]);
  const troupe::status sent = what == "gateway" ? troupe::send_gateway_crash_drill(pid)
                              : what == "hang"  ? troupe::send_hang_drill(pid, std::atoi(argv[3]))
                                                : troupe::send_gateway_hang_drill(pid, std::atoi(argv[3]));
  if (!sent) {
    std::fprintf(stderr, "send_drill: %s\n", sent.err().message.c_str());
    return 1;
  }
  return 0;
}
