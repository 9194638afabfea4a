#include <cstdio>

#include "actors/local_engine.hpp"
#include "actors/message_types.hpp"
#include "cli/args.hpp"
#include "cli/cluster_conf.hpp"
#include "cli/commands.hpp"
#include "cli/serve_gateway.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::cli {
namespace {

struct serve_flags {
  engine_options engine;
  gateway_options gateway;
  http::server_options http;
  std::string device = "cpu";
};

// `--config FILE` contributes the flags its file stands for; flags on the command line,
// parsed after them, win.
result<serve_flags> parse(int argc, char** argv) {
  std::vector<std::string> words;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) != "--config") continue;
    if (i + 1 >= argc) return error{"flag --config needs a value"};
    auto from_file = cluster_conf_flags(argv[i + 1]);
    if (!from_file) return from_file.err();
    words.insert(words.end(), from_file->begin(), from_file->end());
  }
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--config") {
      ++i;
      continue;
    }
    words.push_back(argv[i]);
  }
  std::vector<char*> pointers;
  for (auto& w : words) pointers.push_back(w.data());
  auto a =
      args::parse(int(pointers.size()), pointers.data(),
                  {"--enforce-eager", "--protect-metrics", "--special-tokens-in-content"}, {"--served-model-name"});
  if (!a) return a.err();
  serve_flags f;
  std::string failure;
  auto number = [&](const char* flag, int fallback) {
    auto v = a->take_int(flag, fallback);
    if (!v && failure.empty()) failure = v.err().message;
    return v ? *v : fallback;
  };
  auto model = a->take("--model");
  f.engine.backend.model_dir = model.value_or("");
  f.engine.backend.dummy_weights = a->take("--load-format").value_or("safetensors") == "dummy";
  f.http.host = a->take("--host").value_or("127.0.0.1");
  f.http.port = number("--port", 8000);
  f.gateway.served_model_names =
      served_model_names(a->take("--served-model-name").value_or(f.engine.backend.model_dir.filename().string()));
  f.gateway.api_key = a->take("--api-key").value_or("");
  f.gateway.admin_key = a->take("--admin-key").value_or("");
  f.gateway.protect_metrics = a->take_switch("--protect-metrics");
  f.gateway.special_tokens_in_content = a->take_switch("--special-tokens-in-content");
  f.device = a->take("--device").value_or("cpu");
  f.engine.scheduler.max_num_seqs = number("--max-num-seqs", 64);
  f.engine.scheduler.max_num_batched_tokens = number("--max-num-batched-tokens", 2048);
  f.engine.max_model_len = number("--max-model-len", 0);
  f.engine.backend.block_size = number("--block-size", 16);
  f.engine.expert_groups = number("--expert-groups", 1);
  f.engine.pipeline_stages = number("--pipeline-stages", 1);
  f.engine.scheduler.micro_batches = number("--pipeline-micro-batches", 0);
  f.engine.backend.kv_cache_bytes = size_t(number("--kv-cache-mb", 0)) << 20;
  f.engine.backend.gpu_memory_utilization = number("--gpu-memory-percent", 90) / 100.0;
  f.engine.backend.enforce_eager = a->take_switch("--enforce-eager");
  f.engine.progress_timeout = std::chrono::milliseconds(number("--progress-timeout-ms", 30000));
  f.gateway.max_pending = size_t(number("--max-pending", 1024));
  f.http.send_timeout = std::chrono::milliseconds(number("--send-timeout-ms", 30000));
  f.http.max_connections = size_t(std::max(1, number("--max-connections", 4096)));
  f.gateway.warmup_requests = number("--warmup-requests", 0);
  if (auto s = a->finish(); !s && failure.empty()) failure = s.err().message;
  if (!model && failure.empty()) failure = "--model DIR (or --config FILE) is required";
  if (f.gateway.served_model_names.empty() && failure.empty()) failure = "--served-model-name needs a name";
  if (f.engine.progress_timeout.count() <= 0 && failure.empty()) failure = "--progress-timeout-ms must be above 0";
  if (f.http.send_timeout.count() <= 0 && failure.empty()) failure = "--send-timeout-ms must be above 0";
  if (f.gateway.warmup_requests < 0 && failure.empty()) failure = "--warmup-requests must be 0 or more";
  if (f.gateway.protect_metrics && f.gateway.api_key.empty() && f.gateway.admin_key.empty() && failure.empty())
    failure = "--protect-metrics needs --api-key or --admin-key to ask for";
  if (f.engine.scheduler.micro_batches < 0 && failure.empty()) failure = "--pipeline-micro-batches must be 0 or more";
  if (f.device == "cuda")
    f.engine.device = device_kind::cuda;
  else if (f.device != "cpu" && failure.empty())
    failure = "--device must be cpu or cuda, not " + f.device;
  if (!failure.empty()) return error{failure};
  return f;
}

}  // namespace

int serve_command(int argc, char** argv) {
  auto flags = parse(argc, argv);
  if (!flags) {
    std::fprintf(stderr, "troupe serve: %s\n", flags.err().message.c_str());
    return 2;
  }
  const sigset_t stop_signals = block_stop_signals();
  auto codec = load_text_codec(flags->engine.backend.model_dir);
  if (!codec) {
    std::fprintf(stderr, "troupe serve: %s\n", codec.err().message.c_str());
    return 1;
  }
  caf::actor_system_config config;
  add_message_types(config);
  // The compute actors run detached; the scheduled ones (scheduler, kv_manager, gateway)
  // are light and latency-bound. Work stealing polls with sleeps when idle, which showed as
  // about 0.45 ms per output token at concurrency 1; sharing wakes workers on a condition
  // variable.
  config.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system system{config};
  flags->engine.vocabulary = vocabulary_of(*codec->tok);
  auto engine = start_local_engine(system, flags->engine);
  if (!engine) {
    std::fprintf(stderr, "troupe serve: %s\n", engine.err().message.c_str());
    return 1;
  }
  return serve_until_stopped(system, served(system, *engine), *codec, flags->gateway, flags->http, stop_signals,
                             "troupe serve");
}

}  // namespace troupe::cli
