#pragma once
// Waits, polling, until a condition holds or a time limit passes: for what another thread
// or process does at its own pace.
#include <chrono>
#include <thread>

namespace troupe::test {

template <class Predicate>
bool eventually(Predicate p, std::chrono::milliseconds within = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!p()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace troupe::test
