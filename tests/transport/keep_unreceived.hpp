#pragma once
// How long the tests' UCX endpoints keep a message nobody has received: longer than any
// test waits, so that none is dropped unless a test asks for that.
#include <chrono>

namespace troupe::test {

inline constexpr std::chrono::milliseconds keep_unreceived = std::chrono::minutes(5);

}  // namespace troupe::test
