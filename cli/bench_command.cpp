#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bench/report_writer.hpp"
#include "bench/serve_load.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace troupe::cli {
namespace {

struct bench_flags {
  bench::server_address server;
  bench::request_spec spec;
  bench::random_dataset_options dataset;
  bench::load_options load;
  bench::slo_targets slo;
  std::string json_path;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

result<bench_flags> parse(int argc, char** argv) {
  // --ignore-eos is the default; it is taken so that vLLM's command lines work as they are.
  auto a = args::parse(argc, argv, {"--ignore-eos", "--no-ignore-eos", "--disable-progress"}, {"--goodput"});
  if (!a) return a.err();
  bench_flags f;
  std::string failure;
  auto fail = [&](const std::string& message) {
    if (failure.empty()) failure = message;
  };
  auto integer = [&](const char* flag, int fallback) {
    auto v = a->take_int(flag, fallback);
    if (!v) fail(v.err().message);
    return v ? *v : fallback;
  };
  auto real = [&](const char* flag, double fallback) {
    auto v = a->take_double(flag, fallback);
    if (!v) fail(v.err().message);
    return v ? *v : fallback;
  };

  auto base_url = a->take("--base-url");
  auto host = a->take("--host"), port = a->take("--port");
  if (base_url && (host || port)) fail("give --base-url or --host and --port, not both");
  if (!base_url) {
    const std::string h = host.value_or("127.0.0.1");
    base_url = "http://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port.value_or("8000");
  }
  if (auto server = bench::parse_base_url(*base_url))
    f.server = *server;
  else
    fail(server.err().message);

  f.spec.endpoint = a->take("--endpoint").value_or("/v1/completions");
  if (ends_with(f.spec.endpoint, "/chat/completions"))
    f.spec.kind = bench::api_kind::chat;
  else if (!ends_with(f.spec.endpoint, "/completions"))
    fail("--endpoint must be /v1/completions or /v1/chat/completions");
  f.spec.model = a->take("--model").value_or("");
  const char* env_key = std::getenv("OPENAI_API_KEY");
  f.spec.api_key = a->take("--api-key").value_or(env_key ? env_key : "");
  a->take_switch("--ignore-eos");
  f.spec.ignore_eos = !a->take_switch("--no-ignore-eos");

  if (const auto dataset = a->take("--dataset").value_or("random"); dataset != "random")
    fail("--dataset " + dataset + ": only the random dataset is built in");
  f.dataset.num_prompts = integer("--num-prompts", 1000);
  f.dataset.input_len = integer("--random-input-len", 1024);
  f.dataset.output_len = integer("--random-output-len", 128);
  f.dataset.range_ratio = real("--random-range-ratio", 0.0);
  f.dataset.seed = uint64_t(integer("--seed", 0));
  f.dataset.as_text = f.spec.kind == bench::api_kind::chat;

  f.load.max_concurrency = integer("--max-concurrency", 0);
  f.load.request_rate = real("--request-rate", INFINITY);
  f.load.seed = f.dataset.seed;
  f.load.read_timeout = std::chrono::milliseconds(std::llround(real("--timeout", 300) * 1000));
  f.load.show_progress = !a->take_switch("--disable-progress");
  if (f.dataset.num_prompts < 1) fail("--num-prompts must be at least 1");
  if (f.load.max_concurrency < 0) fail("--max-concurrency must be at least 1");
  if (!(f.load.request_rate > 0)) fail("--request-rate must be positive (inf: all at once)");
  if (f.load.read_timeout.count() <= 0) fail("--timeout must be positive");

  if (auto goodput = a->take("--goodput")) {
    if (auto slo = bench::parse_slo_targets(*goodput))
      f.slo = *slo;
    else
      fail(slo.err().message);
  }
  f.json_path = a->take("--json").value_or("");
  if (auto s = a->finish(); !s) fail(s.err().message);
  if (!failure.empty()) return error{failure};
  return f;
}

// Names the model when --model was not given, and sends one request that is not counted
// (as vLLM's benchmark does), so that a server that cannot serve stops the run at once and
// its cold start stays out of the figures.
status check_server(bench_flags& f, const bench::bench_prompt& test_prompt) {
  bench::http_client http(f.server, f.load.read_timeout);
  if (f.spec.model.empty()) {
    auto id = bench::first_model_id(http, f.spec.api_key);
    if (!id) return id.err();
    f.spec.model = *id;
  }
  const auto test = bench::send_request(http, f.spec, test_prompt);
  if (!test.success) return error{"the test request failed: " + test.error};
  return ok();
}

void print_start(const bench_flags& f, const bench::run_info& info) {
  char rate[32] = "inf";
  if (!std::isinf(f.load.request_rate)) std::snprintf(rate, sizeof rate, "%g/s", f.load.request_rate);
  const std::string concurrency = f.load.max_concurrency ? std::to_string(f.load.max_concurrency) : "unlimited";
  std::fprintf(stderr, "troupe bench: %d requests of %s to %s%s, max concurrency %s, request rate %s\n",
               f.dataset.num_prompts, f.spec.model.c_str(), info.base_url.c_str(), f.spec.endpoint.c_str(),
               concurrency.c_str(), rate);
}

}  // namespace

int bench_command(int argc, char** argv) {
  auto stop = [](int code, const std::string& message) {
    std::fprintf(stderr, "troupe bench: %s\n", message.c_str());
    return code;
  };
  auto flags = parse(argc, argv);
  if (!flags) return stop(2, flags.err().message);
  auto& f = *flags;
  auto dataset = f.dataset;
  ++dataset.num_prompts;  // the last one is for the test request
  auto prompts = bench::random_prompts(dataset);
  if (!prompts) return stop(2, prompts.err().message);
  const bench::bench_prompt test_prompt = prompts->back();
  prompts->pop_back();
  std::ofstream json_out;
  if (!f.json_path.empty()) {
    json_out.open(f.json_path);  // now rather than after the run: a wrong path fails at once
    if (!json_out) return stop(2, "cannot write " + f.json_path);
  }
  if (auto s = check_server(f, test_prompt); !s) return stop(1, s.err().message);
  const bench::run_info info{bench::to_string(f.server), f.spec.endpoint,     f.spec.model, f.dataset.num_prompts,
                             f.load.max_concurrency,     f.load.request_rate, f.slo};
  print_start(f, info);

  const auto run = bench::run_load(f.server, f.spec, *prompts, f.load);
  const auto report = bench::summarize(run.outcomes, run.duration_s, f.slo);
  std::fputs(bench::format_report(report, info).c_str(), stdout);
  std::fflush(stdout);
  if (json_out.is_open() && !(json_out << bench::report_json(report, info, run.outcomes)).flush())
    return stop(1, "cannot write " + f.json_path);
  if (report.failed == 0) return 0;
  const auto first = std::find_if(run.outcomes.begin(), run.outcomes.end(), [](const auto& o) { return !o.success; });
  std::fprintf(stderr, "troupe bench: %d of %d requests failed; the first: %s\n", report.failed, f.dataset.num_prompts,
               first->error.c_str());
  return 1;
}

}  // namespace troupe::cli
