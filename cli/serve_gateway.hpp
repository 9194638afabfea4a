#pragma once
// What `troupe serve` and `troupe cluster up` share once their engine runs: the gateway
// actor and its HTTP server, the "serving ... on http://..." line, and the graceful stop on
// SIGTERM or SIGINT (no new connections, requests in flight finish, then the engine stops).
#include <csignal>
#include <functional>
#include <memory>

#include "actors/gateway.hpp"
#include "actors/local_engine.hpp"
#include "gateway/http/http_server.hpp"
#include "text/chat_template.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe::cli {

// Blocks SIGTERM and SIGINT, and the hang drill's SIGUSR1 (base/hang_drill_signal.hpp), in
// this thread and every thread started after it (call it before the actor system starts);
// serve_until_stopped and troupe node take them with sigwaitinfo.
sigset_t block_stop_signals();

// The tokenizer and chat template in `model_dir`; a missing template is logged (chat
// completions then answer 400).
struct text_codec {
  std::shared_ptr<const tokenizer> tok;
  std::shared_ptr<const chat_template> chat;
};
result<text_codec> load_text_codec(const std::filesystem::path& model_dir);

// What the gateway serves: the model's shape, its replicas and health, and how it stops.
struct served_engine {
  model_config config;
  health_monitor_actor health;
  std::vector<replica_endpoint> replicas;
  int max_model_len = 0;
  int num_blocks = 0;  // per stage, for the start-up line
  std::function<void()> stop;
  std::function<void(int ms)> hang;  // the hang drill: this process's stages block their next step
};

// One process's engine as one replica, "main".
served_engine served(caf::actor_system& system, engine& e);

// Runs the gateway over `e` until a stop signal, then stops it; 0, or 1 when the HTTP
// server cannot start. A hang drill's signal meanwhile goes to e.hang.
int serve_until_stopped(caf::actor_system& system, const served_engine& e, const text_codec& codec, gateway_options g,
                        const http::server_options& http, const sigset_t& stop_signals, const char* command);

}  // namespace troupe::cli
