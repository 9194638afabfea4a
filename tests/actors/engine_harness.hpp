#pragma once
// Drives a one-node engine from a test: submits requests, collects every token event, and
// computes what a lone greedy run gives for comparison.
#include <map>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "actors/local_engine.hpp"
#include "actors/message_types.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/source_dir.hpp"

namespace troupe::test {

inline caf::actor_system_config& engine_config() {
  static caf::actor_system_config cfg = [] {
    caf::actor_system_config c;
    add_message_types(c);
    return c;
  }();
  return cfg;
}

struct outcome {
  std::vector<int> tokens;
  finish_reason finish = finish_reason::none;
  int events_after_finish = 0;
  int cached_prompt_tokens = 0;
  std::string error;
};

// Submits every request with `self` as the sink and waits until all have finished.
inline std::map<request_id, outcome> run_requests(caf::scoped_actor& self, const engine& e,
                                                  const std::vector<generation_request>& requests,
                                                  const std::function<void(int tokens_seen)>& on_token = {}) {
  std::map<request_id, outcome> out;
  for (const auto& r : requests) self->send(e.scheduler, submit_atom::value, r, caf::actor(self));
  size_t finished = 0;
  int seen = 0;
  while (finished < requests.size()) {
    self->receive(
        [&](const token_event& ev) {
          outcome& o = out[ev.id];
          if (o.finish != finish_reason::none) ++o.events_after_finish;
          for (const auto& t : ev.tokens) o.tokens.push_back(t.token);
          o.cached_prompt_tokens = ev.cached_prompt_tokens;
          if (ev.finish != uint8_t(finish_reason::none)) {
            o.finish = finish_reason(ev.finish);
            o.error = ev.error_message;
            ++finished;
          }
          seen += int(ev.tokens.size());
          if (on_token) on_token(seen);
        },
        caf::after(std::chrono::seconds(60)) >> [&] { BOOST_FAIL("no token event for 60 s: the engine hangs"); });
  }
  return out;
}

// Greedy tokens of one prompt run alone, stopping at `stops` or after `max_tokens`.
inline std::vector<int> greedy_alone(const qwen3_moe& model, const std::vector<int>& prompt, int max_tokens,
                                     const std::vector<int>& stops = {}) {
  single_sequence s(model, int(prompt.size()) + max_tokens + 1);
  std::vector<int> out;
  auto logits = s.forward(prompt);
  while (int(out.size()) < max_tokens) {
    const int vocab = model.config().vocab_size;
    const int next = int(std::max_element(logits.begin(), logits.begin() + vocab) - logits.begin());
    out.push_back(next);
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) break;
    logits = s.forward(std::vector<int>{next});
  }
  return out;
}

}  // namespace troupe::test
