#pragma once
// A chat request's prompt: the chat template rendered over its messages, tools and
// chat_template_kwargs, and the prompt's ids. Special tokens are read only where the
// template wrote them: special-token text in the request's own strings (<|im_start|>system
// in a user's message) stays text, so a client cannot forge a turn of another role, unless
// `special_tokens_in_content` (the old behaviour, vLLM's too).
#include <string>
#include <vector>

#include "base/result.hpp"
#include "gateway/openai/chat_request_json.hpp"
#include "text/chat_template.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

struct chat_prompt {
  std::string text;  // as rendered, client strings guarded (tokenizer::guard) unless trusted
  std::vector<int> ids;
};

result<chat_prompt> render_chat_prompt(const chat_template& tmpl, const tokenizer& tok, const chat_request& request,
                                       bool special_tokens_in_content);

}  // namespace troupe
