#include "cli/serve_gateway.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>

#include "actors/supervisor.hpp"
#include "base/hang_drill_signal.hpp"
#include "gateway/api_error.hpp"
#include "gateway/http/gateway_pulse.hpp"

namespace troupe::cli {

sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, hang_drill_signal);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

result<text_codec> load_text_codec(const std::filesystem::path& model_dir) {
  std::fprintf(stderr, "troupe: loading the tokenizer\n");
  auto tok = tokenizer::load(model_dir / "tokenizer.json");
  if (!tok) return tok.err();
  text_codec codec{std::make_shared<const tokenizer>(std::move(*tok)), nullptr};
  if (auto t = chat_template::load(model_dir / "tokenizer_config.json"))
    codec.chat = std::make_shared<const chat_template>(std::move(*t));
  else
    std::fprintf(stderr, "troupe: no chat template (%s); /v1/chat/completions will answer 400\n",
                 t.err().message.c_str());
  return codec;
}

served_engine served(caf::actor_system& system, engine& e) {
  return {e.config,
          e.health,
          {{"main", e.scheduler, 1, ""}},
          e.max_model_len,
          e.num_blocks,
          [&system, &e] { e.stop(system); },
          [&system, &e](int ms) {
            caf::scoped_actor self{system, /*hide=*/true};
            for (int k = 0; k < e.pipeline_stages; ++k) self->send(e.supervisor, hang_atom::value, stage_name(k), ms);
          }};
}

namespace {

// The gateway that runs now, for the HTTP server's thread: its supervisor's listener
// replaces it at every (re)start.
struct current_gateway {
  std::mutex mutex;
  gateway_actor actor;
  std::promise<void> first_start;
  std::atomic<bool> gave_up{false};  // it failed too often: the process stops with status 1
};

// What /health says, from the HTTP server's thread, of a gateway silent for `silent`.
std::string hung_gateway_error(std::chrono::milliseconds silent) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", double(silent.count()) / 1000);
  return service_unavailable("the gateway has not answered for " + std::string(seconds) + " s").to_json();
}

// Told of every start of the gateway, then of its supervisor (to monitor): once the
// supervisor gives up, stops the process.
caf::behavior gateway_listener(caf::event_based_actor* self, std::shared_ptr<current_gateway> current) {
  self->set_down_handler([=](caf::down_msg& msg) {
    if (msg.reason != caf::exit_reason::user_shutdown) {
      std::fprintf(stderr, "troupe: the gateway's supervisor gave up (%s); stopping\n",
                   caf::to_string(msg.reason).c_str());
      current->gave_up = true;
      kill(getpid(), SIGTERM);
    }
    self->quit();
  });
  return {
      [=](child_up_atom, const std::string&, const caf::actor& started) {
        std::lock_guard<std::mutex> lock(current->mutex);
        if (current->actor)
          std::fprintf(stderr, "troupe: the gateway was restarted by its supervisor\n");
        else
          current->first_start.set_value();
        current->actor = caf::actor_cast<gateway_actor>(started);
      },
      [=](const caf::actor& supervisor) { self->monitor(supervisor); },
  };
}

}  // namespace

int serve_until_stopped(caf::actor_system& system, const served_engine& e, const text_codec& codec, gateway_options g,
                        const http::server_options& http, const sigset_t& stop_signals, const char* command) {
  g.max_model_len = e.max_model_len;
  g.vocab_size = e.config.vocab_size;
  g.eos_token_ids = e.config.eos_token_ids;
  // The gateway under a supervisor of its own: one that dies (a bug, the gateway drill) is
  // started again within its backoff while the HTTP server keeps its socket, and the
  // requests the dead one held are answered 503 (http_call's destructor).
  auto current = std::make_shared<current_gateway>();
  auto pulse = std::make_shared<gateway_pulse>();
  g.pulse = pulse;
  std::vector<child_spec> gateway_spec{{"gateway", [=](caf::local_actor* parent) {
                                          return caf::actor_cast<caf::actor>(
                                              parent->spawn(gateway, g, codec.tok, codec.chat, e.replicas, e.health));
                                        }}};
  restart_policy policy;
  policy.backoff = std::chrono::milliseconds(20);
  auto listener = system.spawn(gateway_listener, current);
  auto gateway_supervisor = system.spawn(supervisor, gateway_spec, policy, health_monitor_actor{}, listener);
  caf::anon_send(listener, gateway_supervisor);
  current->first_start.get_future().wait();
  auto server = http::server::start(http, [current, pulse](http::request req, std::shared_ptr<http::responder> r) {
    if (req.path == "/health" && pulse->silent_for() > gateway_pulse::hung_after)
      return r->fail(503, hung_gateway_error(pulse->silent_for()));
    gateway_actor to;
    {
      std::lock_guard<std::mutex> lock(current->mutex);
      to = current->actor;
    }
    caf::anon_send(to, http_atom::value, std::make_shared<http_call>(std::move(req), std::move(r)));
  });
  if (!server) {
    std::fprintf(stderr, "%s: %s\n", command, server.err().message.c_str());
    caf::anon_send_exit(gateway_supervisor, caf::exit_reason::user_shutdown);
    e.stop();
    return 1;
  }
  std::string names;
  for (const std::string& name : g.served_model_names) names += (names.empty() ? "" : ", ") + name;
  std::printf("troupe: serving %s on http://%s:%d (max_model_len %d, %d KV blocks)\n", names.c_str(), http.host.c_str(),
              (*server)->port(), e.max_model_len, e.num_blocks);
  std::fflush(stdout);

  siginfo_t info{};
  for (;;) {
    if (sigwaitinfo(&stop_signals, &info) < 0) continue;  // interrupted
    if (info.si_signo != hang_drill_signal) break;
    if (is_gateway_crash_drill(info)) {
      std::fprintf(stderr, "troupe: gateway drill: the gateway fails as a crash would\n");
      caf::scoped_actor self{system, /*hide=*/true};
      self->send(gateway_supervisor, crash_atom::value, std::string("gateway"));
    }
    if (auto ms = hang_drill_ms(info)) {
      std::fprintf(stderr, "troupe: hang drill: every stage here blocks its next step for %d ms\n", *ms);
      e.hang(*ms);
    }
    if (auto ms = gateway_hang_drill_ms(info)) {
      std::fprintf(stderr, "troupe: gateway hang drill: the gateway's thread blocks for %d ms\n", *ms);
      caf::scoped_actor self{system, /*hide=*/true};
      std::lock_guard<std::mutex> lock(current->mutex);
      self->send(current->actor, hang_atom::value, *ms);
    }
  }
  std::fprintf(stderr, "troupe: %s: no new connections; finishing requests in flight\n", strsignal(info.si_signo));
  (*server)->stop_accepting();
  (*server)->shutdown(std::chrono::seconds(30));
  server->reset();
  caf::anon_send_exit(gateway_supervisor, caf::exit_reason::user_shutdown);
  e.stop();
  std::fprintf(stderr, "troupe: stopped\n");
  return current->gave_up ? 1 : 0;
}

}  // namespace troupe::cli
