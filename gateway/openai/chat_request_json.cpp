#include "gateway/openai/chat_request_json.hpp"

#include <algorithm>
#include <optional>

#include "gateway/json_body.hpp"
#include "gateway/output_grammar_json.hpp"
#include "gateway/template_value.hpp"
#include "gateway/tool_parameter_type.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

// One message as templates expect it: text parts joined into one string, a null content
// (an assistant turn that only calls tools) as "", tool-call arguments given as a JSON
// string parsed into an object (templates iterate them), as vLLM does. A `developer`
// message (OpenAI's name for system instructions) is a system one, and an assistant's
// `reasoning` (vLLM's newer name) is the `reasoning_content` Qwen's templates read.
result<json, api_error> normalise_message(const json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return bad_param(where, where + " must be an object");
  if (!m.contains("role") || !m["role"].is_string())
    return bad_param(where + ".role", where + ".role must be a string");
  const std::string role = m["role"].get<std::string>();
  if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
    return bad_param(where + ".role", "unknown role \"" + role + "\" (system, developer, user, assistant or tool)");
  json out = m;
  if (role == "developer") out["role"] = "system";
  if (m.contains("reasoning") && !m["reasoning"].is_null()) {
    if (!m["reasoning"].is_string()) return bad_param(where + ".reasoning", where + ".reasoning must be a string");
    if (!m.contains("reasoning_content") || m["reasoning_content"].is_null()) out["reasoning_content"] = m["reasoning"];
    out.erase("reasoning");
  }
  const json content = m.value("content", json(nullptr));
  if (content.is_array()) {
    std::string text;
    for (const json& part : content) {
      if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
          !part["text"].is_string())
        return bad_param(where + ".content", "only text content parts are supported by this model");
      text += part["text"].get<std::string>();
    }
    out["content"] = text;
  } else if (content.is_null()) {
    if (role != "assistant") return bad_param(where + ".content", where + ".content is required");
    out["content"] = "";
  } else if (!content.is_string()) {
    return bad_param(where + ".content", where + ".content must be a string or a list of content parts");
  }
  if (m.contains("tool_calls")) {
    if (!m["tool_calls"].is_array()) return bad_param(where + ".tool_calls", where + ".tool_calls must be a list");
    for (json& call : out["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
          !call["function"].contains("name") || !call["function"]["name"].is_string())
        return bad_param(where + ".tool_calls", "each tool call needs function.name");
      json& args = call["function"]["arguments"];
      if (args.is_string()) {
        json parsed = json::parse(args.get<std::string>(), nullptr, false);
        if (!parsed.is_discarded() && parsed.is_object()) args = parsed;
      }
    }
  }
  return out;
}

result<std::vector<tool_spec>, api_error> parse_tools(const json& tools) {
  if (!tools.is_array()) return bad_param("tools", "tools must be a list");
  if (auto e = check_count(tools.size(), max_tools, "tools", "tools")) return *e;
  std::vector<tool_spec> specs;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const json& t = tools[i];
    if (!t.is_object() || (t.contains("type") && t["type"] != "function") || !t.contains("function") ||
        !t["function"].is_object() || !t["function"].contains("name") || !t["function"]["name"].is_string())
      return bad_param(where, where + " must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    tool_spec spec{t["function"]["name"].get<std::string>(), {}};
    const json params = t["function"].value("parameters", json::object());
    if (params.is_object() && params.contains("properties") && params["properties"].is_object())
      for (const auto& [name, schema] : params["properties"].items())
        spec.parameter_types[name] = declared_parameter_type(schema);
    specs.push_back(std::move(spec));
  }
  return specs;
}

// The function a tool_choice object names: OpenAI's {"type": "function", "function":
// {"name": N}}, the Responses API's {"type": "function", "name": N}, or a bare {"name": N};
// empty when it names none.
std::string named_choice(const json& c) {
  if (c.contains("type") && c["type"] != "function") return {};
  if (c.contains("function") && c["function"].is_object() && c["function"].contains("name") &&
      c["function"]["name"].is_string())
    return c["function"]["name"].get<std::string>();
  if (c.contains("name") && c["name"].is_string()) return c["name"].get<std::string>();
  return {};
}

// A mode named by a string, or by an object's type alone ({"type": "auto"}, as some
// clients and deployment scripts send it).
std::optional<tool_choice> choice_mode(const json& c) {
  const json& mode = c.is_object() && c.size() == 1 && c.contains("type") ? c["type"] : c;
  if (mode == "auto") return tool_choice::automatic;
  if (mode == "none") return tool_choice::none;
  if (mode == "required") return tool_choice::required;
  return std::nullopt;
}

