// Decode speed with a json_schema constraint against without, through the one-node CPU
// engine (scheduler, stage, sampler: the path a served request takes). Each run decodes
// one sequence; its rate is (tokens - 1) over the time from its first token to its last,
// so the prefill is left out. Alternating runs, medians; the first constrained run also
// pays for the token classes its grammar gathers (kept for later requests), so it is
// printed alone too. The sampler draws from the allowed tokens only, which is cheaper
// than from the whole vocabulary and hides the grammar's own cost: that is printed
// apart, as the time of each step's mask when the constrained outputs are replayed.
// Run from the source tree: build/bench/bench_constrained_decode [--model models/demo]
//   [--tokens N] [--runs N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/local_engine.hpp"
#include "actors/message_types.hpp"
#include "bench/constrained_engine.hpp"
#include "gateway/json_schema/json_schema_grammar.hpp"
#include "text/grammar/constrained_output.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A list of records with strings, numbers, enums and booleans: the walk keeps moving
// between grammar states instead of sitting inside one long string.
const char* records_schema = R"({"type": "array", "minItems": 20, "maxItems": 1024, "items": {"type": "object",
  "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 12},
  "score": {"type": "number"}, "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]},
  "maxItems": 3}, "active": {"type": "boolean"}},
  "required": ["id", "name", "score", "tags", "active"], "additionalProperties": false}})";

struct run_result {
  double tokens_per_second = 0;
  std::vector<int> tokens;
  bool ended_early = false;  // the grammar's output ended before the token budget
};

run_result decode(caf::scoped_actor& self, const engine& e, generation_request r) {
  self->send(e.scheduler, submit_atom::value, r, caf::actor(self));
  run_result out;
  clock_type::time_point first, last;
  for (bool done = false; !done;) {
    self->receive([&](const token_event& ev) {
      const auto now = clock_type::now();
      if (out.tokens.empty() && !ev.tokens.empty()) first = now;
      for (const auto& t : ev.tokens) out.tokens.push_back(t.token);
      last = now;
      done = ev.finish != uint8_t(finish_reason::none);
      out.ended_early = ev.finish == uint8_t(finish_reason::stop);
    });
  }
  out.tokens_per_second = double(out.tokens.size() - 1) / std::chrono::duration<double>(last - first).count();
  return out;
}

// The microseconds of each step's mask along `tokens` (the end token left out), from a
// grammar whose token classes earlier replays filled, as the engine's are.
void time_masks(const std::vector<int>& tokens, const std::shared_ptr<const compiled_grammar>& g,
                const std::vector<int>& end_tokens, const std::shared_ptr<const token_vocabulary>& v,
                std::vector<double>& micros) {
  constrained_output c(g, end_tokens, v);
  for (int t : tokens) {
    const auto start = clock_type::now();
    c.allowed();
    micros.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
    if (!c.advance(t)) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "models/demo";
  int tokens = 256, runs = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      dir = value;
    else if (flag == "--tokens")
      tokens = std::stoi(value);
    else if (flag == "--runs")
      runs = std::stoi(value);
    else
      return std::fprintf(stderr, "unknown flag %s\n", flag.c_str()), 2;
  }
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  auto started = start_constrained_engine(system, {dir});
  if (!started) return std::fprintf(stderr, "%s\n", started.err().message.c_str()), 1;
  const tokenizer* tok = &started->tok;
  engine* e = &started->running;
  const grammar records = json_schema_grammar(nlohmann::ordered_json::parse(records_schema)).value();
  const auto compiled = std::make_shared<const compiled_grammar>(compiled_grammar::compile(records).value());
  caf::scoped_actor self{system};

  std::vector<double> free_rates, constrained_rates, mask_micros;
  double first_constrained = 0;
  int ended_early = 0;
  for (int run = 0; run < runs; ++run) {
    generation_request r;
    r.prompt = tok->encode("A list of customer records as JSON:").value();
    r.max_tokens = tokens;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = uint64_t(run + 1);
    r.id = request_id(2 * run + 1);
    free_rates.push_back(decode(self, *e, r).tokens_per_second);
    r.id = request_id(2 * run + 2);
    r.output_grammar = records;
    r.stop_token_ids = e->config.eos_token_ids;
    const run_result c = decode(self, *e, r);
    if (run == 0) first_constrained = c.tokens_per_second;
    constrained_rates.push_back(c.tokens_per_second);
    ended_early += c.ended_early;
    time_masks(c.tokens, compiled, r.stop_token_ids, started->vocabulary, mask_micros);
  }
  const double free_rate = median(free_rates), constrained_rate = median(constrained_rates);
  std::printf("model %s, %d runs of %d tokens, one sequence, CPU\n", dir.c_str(), runs, tokens);
  std::printf("decode, no constraint:         %7.1f tok/s (median)\n", free_rate);
  std::printf("decode, json_schema:           %7.1f tok/s (median; %d of %d runs ended early)\n", constrained_rate,
              ended_early, runs);
  std::printf("decode, json_schema, first run: %6.1f tok/s (grammar not yet seen)\n", first_constrained);
  std::printf("cost per token of the constraint: %+.1f%%\n", (free_rate / constrained_rate - 1) * 100);
  double mask_total = 0;
  for (double m : mask_micros) mask_total += m;
  const double mask_mean = mask_total / double(mask_micros.size());
  std::printf("its mask alone, replayed: median %.0f us, mean %.0f us per token (%.1f%% of a free token's time)\n",
              median(mask_micros), mask_mean, mask_mean * 1e-6 * free_rate * 100);
  e->stop(system);
  return 0;
}
