#pragma once
// Stop strings over streamed text: text is released as soon as it cannot be the start of
// a stop string, and nothing of a stop string (or after it) is ever released.
#include <string>
#include <vector>

namespace troupe {

class stop_matcher {
 public:
  explicit stop_matcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Adds generated text; returns what may be sent now. After a stop string was found,
  // stopped() is true and nothing more is released.
  std::string push(const std::string& text);
  // The held-back tail, once generation ended without a stop string.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string found (Anthropic's stop_sequence); empty until one is.
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string matched_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace troupe
