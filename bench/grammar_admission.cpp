// What grammars the engine has not seen cost the sequences beside them: 16 free sequences
// decode while 16 constrained ones arrive at once, each with a json_schema of its own (an
// enum of 1000 strings of about 110 bytes, near the gateway's limits); then again with the
// same schemas, compiled and cached; first with 16 unconstrained ones, for scale. With
// --schema FILE, each arrival's schema is FILE's under a property name of its own (so each
// is new to the engine), e.g. a zod schema with formats, patterns and bounds. Per
// round: the gaps between each free sequence's tokens while the others run (median, p99,
// max: a stalled step shows in all of them) and the others' time to first token. Through
// the one-node engine (scheduler, stages, sampler: the path a served request takes), on
// the CPU or, with --device cuda, the GPU. Run from the source tree:
//   build/bench/bench_grammar_admission [--model models/demo] [--schema FILE]
//     [--device cuda --load-format dummy --tokenizer DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/local_engine.hpp"
#include "actors/message_types.hpp"
#include "bench/constrained_engine.hpp"
#include "gateway/json_schema/json_schema_grammar.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int free_sequences = 16, constrained_sequences = 16;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

grammar enum_grammar(int schema) {
  nlohmann::ordered_json values = nlohmann::ordered_json::array();
  for (int i = 0; i < 1000; ++i) {
    std::string v = "schema " + std::to_string(schema) + " value " + std::to_string(i) + ": ";
    while (v.size() < 110) v += char('a' + (v.size() * 7 + size_t(i)) % 26);
    values.push_back(v);
  }
  return json_schema_grammar(nlohmann::ordered_json{{"enum", values}}).value();
}

// The schema as the one property of an object, named for the arrival.
result<grammar> wrapped_grammar(const nlohmann::ordered_json& schema, int arrival) {
  const std::string name = "answer_" + std::to_string(arrival);
  return json_schema_grammar(nlohmann::ordered_json{
      {"type", "object"}, {"properties", {{name, schema}}}, {"required", {name}}, {"additionalProperties", false}});
}

struct round_figures {
  std::vector<double> free_gaps_ms;
  std::vector<double> first_token_ms;
};

// One round: the free sequences first, until each has a token; then every other one at
// once (constrained unless its grammar is empty). Ends once those are done, cancelling the
// free ones.
round_figures run_round(caf::scoped_actor& self, const engine& e, const tokenizer& tok,
                        const std::vector<grammar>& grammars, int arrival_tokens, request_id& next_id) {
  std::map<request_id, clock_type::time_point> last_token;
  std::map<request_id, bool> is_free;
  generation_request r;
  r.prompt = tok.encode("Write a long story about a lighthouse keeper.").value();
  r.sampling.temperature = 1.0f;
  r.max_tokens = 100000;
  r.stop_token_ids = {};
  for (int i = 0; i < free_sequences; ++i) {
    r.id = next_id++;
    r.sampling.seed = r.id;
    is_free[r.id] = true;
    self->send(e.scheduler, submit_atom::value, r, caf::actor(self));
  }
  size_t started = 0;
  while (started < free_sequences)
    self->receive([&](const token_event& ev) {
      if (!is_free.count(ev.id)) return;  // an earlier round's
      if (!last_token.count(ev.id)) ++started;
      last_token[ev.id] = clock_type::now();
    });

  round_figures out;
  std::map<request_id, clock_type::time_point> submitted;
  r.prompt = tok.encode("Pick one:").value();
  r.max_tokens = arrival_tokens;
  r.stop_token_ids = e.config.eos_token_ids;
  for (const grammar& g : grammars) {
    r.id = next_id++;
    r.sampling.seed = r.id;
    r.output_grammar = g;
    is_free[r.id] = false;
    submitted[r.id] = clock_type::now();
    self->send(e.scheduler, submit_atom::value, r, caf::actor(self));
  }
  size_t finished = 0;
  while (finished < grammars.size())
    self->receive([&](const token_event& ev) {
      const auto now = clock_type::now();
      if (!is_free.count(ev.id)) return;
      if (is_free[ev.id]) {
        out.free_gaps_ms.push_back(std::chrono::duration<double, std::milli>(now - last_token[ev.id]).count());
        last_token[ev.id] = now;
        return;
      }
      if (!ev.tokens.empty() && submitted.count(ev.id)) {
        out.first_token_ms.push_back(std::chrono::duration<double, std::milli>(now - submitted[ev.id]).count());
        submitted.erase(ev.id);
      }
      if (ev.finish != uint8_t(finish_reason::none)) ++finished;
    });
  // Cancelled, they send nothing more but what was in flight, which later rounds ignore.
  for (const auto& [id, free] : is_free)
    if (free) self->send(e.scheduler, cancel_atom::value, id);
  return out;
}

