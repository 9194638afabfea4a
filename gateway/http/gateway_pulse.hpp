#pragma once
// When the gateway actor last showed that it runs: it beats on every tick (each second).
// The HTTP server's thread reads it and answers /health itself, 503, once the gateway has
// been silent too long (a handler stuck on its thread), so that a probe sees a hung gateway
// as down instead of waiting on it.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace troupe {

class gateway_pulse {
 public:
  // Silent this long, the gateway is taken for hung: five missed ticks.
  static constexpr std::chrono::milliseconds hung_after{5000};

  gateway_pulse() { beat(); }
  void beat() { last_ns_ = now_ns(); }
  std::chrono::milliseconds silent_for() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(now_ns() - last_ns_.load()));
  }

 private:
  static int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
  std::atomic<int64_t> last_ns_{0};
};

}  // namespace troupe
