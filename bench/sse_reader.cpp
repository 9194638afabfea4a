#include "bench/sse_reader.hpp"

namespace troupe::bench {

void sse_reader::feed(std::string_view bytes, const data_sink& sink) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string_view line(pending_.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (has_data_) sink(data_);
      data_.clear();
      has_data_ = false;
    } else if (line.rfind("data:", 0) == 0) {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (has_data_) data_ += '\n';
      data_.append(line);
      has_data_ = true;
    }
  }
  pending_.erase(0, start);
}

}  // namespace troupe::bench
