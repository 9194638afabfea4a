#include "gateway/chat_prompt.hpp"

namespace troupe {
namespace {

// `v` with every string in it, keys included, guarded.
jinja::value guarded(const jinja::value& v, const tokenizer& tok) {
  if (v.is_string()) return tok.guard(v.as_string());
  if (v.is_array()) {
    jinja::array out;
    out.reserve(v.as_array().size());
    for (const jinja::value& x : v.as_array()) out.push_back(guarded(x, tok));
    return out;
  }
  if (v.is_object()) {
    jinja::object out;
    for (const auto& [key, x] : v.as_object()) out.set(tok.guard(key), guarded(x, tok));
    return out;
  }
  return v;
}

}  // namespace

result<chat_prompt> render_chat_prompt(const chat_template& tmpl, const tokenizer& tok, const chat_request& request,
                                       bool special_tokens_in_content) {
  result<std::string> text = error{""};
  if (special_tokens_in_content) {
    text = tmpl.render(request.messages, request.tools, request.add_generation_prompt, request.template_kwargs);
  } else {
    jinja::object kwargs;
    for (const auto& [key, x] : request.template_kwargs) kwargs.set(key, guarded(x, tok));
    text =
        tmpl.render(guarded(request.messages, tok), guarded(request.tools, tok), request.add_generation_prompt, kwargs);
  }
  if (!text) return error{"the chat template refused the messages: " + text.err().message};
  auto ids = special_tokens_in_content ? tok.encode(*text) : tok.encode_guarded(*text);
  if (!ids) return ids.err();
  return chat_prompt{std::move(*text), std::move(*ids)};
}

}  // namespace troupe
