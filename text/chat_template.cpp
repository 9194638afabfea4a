#include "text/chat_template.hpp"

#include <nlohmann/json.hpp>

#include "base/read_file.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// A special token is written as a string or as an AddedToken object with "content".
std::optional<std::string> special_token(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& t = config[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  return std::nullopt;
}

result<jinja::program> compile(std::string_view source, const std::string& where) {
  result<jinja::program> p = jinja::program::compile(source);
  if (!p) return error{where + ": " + p.err().message};
  return p;
}

}  // namespace

result<chat_template> chat_template::load(const std::filesystem::path& tokenizer_config_json) {
  result<std::string> text = read_text_file(tokenizer_config_json);
  if (!text) return text.err();
  const std::string name = tokenizer_config_json.string();
  const json config = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return error{name + ": not a JSON object"};
  const std::optional<std::string> bos = special_token(config, "bos_token");
  const std::optional<std::string> eos = special_token(config, "eos_token");

  const json* source = config.contains("chat_template") ? &config["chat_template"] : nullptr;
  if (!source) {
    // Newer checkpoints keep the template in its own file.
    const std::filesystem::path file = tokenizer_config_json.parent_path() / "chat_template.jinja";
    result<std::string> jinja_text = read_text_file(file);
    if (!jinja_text) return error{name + ": no chat_template, and " + jinja_text.err().message};
    result<jinja::program> p = compile(*jinja_text, file.string());
    if (!p) return p.err();
    return chat_template(std::move(p).value(), std::nullopt, bos, eos, *jinja_text);
  }
  if (source->is_string()) {
    result<jinja::program> p = compile(source->get<std::string>(), name + ": chat_template");
    if (!p) return p.err();
    return chat_template(std::move(p).value(), std::nullopt, bos, eos, source->get<std::string>());
  }
  std::optional<jinja::program> main, tool_use;
  std::string main_source, tool_use_source;
  if (source->is_array()) {
    for (const json& named : *source) {
      if (!named.is_object() || !named.contains("name") || !named.contains("template") || !named["name"].is_string() ||
          !named["template"].is_string())
        return error{name + ": chat_template list entries need a \"name\" and a \"template\""};
      const std::string template_name = named["name"].get<std::string>();
      if (template_name != "default" && template_name != "tool_use") continue;
      result<jinja::program> p =
          compile(named["template"].get<std::string>(), name + ": chat_template " + template_name);
      if (!p) return p.err();
      (template_name == "default" ? main : tool_use) = std::move(p).value();
      (template_name == "default" ? main_source : tool_use_source) = named["template"].get<std::string>();
    }
  }
  if (!main) return error{name + ": chat_template must be a string or a list with a \"default\" template"};
  const bool has_tool_use = tool_use.has_value();
  return chat_template(std::move(*main), std::move(tool_use), bos, eos, has_tool_use ? tool_use_source : main_source);
}

result<chat_template> chat_template::from_source(std::string_view source, std::optional<std::string> bos_token,
                                                 std::optional<std::string> eos_token) {
  result<jinja::program> p = jinja::program::compile(source);
  if (!p) return p.err();
  return chat_template(std::move(p).value(), std::nullopt, std::move(bos_token), std::move(eos_token),
                       std::string(source));
}

result<std::string> chat_template::render(const jinja::value& messages, const jinja::value& tools,
                                          bool add_generation_prompt, const jinja::object& extra_kwargs) const {
  if (!messages.is_array()) return error{"chat template: messages must be an array"};
  const bool has_tools = !tools.is_undefined() && !tools.is_none();
  jinja::object variables{{"messages", messages},
                          {"tools", has_tools ? tools : jinja::value(nullptr)},
                          {"documents", nullptr},
                          {"add_generation_prompt", add_generation_prompt}};
  if (bos_) variables.set("bos_token", *bos_);
  if (eos_) variables.set("eos_token", *eos_);
  for (const auto& [key, v] : extra_kwargs) {
    if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt")
      return error{"chat template: extra argument \"" + key + "\" would replace a standard one"};
    variables.set(key, v);
  }
  const jinja::program& program = has_tools && tool_use_ ? *tool_use_ : main_;
  return program.render(variables);
}

}  // namespace troupe
