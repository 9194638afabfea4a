#include "chaos/delay_line.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "base/check.hpp"

namespace troupe::chaos {
namespace {

using clock_type = std::chrono::steady_clock;

// A frame with its 10-byte virtio header, as a GSO super-frame of 64 KiB comes.
constexpr size_t largest_frame = 1 << 17;
// Frames read from one end before the other end and the due frames get a turn.
constexpr int reads_a_turn = 64;

void make_non_blocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  TROUPE_CHECK(flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0, "a delay line's end must be a descriptor");
}

timespec timespec_of(clock_type::duration d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

}  // namespace

delay_line::delay_line(int end_a, int end_b, shape s, uint32_t seed) : ends_{end_a, end_b} {
  TROUPE_CHECK(s.jitter <= s.delay && s.jitter.count() >= 0, "a delay line's jitter is within its delay");
  make_non_blocking(end_a);
  make_non_blocking(end_b);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  TROUPE_CHECK(stop_fd_ >= 0, "an eventfd for a delay line");
  thread_ = std::thread([this, s, seed] { carry(s, seed); });
}

delay_line::~delay_line() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
  thread_.join();
  close(stop_fd_);
}

void delay_line::carry(shape s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> offset_us(-s.jitter.count(), s.jitter.count());
  // By due time and arrival order (frames due at once leave in the order they came): the end
  // each goes to, and its bytes.
  std::map<std::pair<clock_type::time_point, uint64_t>, std::pair<int, std::vector<uint8_t>>> in_flight;
  uint64_t arrivals = 0;
  std::vector<uint8_t> buffer(largest_frame);
  bool ended[2] = {false, false};  // its peer closed: read no more from it
  for (;;) {
    // Due frames out; an end that takes no more now (its buffer full) keeps the rest of its
    // frames, in order, until it can: a queue, as netem's is.
    bool full[2] = {false, false};
    auto now = clock_type::now();
    std::optional<clock_type::time_point> next_due;
    for (auto f = in_flight.begin(); f != in_flight.end();) {
      const int to = f->second.first;
      if (full[to]) {
        ++f;
        continue;
      }
      if (f->first.first > now) {
        next_due = f->first.first;
        break;
      }
      const auto& bytes = f->second.second;
      if (write(ends_[to], bytes.data(), bytes.size()) < 0 && errno == EAGAIN) {
        full[to] = true;
        ++f;
        continue;
      }
      f = in_flight.erase(f);  // written, or refused (a full device queue, ENOBUFS): dropped
    }
    // An end is read until its peer closes, and waited on while it is full.
    auto watch = [&](int e) -> pollfd {
      const short events = short((ended[e] ? 0 : POLLIN) | (full[e] ? POLLOUT : 0));
      return {events == 0 ? -1 : ends_[e], events, 0};
    };
    pollfd fds[3] = {watch(0), watch(1), {stop_fd_, POLLIN, 0}};
    timespec wait{};
    if (next_due) wait = timespec_of(*next_due - now);
    if (ppoll(fds, 3, next_due ? &wait : nullptr, nullptr) < 0 && errno != EINTR) return;
    if (fds[2].revents != 0) return;
    now = clock_type::now();
    for (int from = 0; from < 2; ++from) {
      if (ended[from] || (fds[from].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      for (int k = 0; k < reads_a_turn; ++k) {
        const ssize_t n = read(ends_[from], buffer.data(), buffer.size());
        ended[from] = n == 0;
        if (n <= 0) break;  // nothing more now (EAGAIN), or an error the next read clears
        const auto due = now + s.delay + std::chrono::microseconds(offset_us(gen));
        in_flight.emplace(std::pair{due, arrivals++},
                          std::pair{1 - from, std::vector<uint8_t>(buffer.begin(), buffer.begin() + n)});
      }
    }
  }
}

}  // namespace troupe::chaos
