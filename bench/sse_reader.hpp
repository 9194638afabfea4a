#pragma once
// Splits a text/event-stream body into the data of its events, however the bytes were
// chunked on the way: an event may straddle reads, and one read may hold many events.
#include <functional>
#include <string>
#include <string_view>

namespace troupe::bench {

class sse_reader {
 public:
  using data_sink = std::function<void(std::string_view data)>;

  // Calls `sink` with the data of each event the bytes complete (its `data:` lines
  // joined by '\n'); events without data (comments, keep-alives) are skipped.
  void feed(std::string_view bytes, const data_sink& sink);

 private:
  std::string pending_;  // bytes of a line not yet ended
  std::string data_;     // data lines of the event not yet ended
  bool has_data_ = false;
};

}  // namespace troupe::bench
