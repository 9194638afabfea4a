#include "gateway/generation_request_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gateway/output_grammar_json.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

// Reads optional fields with OpenAI's ranges; remembers the first bad one. null means absent.
class fields {
 public:
  explicit fields(const json& body) : body_(body) {}

  const json* get(const char* name) const {
    auto it = body_.find(name);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }
  void number(const char* name, double lo, double hi, float& out) {
    const json* v = get(name);
    if (!v) return;
    if (!v->is_number() || v->get<double>() < lo || v->get<double>() > hi || !std::isfinite(v->get<double>()))
      return fail(name, std::string(name) + " must be a number from " + text(lo) + " to " + text(hi));
    out = v->get<float>();
  }
  void integer(const char* name, long long lo, long long hi, int& out) {
    const json* v = get(name);
    if (!v) return;
    if (!v->is_number_integer() || v->get<long long>() < lo || v->get<long long>() > hi)
      return fail(name, std::string(name) + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    out = int(v->get<long long>());
  }
  void boolean(const char* name, bool& out) {
    const json* v = get(name);
    if (!v) return;
    if (!v->is_boolean()) return fail(name, std::string(name) + " must be true or false");
    out = v->get<bool>();
  }
  void fail(std::string param, std::string message) {
    if (!failed_) failure_ = bad_param(std::move(param), std::move(message)), failed_ = true;
  }
  bool failed() const { return failed_; }
  const api_error& failure() const { return failure_; }

 private:
  static std::string text(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  }
  const json& body_;
  bool failed_ = false;
  api_error failure_;
};

}  // namespace

result<generation_options, api_error> parse_generation_options(const json& body) {
  generation_options o;
  fields f(body);
  const json* model = f.get("model");
  if (!model || !model->is_string()) return bad_param("model", "model is required and must be a string");
  o.model = model->get<std::string>();
  // max_completion_tokens is the newer spelling; either caps the output.
  f.integer("max_tokens", 1, 1 << 30, o.max_tokens);
  f.integer("max_completion_tokens", 1, 1 << 30, o.max_tokens);
  f.number("temperature", 0, 2, o.sampling.temperature);
  f.number("top_p", 1e-9, 1, o.sampling.top_p);
  int top_k = 0;
  f.integer("top_k", -1, 1 << 30, top_k);
  o.sampling.top_k = std::max(0, top_k);  // vLLM spells "off" -1
  f.number("min_p", 0, 1, o.sampling.min_p);
  f.number("presence_penalty", -2, 2, o.sampling.presence_penalty);
  f.number("frequency_penalty", -2, 2, o.sampling.frequency_penalty);
  f.number("repetition_penalty", 1e-9, 1e9, o.sampling.repetition_penalty);
  if (const json* seed = f.get("seed")) {
    if (!seed->is_number_integer()) f.fail("seed", "seed must be an integer");
    else o.sampling.seed = uint64_t(seed->get<int64_t>()), o.has_seed = true;
  }
  f.integer("n", 1, 128, o.n);
  f.boolean("stream", o.stream);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) f.fail("stream_options", "stream_options must be an object");
    else fields(*so).boolean("include_usage", o.include_usage);
  }
  if (const json* stop = f.get("stop")) {
    if (stop->is_string()) o.stop.push_back(stop->get<std::string>());
    else if (stop->is_array() && std::all_of(stop->begin(), stop->end(), [](const json& s) { return s.is_string(); }))
      for (const json& s : *stop) o.stop.push_back(s.get<std::string>());
    else f.fail("stop", "stop must be a string or a list of strings");
    if (std::any_of(o.stop.begin(), o.stop.end(), [](const std::string& s) { return s.empty(); }))
      f.fail("stop", "stop strings must not be empty");
  }
  if (const json* ids = f.get("stop_token_ids")) {
    if (!ids->is_array() || !std::all_of(ids->begin(), ids->end(), [](const json& i) { return i.is_number_integer(); }))
      f.fail("stop_token_ids", "stop_token_ids must be a list of integers");
    else o.stop_token_ids = ids->get<std::vector<int>>();
  }
  f.boolean("ignore_eos", o.ignore_eos);
  f.boolean("skip_special_tokens", o.skip_special_tokens);
  f.boolean("return_tokens_as_token_ids", o.return_tokens_as_token_ids);
  if (const json* user = f.get("user")) {
    if (user->is_string()) o.user = user->get<std::string>();
    else f.fail("user", "user must be a string");
  }
  if (!o.stream && o.include_usage) o.include_usage = false;
  if (f.failed()) return f.failure();
  auto output = response_grammar(body);
  if (!output) return output.err();
  o.output_grammar = std::move(*output);
  return o;
}

result<completion_request, api_error> parse_completion_request(std::string_view text) {
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return api_error{400, "the request body is not valid JSON", "invalid_request_error", {}, {}};
  if (!body.is_object()) return api_error{400, "the request body must be a JSON object", "invalid_request_error", {}, {}};
  auto options = parse_generation_options(body);
  if (!options) return options.err();
  completion_request r{std::move(*options), {}, -1, false};
  fields f(body);
  const json* prompt = f.get("prompt");
  const std::string shape = "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids";
  auto ids_of = [](const json& a) {
    return a.is_array() && !a.empty() && std::all_of(a.begin(), a.end(), [](const json& i) { return i.is_number_integer(); });
  };
  if (!prompt) return bad_param("prompt", "prompt is required");
  if (prompt->is_string()) {
    r.prompts.push_back({prompt->get<std::string>(), {}, false});
  } else if (ids_of(*prompt)) {
    r.prompts.push_back({{}, prompt->get<std::vector<int>>(), true});
  } else if (prompt->is_array() && !prompt->empty()) {
    for (const json& p : *prompt) {
      if (p.is_string()) r.prompts.push_back({p.get<std::string>(), {}, false});
      else if (ids_of(p)) r.prompts.push_back({{}, p.get<std::vector<int>>(), true});
      else return bad_param("prompt", shape);
    }
  } else {
    return bad_param("prompt", shape);
  }
  if (const json* lp = f.get("logprobs")) {
    if (!lp->is_number_integer() || lp->get<int>() < 0 || lp->get<int>() > 20)
      return bad_param("logprobs", "logprobs must be an integer from 0 to 20");
    r.logprobs = lp->get<int>();
  }
  f.boolean("echo", r.echo);
  if (f.failed()) return f.failure();
  if (r.options.max_tokens < 0) r.options.max_tokens = 16;  // the completions API's default
  return r;
}

}  // namespace troupe
