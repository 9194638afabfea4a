#pragma once
// One accepted /v1/completions or /v1/chat/completions request while it runs: each choice's
// streamed detokenization, stop strings and log-probs (and for chat its reasoning and tool
// calls), rendered as OpenAI's SSE chunks or as the final JSON body.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/messages.hpp"
#include "gateway/api_error.hpp"
#include "gateway/openai/generation_request_json.hpp"
#include "gateway/reasoning_parser.hpp"
#include "gateway/reply_dialect.hpp"
#include "gateway/stop_matcher.hpp"
#include "gateway/tool_call_parser.hpp"
#include "text/tokenizer/incremental_detokenizer.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

enum class api_kind { completion, chat };

// How a chat reply's text splits into reasoning, answer and tool calls.
struct chat_reply_parsing {
  bool starts_in_reasoning = false;             // the prompt left a <think> block open
  std::optional<tool_call_format> tool_format;  // none: the answer is not searched for calls
  std::shared_ptr<const std::vector<tool_spec>> tools;
  // tool_choice required or named: the answer is calls alone, its content null; a call cut
  // short (max_tokens) is dropped, never shown as markup.
  bool forced_calls = false;
};

class generation_call {
 public:
  struct choice_prompt {
    std::vector<int> ids;
    std::string text;  // for echo
  };

  // dialect: a chat reply written for another API (reply_dialect.hpp); none: OpenAI's
  // chat completions or completions.
  generation_call(api_kind kind, std::string id, const generation_options& options, int logprobs, bool echo,
                  std::vector<choice_prompt> prompts, std::shared_ptr<const tokenizer> tok,
                  const chat_reply_parsing& parsing = {}, std::shared_ptr<reply_dialect> dialect = nullptr);

  // The first SSE chunk of a stream (chat: the assistant role), if the API has one.
  std::string stream_start() const;

  // Applies one engine event to choice `index`; returns the SSE text to send now (empty
  // when not streaming or nothing new). `cancel` turns true when a stop string ended the
  // choice here and the engine should stop generating for it.
  std::string on_event(int index, const token_event& event, bool& cancel);

  bool done() const { return finished_ == int(choices_.size()); }
  bool failed() const { return failure_.has_value(); }
  const api_error& failure() const { return *failure_; }

  // After done(): the stream's tail (usage chunk if asked, then [DONE]), or the whole
  // response body.
  std::string stream_end() const;
  std::string response_body() const;
  // An error after the stream began, as an SSE event followed by [DONE] (or the
  // dialect's last event).
  std::string stream_error(const api_error& e) const;
  // Ends every running choice where it stands (finish "cancelled"); the engine is told
  // by the caller.
  void cancel();
  // The first choice's reply, for a dialect and for what is stored of it.
  reply_summary summary() const;

  int prompt_tokens() const;
  int completion_tokens() const;

 private:
  struct logprob_entry {
    sampled_token token;
    std::string text;
    int offset = 0;  // where its text starts in the choice's text
  };
  struct reply_delta {
    std::string reasoning;
    std::string content;
    std::vector<tool_call> calls;
  };
  struct choice {
    choice_prompt prompt;
    incremental_detokenizer detokenizer;
    stop_matcher stops;
    std::string text;  // chat: the answer without reasoning and tool-call markup
    std::vector<logprob_entry> logprobs;
    int generated = 0;
    std::string finish;                          // "stop", "length", "tool_calls"; empty while running
    std::optional<reasoning_parser> reasoning;   // chat only
    std::optional<tool_call_parser> tool_calls;  // chat with tools only
    std::string reasoning_text;
    std::vector<tool_call> calls;
  };

  reply_delta split_reply(choice& c, const std::string& fresh, bool ended) const;
  std::string chunk(int index, const std::string& text, const std::vector<logprob_entry>& lps,
                    const std::string& finish) const;
  std::string chat_chunks(int index, const reply_delta& d, size_t first_call, const std::vector<logprob_entry>& lps,
                          const std::string& finish) const;
  std::string chat_chunk(int index, nlohmann::ordered_json delta, const std::vector<logprob_entry>& lps,
                         const std::string& finish) const;
  std::string token_label(int token) const;
  nlohmann::ordered_json logprobs_json(const std::vector<logprob_entry>& lps) const;

  api_kind kind_;
  std::string id_;
  int64_t created_;
  generation_options options_;
  int logprobs_;
  bool echo_;
  std::shared_ptr<const tokenizer> tokenizer_;
  bool forced_calls_ = false;  // chat_reply_parsing's
  std::vector<choice> choices_;
  int finished_ = 0;
  int cached_tokens_ = 0;
  std::optional<api_error> failure_;
  std::shared_ptr<reply_dialect> dialect_;
};

}  // namespace troupe
