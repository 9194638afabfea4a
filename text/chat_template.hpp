#pragma once
// A model's chat template: the Jinja `chat_template` of its tokenizer_config.json (or the
// chat_template.jinja beside it), rendered as transformers' apply_chat_template renders
// it. Loading parses and checks the template once; rendering a chat takes microseconds.
//
//   auto t = chat_template::load(dir / "tokenizer_config.json");
//   jinja::array messages{jinja::object{{"role", "user"}, {"content", "Hi"}}};
//   auto prompt = t->render(messages, jinja::value(), true, {{"enable_thinking", false}});
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/program.hpp"
#include "text/jinja/value.hpp"

namespace troupe {

class chat_template {
 public:
  // Reads chat_template, bos_token and eos_token. A chat_template given as a list of
  // named templates uses "default", and "tool_use" when a request has tools.
  static result<chat_template> load(const std::filesystem::path& tokenizer_config_json);
  // A template from source, with the special tokens the template sees (none: undefined).
  static result<chat_template> from_source(std::string_view source, std::optional<std::string> bos_token,
                                           std::optional<std::string> eos_token);

  // messages: an array of message objects. tools: an array, or undefined / none for a
  // request without tools (the template sees none, as in transformers). extra_kwargs:
  // further template variables such as enable_thinking; they may override bos_token and
  // eos_token but not messages, tools, documents or add_generation_prompt.
  result<std::string> render(const jinja::value& messages, const jinja::value& tools, bool add_generation_prompt,
                             const jinja::object& extra_kwargs = {}) const;

  // The source of the template that renders requests with tools: it shows the tool-call
  // markup the model was taught.
  const std::string& tools_source() const { return tools_source_; }

 private:
  chat_template(jinja::program main, std::optional<jinja::program> tool_use, std::optional<std::string> bos,
                std::optional<std::string> eos, std::string tools_source)
      : main_(std::move(main)),
        tool_use_(std::move(tool_use)),
        bos_(std::move(bos)),
        eos_(std::move(eos)),
        tools_source_(std::move(tools_source)) {}

  jinja::program main_;
  std::optional<jinja::program> tool_use_;
  std::optional<std::string> bos_;
  std::optional<std::string> eos_;
  std::string tools_source_;
};

}  // namespace troupe
