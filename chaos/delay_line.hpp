#pragma once
// A wire in user space between two file descriptors that carry whole frames (a node's veth
// end, read through a packet socket, and a tap device in the chaos run's bridge): each frame
// read from one end is written to the other after a delay drawn at random, uniformly within
// `delay` +- `jitter`, as tc netem's delay does (this kernel has no netem). Frames overtake
// each other where the jitter exceeds their spacing, as under netem. Frames due at an end
// that takes no more for now wait, in order, until it can. The frames are opaque bytes. A
// thread of its own moves them; the destructor stops it and drops what is still in flight,
// as removing netem does. The descriptors stay the caller's.
#include <chrono>
#include <cstdint>
#include <thread>

namespace troupe::chaos {

class delay_line {
 public:
  struct shape {
    std::chrono::microseconds delay{0};
    std::chrono::microseconds jitter{0};  // at most `delay`
  };

  // Starts carrying frames between `end_a` and `end_b` (both made non-blocking here).
  delay_line(int end_a, int end_b, shape s, uint32_t seed);
  ~delay_line();
  delay_line(const delay_line&) = delete;
  delay_line& operator=(const delay_line&) = delete;

 private:
  void carry(shape s, uint32_t seed);

  int ends_[2];
  int stop_fd_;  // an eventfd: written once by the destructor
  std::thread thread_;
};

}  // namespace troupe::chaos