void print(const char* label, const round_figures& f) {
  std::printf(
      "%-22s free gaps ms: median %6.1f  p99 %7.1f  max %7.1f (%zu gaps)   arrivals' TTFT ms: median "
      "%7.1f  max %7.1f\n",
      label, percentile(f.free_gaps_ms, 0.5), percentile(f.free_gaps_ms, 0.99), percentile(f.free_gaps_ms, 1.0),
      f.free_gaps_ms.size(), percentile(f.first_token_ms, 0.5), percentile(f.first_token_ms, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
  constrained_engine_options options;
  std::string schema_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      options.dir = value;
    else if (flag == "--schema")
      schema_file = value;
    else if (flag == "--tokenizer")
      options.tokenizer_dir = value;
    else if (flag == "--device" && (value == "cpu" || value == "cuda"))
      options.device = value == "cuda" ? device_kind::cuda : device_kind::cpu;
    else if (flag == "--load-format" && value == "dummy")
      options.dummy_weights = true;
    else
      return std::fprintf(stderr, "unknown flag or value %s %s\n", flag.c_str(), value.c_str()), 2;
  }
  const std::string& dir = options.dir;
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  auto started = start_constrained_engine(system, options);
  if (!started) return std::fprintf(stderr, "%s\n", started.err().message.c_str()), 1;
  const tokenizer* tok = &started->tok;
  engine* e = &started->running;
  std::vector<grammar> grammars;
  std::string what = "a 1000-string enum each";
  if (schema_file.empty()) {
    for (int i = 0; i < constrained_sequences; ++i) grammars.push_back(enum_grammar(i));
  } else {
    std::ifstream in(schema_file);
    const auto schema =
        nlohmann::ordered_json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
    if (schema.is_discarded()) return std::fprintf(stderr, "%s: not JSON\n", schema_file.c_str()), 2;
    for (int i = 0; i < constrained_sequences; ++i) {
      auto g = wrapped_grammar(schema, i);
      if (!g) return std::fprintf(stderr, "%s: %s\n", schema_file.c_str(), g.err().message.c_str()), 2;
      grammars.push_back(std::move(g).value());
    }
    what = schema_file + " each, under its own property name";
  }
  caf::scoped_actor self{system};
  request_id next_id = 1;
  std::printf("model %s, %s: %d free sequences, %d constrained ones arriving at once (%s)\n", dir.c_str(),
              options.device == device_kind::cuda ? "GPU" : "CPU", free_sequences, constrained_sequences, what.c_str());
  // An enum's answer is short; a schema's object is written whole.
  const int arrival_tokens = schema_file.empty() ? 24 : 160;
  print("no schema:", run_round(self, *e, *tok, std::vector<grammar>(constrained_sequences), arrival_tokens, next_id));
  print("new schemas:", run_round(self, *e, *tok, grammars, arrival_tokens, next_id));
  print("same schemas, cached:", run_round(self, *e, *tok, grammars, arrival_tokens, next_id));
  e->stop(system);
  return 0;
}
