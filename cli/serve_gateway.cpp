#include "cli/serve_gateway.hpp"

#include <cstdio>
#include <cstring>

#include "base/hang_drill_signal.hpp"

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
    std::fprintf(stderr, "troupe: no chat template (%s); /v1/chat/completions will answer 400\n", t.err().message.c_str());
  return codec;
}

served_engine served(caf::actor_system& system, engine& e) {
  return {e.config,        e.health,
          {{"main", e.scheduler, 1, ""}},
          e.max_model_len, e.num_blocks,
          [&system, &e] { e.stop(system); },
          [&e](int ms) {
            for (int k = 0; k < e.pipeline_stages; ++k)
              caf::anon_send(e.supervisor, hang_atom::value, stage_name(k), ms);
          }};
}

int serve_until_stopped(caf::actor_system& system, const served_engine& e, const text_codec& codec,
                        gateway_options g, const http::server_options& http, const sigset_t& stop_signals,
                        const char* command) {
  g.max_model_len = e.max_model_len;
  g.vocab_size = e.config.vocab_size;
  g.eos_token_ids = e.config.eos_token_ids;
  auto gw = system.spawn(gateway, g, codec.tok, codec.chat, e.replicas, e.health);
  auto server = http::server::start(http, [gw](http::request req, std::shared_ptr<http::responder> r) {
    caf::anon_send(gw, http_atom::value, std::make_shared<http_call>(http_call{std::move(req), std::move(r)}));
  });
  if (!server) {
    std::fprintf(stderr, "%s: %s\n", command, server.err().message.c_str());
    caf::anon_send_exit(gw, caf::exit_reason::user_shutdown);
    e.stop();
    return 1;
  }
  std::printf("troupe: serving %s on http://%s:%d (max_model_len %d, %d KV blocks)\n", g.served_model_name.c_str(),
              http.host.c_str(), (*server)->port(), e.max_model_len, e.num_blocks);
  std::fflush(stdout);

  siginfo_t info{};
  for (;;) {
    if (sigwaitinfo(&stop_signals, &info) < 0) continue;  // interrupted
    if (info.si_signo != hang_drill_signal) break;
    if (auto ms = hang_drill_ms(info)) {
      std::fprintf(stderr, "troupe: hang drill: every stage here blocks its next step for %d ms\n", *ms);
      e.hang(*ms);
    }
  }
  std::fprintf(stderr, "troupe: %s: no new connections; finishing requests in flight\n", strsignal(info.si_signo));
  (*server)->stop_accepting();
  (*server)->shutdown(std::chrono::seconds(30));
  server->reset();
  caf::anon_send_exit(gw, caf::exit_reason::user_shutdown);
  e.stop();
  std::fprintf(stderr, "troupe: stopped\n");
  return 0;
}

}  // namespace troupe::cli
