#include "gateway/generation_call.hpp"

#include <nlohmann/json.hpp>

#include "gateway/http/response_format.hpp"

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

// As OpenAI: content is null when the reply only calls tools, as it must under a forced
// tool_choice. The reasoning goes under both names vLLM has used (`reasoning` since 2026):
// clients read either.
json message_json(const std::string& content, const std::string& reasoning, const std::vector<tool_call>& calls,
                  bool forced_calls) {
  const bool null_content = content.empty() && (forced_calls || !calls.empty());
  json m{{"role", "assistant"}, {"content", null_content ? json(nullptr) : json(content)}};
  if (!reasoning.empty()) m["reasoning"] = m["reasoning_content"] = reasoning;
  if (calls.empty()) return m;
  json list = json::array();
  for (const tool_call& call : calls)
    list.push_back(
        {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  m["tool_calls"] = std::move(list);
  return m;
}

}  // namespace

generation_call::generation_call(api_kind kind, std::string id, const generation_options& options, int logprobs,
                                 bool echo, std::vector<choice_prompt> prompts, std::shared_ptr<const tokenizer> tok,
                                 const chat_reply_parsing& parsing, std::shared_ptr<reply_dialect> dialect)
    : kind_(kind),
      id_(std::move(id)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      options_(options),
      logprobs_(logprobs),
      echo_(echo),
      tokenizer_(std::move(tok)),
      forced_calls_(parsing.forced_calls),
      dialect_(std::move(dialect)) {
  for (auto& p : prompts) {
    choices_.push_back({std::move(p),
                        incremental_detokenizer(*tokenizer_, options_.skip_special_tokens),
                        stop_matcher(options_.stop),
                        {},
                        {},
                        0,
                        {},
                        {},
                        {},
                        {},
                        {}});
    if (kind_ != api_kind::chat) continue;
    choices_.back().reasoning.emplace(parsing.starts_in_reasoning);
    if (parsing.tool_format) choices_.back().tool_calls.emplace(*parsing.tool_format, parsing.tools);
  }
  if (echo_)
    for (auto& c : choices_) c.text = c.prompt.text.empty() ? tokenizer_->decode(c.prompt.ids) : c.prompt.text;
}

std::string generation_call::token_label(int token) const {
  if (options_.return_tokens_as_token_ids) return "token_id:" + std::to_string(token);
  return std::string(tokenizer_->token_bytes(token, false));
}

std::string generation_call::stream_start() const {
  if (dialect_) return dialect_->stream_start();
  if (kind_ != api_kind::chat) return {};
  std::string out;
  for (size_t i = 0; i < choices_.size(); ++i)
    out += sse({{"id", id_},
                {"object", "chat.completion.chunk"},
                {"created", created_},
                {"model", options_.model},
                {"choices", json::array({{{"index", i},
                                          {"delta", {{"role", "assistant"}, {"content", ""}}},
                                          {"logprobs", nullptr},
                                          {"finish_reason", nullptr}}})}});
  return out;
}

std::string generation_call::on_event(int index, const token_event& ev, bool& cancel) {
  choice& c = choices_[size_t(index)];
  cancel = false;
  if (!c.finish.empty()) return {};
  cached_tokens_ = std::max(cached_tokens_, ev.cached_prompt_tokens);
  if (ev.finish == uint8_t(finish_reason::error)) {
    failure_ = internal_error(ev.error_message);
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
  c.logprobs.insert(c.logprobs.end(), fresh_lps.begin(), fresh_lps.end());
  if (!c.finish.empty()) ++finished_;
  if (kind_ != api_kind::chat) {
    c.text += fresh;
    if (!options_.stream || (fresh.empty() && c.finish.empty())) return {};
    return chunk(index, fresh, fresh_lps, c.finish);
  }
  reply_delta d = split_reply(c, fresh, !c.finish.empty());
  const size_t first_call = c.calls.size();
  c.reasoning_text += d.reasoning;
  c.text += d.content;
  c.calls.insert(c.calls.end(), d.calls.begin(), d.calls.end());
  // A reply that ended on its own after calling tools waits for their results.
  if (c.finish == "stop" && !c.calls.empty()) c.finish = "tool_calls";
  if (!options_.stream) return {};
  if (dialect_) return dialect_->stream_delta(d.reasoning, d.content, d.calls);
  return chat_chunks(index, d, first_call, fresh_lps, c.finish);
}

generation_call::reply_delta generation_call::split_reply(choice& c, const std::string& fresh, bool ended) const {
  reasoning_parser::output r = c.reasoning->push(fresh);
  if (ended) {
    reasoning_parser::output tail = c.reasoning->flush();
    r.reasoning += tail.reasoning;
    r.content += tail.content;
  }
  reply_delta d{std::move(r.reasoning), std::move(r.content), {}};
  if (!c.tool_calls) return d;
  tool_call_parser::output t = c.tool_calls->push(d.content);
  if (ended) {
    tool_call_parser::output tail = c.tool_calls->flush();
    t.content += tail.content;
    t.calls.insert(t.calls.end(), tail.calls.begin(), tail.calls.end());
  }
  // The grammar let only calls through: what is left is a call cut short.
  d.content = forced_calls_ ? std::string() : std::move(t.content);
  d.calls = std::move(t.calls);
  return d;
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
      content.push_back(
          {{"token", e.text}, {"logprob", e.token.logprob}, {"bytes", bytes_of(e.text)}, {"top_logprobs", top}});
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
  return sse(
      {{"id", id_},
       {"object", "text_completion"},
       {"created", created_},
       {"model", options_.model},
       {"choices",
        json::array({{{"index", index}, {"text", text}, {"logprobs", lp}, {"finish_reason", or_null(finish)}}})}});
}

std::string generation_call::chat_chunk(int index, json delta, const std::vector<logprob_entry>& lps,
                                        const std::string& finish) const {
  json lp = lps.empty() ? json(nullptr) : logprobs_json(lps);
  return sse(
      {{"id", id_},
       {"object", "chat.completion.chunk"},
       {"created", created_},
       {"model", options_.model},
       {"choices",
        json::array(
            {{{"index", index}, {"delta", std::move(delta)}, {"logprobs", lp}, {"finish_reason", or_null(finish)}}})}});
}

// Text first, then each call as OpenAI streams it: a delta naming the call, then its
// arguments; log-probs ride on the first chunk and the finish reason on the last.
std::string generation_call::chat_chunks(int index, const reply_delta& d, size_t first_call,
                                         const std::vector<logprob_entry>& lps, const std::string& finish) const {
  std::vector<json> deltas;
  if (!d.reasoning.empty() || !d.content.empty() || !lps.empty()) {
    json text = json::object();
    if (!d.reasoning.empty()) text["reasoning"] = text["reasoning_content"] = d.reasoning;
    if (!d.content.empty()) text["content"] = d.content;
    deltas.push_back(std::move(text));
  }
  for (size_t i = 0; i < d.calls.size(); ++i) {
    const tool_call& call = d.calls[i];
    const size_t at = first_call + i;
    deltas.push_back({{"tool_calls", json::array({{{"index", at},
                                                   {"id", call.id},
                                                   {"type", "function"},
                                                   {"function", {{"name", call.name}, {"arguments", ""}}}}})}});
    deltas.push_back({{"tool_calls", json::array({{{"index", at}, {"function", {{"arguments", call.arguments}}}}})}});
  }
  if (deltas.empty() && !finish.empty()) deltas.push_back(json::object());
  std::string out;
  for (size_t i = 0; i < deltas.size(); ++i)
    out += chat_chunk(index, std::move(deltas[i]), i == 0 ? lps : std::vector<logprob_entry>{},
                      i + 1 == deltas.size() ? finish : std::string());
  return out;
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
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string generation_call::stream_end() const {
  if (dialect_) return dialect_->stream_end(summary());
  std::string out;
  if (options_.include_usage)
    out += sse({{"id", id_},
                {"object", kind_ == api_kind::chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created_},
                {"model", options_.model},
                {"choices", json::array()},
                {"usage", usage_json(prompt_tokens(), completion_tokens(), cached_tokens_)}});
  return out + "data: [DONE]\n\n";
}

std::string generation_call::stream_error(const api_error& e) const {
  if (dialect_) return dialect_->stream_error(e);
  return http::sse_error_end(e.to_json());
}

void generation_call::cancel() {
  for (choice& c : choices_) {
    if (!c.finish.empty()) continue;
    c.finish = "cancelled";
    ++finished_;
  }
}

reply_summary generation_call::summary() const {
  const choice& c = choices_.front();
  return {c.reasoning_text,    c.text,        c.calls, c.finish, c.stops.matched(), prompt_tokens(),
          completion_tokens(), cached_tokens_};
}

std::string generation_call::response_body() const {
  if (dialect_) return dialect_->body(summary());
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const choice& c = choices_[i];
    json ch{{"index", i}};
    if (kind_ == api_kind::chat)
      ch["message"] = message_json(c.text, c.reasoning_text, c.calls, forced_calls_);
    else
      ch["text"] = c.text;
    ch["logprobs"] = logprobs_json(c.logprobs);
    ch["finish_reason"] = or_null(c.finish);
    choices.push_back(ch);
  }
  return dump({{"id", id_},
               {"object", kind_ == api_kind::chat ? "chat.completion" : "text_completion"},
               {"created", created_},
               {"model", options_.model},
               {"choices", choices},
               {"usage", usage_json(prompt_tokens(), completion_tokens(), cached_tokens_)}});
}

}  // namespace troupe