// Sets r.choice and r.choice_name; an error when tool_choice is malformed.
std::optional<api_error> parse_tool_choice(const json& body, const std::vector<tool_spec>& tools, chat_request& r) {
  const json& c = body["tool_choice"];
  if (std::optional<tool_choice> mode = choice_mode(c)) {
    r.choice = *mode;
  } else if (c.is_object() && !named_choice(c).empty()) {
    r.choice = tool_choice::function;
    r.choice_name = named_choice(c);
    if (std::none_of(tools.begin(), tools.end(), [&](const tool_spec& t) { return t.name == r.choice_name; }))
      return bad_param("tool_choice",
                       "tool_choice names the function \"" + r.choice_name + "\", which is not in tools");
  } else {
    return bad_param("tool_choice",
                     "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": "
                     "{\"name\": ...}}");
  }
  if (r.choice == tool_choice::required && tools.empty())
    return bad_param("tool_choice", "tool_choice \"required\" needs tools");
  return std::nullopt;
}

}  // namespace

result<chat_request, api_error> parse_chat_request(std::string_view text, tool_call_format calls_format) {
  auto parsed = parse_json_object(text);
  if (!parsed) return parsed.err();
  return parse_chat_object(std::move(*parsed), calls_format);
}

result<chat_request, api_error> parse_chat_object(json body, tool_call_format calls_format) {
  auto options = parse_generation_options(body);
  if (!options) return options.err();
  chat_request r{std::move(*options), {}, {}, {}, tool_choice::automatic, {}, true, true, {}, -1};
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    return bad_param("messages", "messages must be a non-empty list");
  if (auto e = check_count(body["messages"].size(), max_messages, "messages", "messages")) return *e;
  json messages = json::array();
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    auto m = normalise_message(body["messages"][i], i);
    if (!m) return m.err();
    messages.push_back(std::move(*m));
  }
  r.messages = to_template_value(messages);
  std::vector<tool_spec> tools;
  if (body.contains("tools") && !body["tools"].is_null()) {
    auto parsed = parse_tools(body["tools"]);
    if (!parsed) return parsed.err();
    tools = std::move(*parsed);
    if (!tools.empty()) r.tools = to_template_value(body["tools"]);
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    if (auto e = parse_tool_choice(body, tools, r)) return *e;
  }
  r.tool_specs = std::make_shared<const std::vector<tool_spec>>(std::move(tools));
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean())
      return bad_param("parallel_tool_calls", "parallel_tool_calls must be true or false");
    r.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
  }
  // A forced call is the whole answer: it takes the place of any response_format.
  if (r.choice == tool_choice::required || r.choice == tool_choice::function) {
    auto calls = forced_tool_call_grammar(body["tools"], r.choice_name,
                                          r.choice == tool_choice::required && r.parallel_tool_calls, calls_format);
    if (!calls) return calls.err();
    r.options.output_grammar = std::move(*calls);
  }
  if (body.contains("logprobs") && !body["logprobs"].is_null()) {
    if (!body["logprobs"].is_boolean()) return bad_param("logprobs", "logprobs must be true or false");
    if (body["logprobs"].get<bool>()) r.top_logprobs = 0;
  }
  if (body.contains("top_logprobs") && !body["top_logprobs"].is_null()) {
    const auto t = exact_integer(body["top_logprobs"]);
    if (!t || *t < 0 || *t > 20) return bad_param("top_logprobs", "top_logprobs must be an integer from 0 to 20");
    if (r.top_logprobs < 0) return bad_param("top_logprobs", "top_logprobs needs logprobs set to true");
    r.top_logprobs = int(*t);
  }
  if (body.contains("add_generation_prompt")) {
    if (!body["add_generation_prompt"].is_boolean())
      return bad_param("add_generation_prompt", "add_generation_prompt must be true or false");
    r.add_generation_prompt = body["add_generation_prompt"].get<bool>();
  }
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    if (!body["chat_template_kwargs"].is_object())
      return bad_param("chat_template_kwargs", "chat_template_kwargs must be an object");
    for (const auto& [key, v] : body["chat_template_kwargs"].items()) r.template_kwargs.set(key, to_template_value(v));
  }
  return r;
}

}  // namespace troupe
