#include "gateway/stop_matcher.hpp"

#include "gateway/streamed_text.hpp"

#include <algorithm>
#include <utility>

namespace troupe {

std::string stop_matcher::push(const std::string& text) {
  if (stopped_) return {};
  held_ += text;
  size_t first = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    if (at < first || (at == first && at != std::string::npos && s.size() > matched_.size())) first = at, matched_ = s;
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that could still grow into a stop string.
  size_t keep = 0;
  for (const auto& s : stops_) keep = std::max(keep, partial_marker_suffix(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string stop_matcher::flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace troupe
