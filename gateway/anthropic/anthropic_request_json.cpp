#include "gateway/anthropic/anthropic_request_json.hpp"

#include <optional>
#include <string>

#include "gateway/json_body.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// The text of a string or of a list of text blocks.
result<std::string, api_error> block_text(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();
  if (!content.is_array()) return bad_param(where, where + " must be a string or a list of content blocks");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& b = content[i];
    const std::string type = string_field(b, "type");
    if (type != "text" || !b.contains("text") || !b["text"].is_string())
      return bad_param(at(where, i), "content blocks of type '" + type + "' are not supported here (text only)");
    text += b["text"].get<std::string>();
  }
  return text;
}

// One message of `messages` as chat messages appended to `out`: a user turn's tool_result
// blocks become tool messages ahead of its text; an assistant turn's tool_use blocks its
// tool calls and its thinking its reasoning.
std::optional<api_error> add_message(const json& m, const std::string& where, json& out) {
  if (!m.is_object()) return bad_param(where, where + " must be an object");
  const std::string role = string_field(m, "role");
  if (role != "user" && role != "assistant")
    return bad_param(where + ".role", "role must be \"user\" or \"assistant\"");
  const json content = m.value("content", json(nullptr));
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return std::nullopt;
  }
  if (!content.is_array())
    return bad_param(where + ".content", where + ".content must be a string or a list of content blocks");
  std::string text, thinking;
  json calls = json::array();
  int tool_results = 0;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& b = content[i];
    const std::string block = at(where + ".content", i);
    const std::string type = string_field(b, "type");
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string())
        return bad_param(block + ".text", block + ".text must be a string");
      text += b["text"].get<std::string>();
    } else if (type == "thinking" && role == "assistant") {
      thinking += string_field(b, "thinking");
    } else if (type == "redacted_thinking" && role == "assistant") {
      continue;
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string())
        return bad_param(block, block + " needs an id and a name");
      const json input = b.value("input", json::object());
      calls.push_back(
          {{"id", b["id"]}, {"type", "function"}, {"function", {{"name", b["name"]}, {"arguments", input.dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
        return bad_param(block + ".tool_use_id", block + ".tool_use_id must be a string");
      auto result_text = block_text(b.value("content", json(nullptr)), block + ".content");
      if (!result_text) return result_text.err();
      out.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", *result_text}});
      ++tool_results;
    } else {
      return bad_param(block + ".type", "content blocks of type '" + type + "' are not supported in " + role +
                                            " messages by this model");
    }
  }
  if (role == "user") {
    if (!text.empty() || tool_results == 0) out.push_back({{"role", "user"}, {"content", text}});
    return std::nullopt;
  }
  json a{{"role", "assistant"}, {"content", text}};
  if (!thinking.empty()) a["reasoning_content"] = thinking;
  if (!calls.empty()) a["tool_calls"] = calls;
  out.push_back(std::move(a));
  return std::nullopt;
}

result<json, api_error> chat_tools(const json& tools) {
  if (!tools.is_array()) return bad_param("tools", "tools must be a list");
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string where = at("tools", i);
    if (!t.is_object()) return bad_param(where, where + " must be an object");
    const std::string type = string_field(t, "type", "custom");
    if (type != "custom")
      return bad_param(where + ".type",
                       "tools of type '" + type + "' are not supported: troupe serves custom tools only");
    if (!t.contains("name") || !t["name"].is_string())
      return bad_param(where + ".name", where + ".name must be a string");
    json function{{"name", t["name"]}, {"parameters", t.value("input_schema", json{{"type", "object"}})}};
    if (t.contains("description")) function["description"] = t["description"];
    out.push_back({{"type", "function"}, {"function", function}});
  }
  return out;
}

}  // namespace

result<json, api_error> parse_anthropic_request(const json& body, bool count_tokens) {
  if (!body.contains("model") || !body["model"].is_string()) return bad_param("model", "model: Field required");
  json chat{{"model", body["model"]}};
  if (!count_tokens) {
    if (!body.contains("max_tokens")) return bad_param("max_tokens", "max_tokens: Field required");
    chat["max_tokens"] = body["max_tokens"];
  }
  json messages = json::array();
  if (body.contains("system") && !body["system"].is_null()) {
    auto system = block_text(body["system"], "system");
    if (!system) return system.err();
    messages.push_back({{"role", "system"}, {"content", *system}});
  }
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    return bad_param("messages", "messages must be a non-empty list");
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    if (auto e = add_message(body["messages"][i], at("messages", i), messages)) return *e;
  }
  chat["messages"] = std::move(messages);
  if (body.contains("tools") && !body["tools"].is_null()) {
    auto tools = chat_tools(body["tools"]);
    if (!tools) return tools.err();
    if (!tools->empty()) chat["tools"] = *tools;
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& c = body["tool_choice"];
    const std::string type = string_field(c, "type");
    if (type == "auto")
      chat["tool_choice"] = "auto";
    else if (type == "any")
      chat["tool_choice"] = "required";
    else if (type == "none")
      chat["tool_choice"] = "none";
    else if (type == "tool" && c.contains("name"))
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
    else
      return bad_param("tool_choice",
                       "tool_choice must be {\"type\": \"auto\"}, {\"type\": \"any\"}, {\"type\": \"tool\", "
                       "\"name\": ...} or {\"type\": \"none\"}");
    if (bool_field(c, "disable_parallel_tool_use", false)) chat["parallel_tool_calls"] = false;
  }
  if (body.contains("stop_sequences") && !body["stop_sequences"].is_null()) chat["stop"] = body["stop_sequences"];
  for (const char* key : {"temperature", "top_p", "top_k", "stream"}) {
    if (body.contains(key) && !body[key].is_null()) chat[key] = body[key];
  }
  const json metadata = body.value("metadata", json(nullptr));
  if (metadata.is_object() && metadata.contains("user_id") && metadata["user_id"].is_string())
    chat["user"] = metadata["user_id"];
  // thinking {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}: the chat
  // template's <think> block on or off. The budget is not counted apart from max_tokens.
  const json thinking = body.value("thinking", json(nullptr));
  if (thinking.is_object()) {
    const std::string type = string_field(thinking, "type");
    if (type != "enabled" && type != "disabled" && type != "adaptive")
      return bad_param("thinking.type", "thinking.type must be \"enabled\", \"adaptive\" or \"disabled\"");
    chat["chat_template_kwargs"] = {{"enable_thinking", type != "disabled"}};
  }
  return chat;
}

std::string anthropic_error_json(const api_error& e) {
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 403 ? "permission_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  json body{{"type", "error"}, {"error", {{"type", type}, {"message", e.message}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace troupe
