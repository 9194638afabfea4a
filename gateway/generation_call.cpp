#include "gateway/generation_call.hpp"

#include <nlohmann/json.hpp>

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }
json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

std::vector<int> bytes_of(const std::string& s) {
  std::vector<int> out;
  for (unsigned char ch : s) out.push_back(ch);
  return out;
}

}  // namespace

generation_call::generation_call(api_kind kind, std::string id, const generation_options& options,
                                 int logprobs, bool echo, std::vector<choice_prompt> prompts,
                                 std::shared_ptr<const tokenizer> tok)
    : kind_(kind), id_(std::move(id)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      options_(options), logprobs_(logprobs), echo_(echo), tokenizer_(std::move(tok)) {
  for (auto& p : prompts)
    choices_.push_back({std::move(p), incremental_detokenizer(*tokenizer_, options_.skip_special_tokens),
                        stop_matcher(options_.stop), {}, {}, 0, {}});
  if (echo_)
    for (auto& c : choices_) c.text = c.prompt.text.empty() ? tokenizer_->decode(c.prompt.ids) : c.prompt.text;
}

std::string generation_call::token_label(int token) const {
  if (options_.return_tokens_as_token_ids) return "token_id:" + std::to_string(token);
  return std::string(tokenizer_->token_bytes(token, false));
}

std::string generation_call::stream_start() const {
  if (kind_ != api_kind::chat) return {};
  std::string out;
  for (size_t i = 0; i < choices_.size(); ++i)
    out += sse({{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", options_.model},
                {"choices", json::array({{{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                          {"logprobs", nullptr}, {"finish_reason", nullptr}}})}});
  return out;
}

std::string generation_call::on_event(int index, const token_event& ev, bool& cancel) {
  choice& c = choices_[size_t(index)];
  cancel = false;
  if (!c.finish.empty()) return {};
  cached_tokens_ = std::max(cached_tokens_, ev.cached_prompt_tokens);
  if (ev.finish == uint8_t(finish_reason::error)) {
    failure_ = api_error{500, ev.error_message, "internal_server_error", {}, {}};
    c.finish = "error";
    ++finished_;
    return {};
  }
  std::string fresh;
  std::vector<logprob_entry> fresh_lps;
  const bool stopped_by_token = ev.finish == uint8_t(finish_reason::stop);
  for (size_t i = 0; i < ev.tokens.size(); ++i) {
    const sampled_token& t = ev.tokens[i];
    ++c.generated;
    // A stop token (eos or a stop_token_id) ends the text; it is counted, not shown.
    if (stopped_by_token && i + 1 == ev.tokens.size()) break;
    if (logprobs_ >= 0) fresh_lps.push_back({t, token_label(t.token), int(c.text.size() + fresh.size())});
    fresh += c.stops.push(c.detokenizer.push(t.token));
    if (c.stops.stopped()) {
      c.finish = "stop";
      cancel = ev.finish == uint8_t(finish_reason::none);
      break;
    }
  }
  if (c.finish.empty() && ev.finish != uint8_t(finish_reason::none)) {
    fresh += c.stops.push(c.detokenizer.flush());
    fresh += c.stops.flush();
    c.finish = ev.finish == uint8_t(finish_reason::length) ? "length" : "stop";
  }
  c.text += fresh;
  c.logprobs.insert(c.logprobs.end(), fresh_lps.begin(), fresh_lps.end());
  if (!c.finish.empty()) ++finished_;
  if (!options_.stream || (fresh.empty() && c.finish.empty())) return {};
  return chunk(index, fresh, fresh_lps, c.finish);
}

nlohmann::ordered_json generation_call::logprobs_json(const std::vector<logprob_entry>& lps) const {
  if (logprobs_ < 0) return nullptr;
  if (kind_ == api_kind::chat) {
    json content = json::array();
    for (const auto& e : lps) {
      json top = json::array();
      for (const auto& t : e.token.top) {
        const std::string label = token_label(t.token);
        top.push_back({{"token", label}, {"logprob", t.logprob}, {"bytes", bytes_of(label)}});
      }
      content.push_back({{"token", e.text}, {"logprob", e.token.logprob}, {"bytes", bytes_of(e.text)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& e : lps) {
    tokens.push_back(e.text);
    values.push_back(e.token.logprob);
    json top = json::object();
    for (const auto& t : e.token.top) top[token_label(t.token)] = t.logprob;
    tops.push_back(top);
    offsets.push_back(e.offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

std::string generation_call::chunk(int index, const std::string& text, const std::vector<logprob_entry>& lps,
                                   const std::string& finish) const {
  json lp = lps.empty() ? json(nullptr) : logprobs_json(lps);
  if (kind_ == api_kind::chat) {
    json delta = text.empty() ? json::object() : json{{"content", text}};
    return sse({{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", options_.model},
                {"choices", json::array({{{"index", index}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", or_null(finish)}}})}});
  }
  return sse({{"id", id_}, {"object", "text_completion"}, {"created", created_}, {"model", options_.model},
              {"choices", json::array({{{"index", index}, {"text", text}, {"logprobs", lp}, {"finish_reason", or_null(finish)}}})}});
}

int generation_call::prompt_tokens() const {
  // n choices of one prompt count it once, as OpenAI does.
  int total = 0;
  const size_t n = size_t(std::max(1, options_.n));
  for (size_t i = 0; i < choices_.size(); i += n) total += int(choices_[i].prompt.ids.size());
  return total;
}

int generation_call::completion_tokens() const {
  int total = 0;
  for (const auto& c : choices_) total += c.generated;
  return total;
}

static json usage_json(int prompt, int completion, int cached) {
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string generation_call::stream_end() const {
  std::string out;
  if (options_.include_usage)
    out += sse({{"id", id_}, {"object", kind_ == api_kind::chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created_}, {"model", options_.model}, {"choices", json::array()},
                {"usage", usage_json(prompt_tokens(), completion_tokens(), cached_tokens_)}});
  return out + "data: [DONE]\n\n";
}

std::string generation_call::stream_error(const api_error& e) {
  return "data: " + e.to_json() + "\n\ndata: [DONE]\n\n";
}

std::string generation_call::response_body() const {
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const choice& c = choices_[i];
    json ch{{"index", i}};
    if (kind_ == api_kind::chat) ch["message"] = {{"role", "assistant"}, {"content", c.text}};
    else ch["text"] = c.text;
    ch["logprobs"] = logprobs_json(c.logprobs);
    ch["finish_reason"] = or_null(c.finish);
    choices.push_back(ch);
  }
  return dump({{"id", id_}, {"object", kind_ == api_kind::chat ? "chat.completion" : "text_completion"},
               {"created", created_}, {"model", options_.model}, {"choices", choices},
               {"usage", usage_json(prompt_tokens(), completion_tokens(), cached_tokens_)}});
}

}  // namespace troupe
