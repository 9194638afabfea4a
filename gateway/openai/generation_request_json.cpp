#include "gateway/openai/generation_request_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "gateway/json_body.hpp"
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
  void integer(const char* name, int64_t lo, int64_t hi, int& out) {
    const json* v = get(name);
    if (!v) return;
    const auto i = exact_integer(*v);
    if (!i || *i < lo || *i > hi)
      return fail(name,
                  std::string(name) + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    out = int(*i);
  }
  void boolean(const char* name, bool& out) {
    const json* v = get(name);
    if (!v) return;
    if (!v->is_boolean()) return fail(name, std::string(name) + " must be true or false");
    out = v->get<bool>();
  }
  void fail(std::string param, std::string message) { fail(bad_param(std::move(param), std::move(message))); }
  void fail(api_error e) {
    if (!failed_) failure_ = std::move(e), failed_ = true;
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

// {"token id": bias}: ids as decimal strings (the vocabulary check is the gateway's, which
// knows the model), biases from -100 to 100.
void read_logit_bias(const json& bias, fields& f, std::vector<token_bias>& out) {
  if (!bias.is_object()) return f.fail("logit_bias", "logit_bias must be an object of token ids to numbers");
  if (auto e = check_count(bias.size(), max_token_list, "logit_bias", "entries")) return f.fail(*e);
  for (const auto& [key, value] : bias.items()) {
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    // Canonical decimals only, so that no two keys name one token ("5" and "05").
    if (ec != std::errc() || end != key.data() + key.size() || key.empty() || id < 0 || id > INT32_MAX ||
        (key.size() > 1 && key[0] == '0'))
      return f.fail("logit_bias", "logit_bias key \"" + key + "\" is not a token id");
    if (!value.is_number() || !(value.get<double>() >= -100 && value.get<double>() <= 100))
      return f.fail("logit_bias", "logit_bias values must be numbers from -100 to 100");
    out.push_back({int(id), value.get<float>()});
  }
}

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
    if (!seed->is_number_integer())
      f.fail("seed", "seed must be an integer");
    else
      o.sampling.seed = seed->get<uint64_t>(), o.has_seed = true;  // modulo 2^64, as numpy takes it
  }
  f.integer("n", 1, 128, o.n);
  f.boolean("stream", o.stream);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object())
      f.fail("stream_options", "stream_options must be an object");
    else
      fields(*so).boolean("include_usage", o.include_usage);
  }
  if (const json* stop = f.get("stop")) {
    if (stop->is_string())
      o.stop.push_back(stop->get<std::string>());
    else if (stop->is_array() && std::all_of(stop->begin(), stop->end(), [](const json& s) { return s.is_string(); }))
      for (const json& s : *stop) o.stop.push_back(s.get<std::string>());
    else
      f.fail("stop", "stop must be a string or a list of strings");
    if (auto e = check_count(o.stop.size(), max_stop_strings, "stop", "strings")) f.fail(*e);
    for (const std::string& s : o.stop) {
      if (s.empty()) f.fail("stop", "stop strings must not be empty");
      if (s.size() > max_stop_bytes)
        f.fail("stop", "a stop string is longer than " + std::to_string(max_stop_bytes) + " bytes");
    }
  }
  if (const json* ids = f.get("stop_token_ids")) {
    auto read = token_ids(*ids, "stop_token_ids");
    if (!read)
      f.fail(read.err());
    else if (auto e = check_count(read->size(), max_token_list, "stop_token_ids", "ids"))
      f.fail(*e);
    else
      o.stop_token_ids = std::move(*read);
  }
  if (const json* bias = f.get("logit_bias")) read_logit_bias(*bias, f, o.sampling.logit_bias);
  f.boolean("ignore_eos", o.ignore_eos);
  f.boolean("skip_special_tokens", o.skip_special_tokens);
  f.boolean("return_tokens_as_token_ids", o.return_tokens_as_token_ids);
  if (const json* user = f.get("user")) {
    if (user->is_string())
      o.user = user->get<std::string>();
    else
      f.fail("user", "user must be a string");
  }
  if (!o.stream && o.include_usage) o.include_usage = false;
  if (f.failed()) return f.failure();
  auto output = response_grammar(body);
  if (!output) return output.err();
  o.output_grammar = std::move(*output);
  return o;
}

result<completion_request, api_error> parse_completion_request(std::string_view text) {
  auto parsed = parse_json_object(text);
  if (!parsed) return parsed.err();
  const json& body = *parsed;
  auto options = parse_generation_options(body);
  if (!options) return options.err();
  completion_request r{std::move(*options), {}, -1, false};
  fields f(body);
  const json* prompt = f.get("prompt");
  const std::string shape =
      "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids";
  // A list of ids is one prompt; a list of strings or of id lists is several.
  auto ids_of = [](const json& a) { return a.is_array() && !a.empty() && a.front().is_number(); };
  auto add_ids = [&](const json& a) -> std::optional<api_error> {
    auto ids = token_ids(a, "prompt");
    if (!ids) return ids.err();
    r.prompts.push_back({{}, std::move(*ids), true});
    return std::nullopt;
  };
  if (!prompt) return bad_param("prompt", "prompt is required");
  if (prompt->is_string()) {
    r.prompts.push_back({prompt->get<std::string>(), {}, false});
  } else if (ids_of(*prompt)) {
    if (auto e = add_ids(*prompt)) return *e;
  } else if (prompt->is_array() && !prompt->empty()) {
    for (const json& p : *prompt) {
      if (p.is_string())
        r.prompts.push_back({p.get<std::string>(), {}, false});
      else if (ids_of(p)) {
        if (auto e = add_ids(p)) return *e;
      } else
        return bad_param("prompt", shape);
    }
  } else {
    return bad_param("prompt", shape);
  }
  f.integer("logprobs", 0, 20, r.logprobs);
  f.boolean("echo", r.echo);
  if (f.failed()) return f.failure();
  // OpenAI's answer would list the prompt's log-probs too, which the engine does not compute:
  // refused rather than answered with log-probs that skip the echoed text.
  if (r.echo && r.logprobs >= 0)
    return bad_param("echo",
                     "echo with logprobs asks for the prompt's log-probs, which this server does not "
                     "compute; ask for one or the other");
  if (r.options.max_tokens < 0) r.options.max_tokens = 16;  // the completions API's default
  return r;
}

}  // namespace troupe
