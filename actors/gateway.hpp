#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "actors/actors.hpp"
#include "gateway/generation_call.hpp"
#include "gateway/http/gateway_pulse.hpp"
#include "gateway/metrics.hpp"
#include "gateway/openai/response_store.hpp"
#include "gateway/replica_router.hpp"
#include "gateway/request_preparation.hpp"
#include "text/chat_template.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

// One replica of the model (a scheduler and what it drives) as the gateway sees it.
struct replica_endpoint {
  std::string name;
  scheduler_actor scheduler;  // null while the replica is not running
  double weight = 1;          // the file's: what it serves with when added at runtime
  // The health monitor names its components with this in front ("": every component).
  std::string component_prefix;
};

struct gateway_options {
  std::vector<std::string> served_model_names;           // at least one: the first is listed first
  routing_policy routing = routing_policy::round_robin;  // among several replicas
  circuit_options circuit;
  std::string api_key;           // empty: no authentication
  std::string admin_key;         // for /admin/*; empty: the api_key serves there too
  bool protect_metrics = false;  // /metrics asks for the api_key or the admin_key
  // Special-token text in a chat request's strings is read as special tokens (gateway/chat_prompt.hpp).
  bool special_tokens_in_content = false;
  int max_model_len = 0;
  int vocab_size = 0;  // ids the model accepts
  std::vector<int> eos_token_ids;
  size_t max_pending = 1024;  // accepted calls in flight before 429
  // Streamed requests the gateway sends itself at once when the engine is first ready
  // (gateway/warmup.hpp); /health answers 503 until they have finished. 0: none.
  int warmup_requests = 0;
  // Starts and stops replicas at runtime (/admin/replicas); null in one process, where
  // the one replica stays.
  replica_control_actor replica_control;
  // Beaten on every tick, for the HTTP server's own /health when the gateway hangs; may be null.
  std::shared_ptr<gateway_pulse> pulse;
};

struct gateway_metrics {
  explicit gateway_metrics(metrics::registry& r);
  metrics::family<metrics::counter>& requests;
  metrics::counter& prompt_tokens;
  metrics::counter& generation_tokens;
  metrics::histogram& time_to_first_token;
  metrics::histogram& time_per_output_token;
  metrics::histogram& e2e_latency;
  metrics::gauge& running;
  metrics::gauge& waiting;
  metrics::gauge& kv_usage;
  metrics::gauge& prefix_hit_rate;
  metrics::counter& preemptions;
  metrics::counter& recoveries;
  metrics::family<metrics::gauge>& component_ready;
  metrics::family<metrics::gauge>& component_restarts;
  metrics::family<metrics::counter>& replica_requests;
  metrics::family<metrics::gauge>& replica_weight;
  metrics::family<metrics::gauge>& replica_in_flight;
  metrics::family<metrics::gauge>& replica_routable;
};

struct gateway_state {
  static inline const char* name = "gateway";
  struct call {
    std::string endpoint;
    http_call_ptr http;
    std::unique_ptr<generation_call> generation;
    std::vector<request_id> requests;
    bool stream = false;
    std::chrono::steady_clock::time_point start;
    std::chrono::steady_clock::time_point first_token;
    bool has_first_token = false;
    size_t replica = 0;                  // where its requests run
    std::optional<responses_turn> turn;  // /v1/responses: stored once it completes
  };
  gateway_options options;
  std::shared_ptr<const tokenizer> tok;
  std::shared_ptr<const chat_template> chat;                // null when the model ships none
  tool_call_format tool_format = tool_call_format::hermes;  // the markup the chat template teaches
  std::vector<replica_endpoint> replicas;
  std::unique_ptr<replica_router> router;
  std::vector<std::string> replica_errors;  // by replica: what its last add or remove failed with
  health_monitor_actor health;
  std::shared_ptr<metrics::registry> registry;
  std::unique_ptr<gateway_metrics> metrics;
  std::map<uint64_t, call> calls;
  std::shared_ptr<response_store> responses = std::make_shared<response_store>();
  std::map<std::string, uint64_t> call_of_response;           // a running /v1/responses call, by response id
  std::vector<request_preparer_actor> preparers;              // linked: they end with the gateway
  std::vector<size_t> preparing_on;                           // by preparer: requests it holds
  size_t preparing = 0;                                       // requests at the preparers
  std::map<request_id, std::pair<uint64_t, int>> by_request;  // -> (call, choice)
  uint64_t next_call = 1;
  request_id next_request = 1;
  uint64_t engine_preemptions = 0, engine_recoveries = 0;  // last seen, for the counters
  std::mt19937_64 seeds{std::random_device{}()};
  int warmup_left = 0;          // warm-up requests not finished yet
  bool warmup_started = false;  // sent (or there are none)
  std::chrono::steady_clock::time_point warmup_start;

  // A gateway that dies (a bug, the gateway drill) cancels its requests: nobody would take
  // their tokens.
  ~gateway_state();
};

gateway_actor::behavior_type gateway(gateway_actor::stateful_pointer<gateway_state> self, gateway_options options,
                                     std::shared_ptr<const tokenizer> tok, std::shared_ptr<const chat_template> chat,
                                     std::vector<replica_endpoint> replicas, health_monitor_actor health);

}  // namespace troupe
