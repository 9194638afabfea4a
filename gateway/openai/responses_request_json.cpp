#include "gateway/openai/responses_request_json.hpp"

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "gateway/json_body.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

// Request fields that ask for what troupe does not do: a 400 rather than silently less.
const std::set<std::string> refused_fields = {"background", "conversation", "prompt"};

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// The text of a content list of input_text / output_text parts, or a string.
result<std::string, api_error> text_of(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return bad_param(where, where + " must be a string or a list of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string type = string_field(part, "type");
    if (type == "input_text" || type == "output_text" || type == "text" || type == "summary_text" ||
        type == "reasoning_text") {
      if (!part.contains("text") || !part["text"].is_string())
        return bad_param(at(where, i), at(where, i) + ".text must be a string");
      text += part["text"].get<std::string>();
    } else if (type == "refusal") {
      text += string_field(part, "refusal");
    } else {
      return bad_param(at(where, i) + ".type",
                       "content of type '" + type + "' is not supported by this model (text only)");
    }
  }
  return text;
}

// The input items as chat messages appended to `messages`.
std::optional<api_error> add_items(const json& input, json& messages) {
  std::string pending_reasoning;  // a reasoning item goes with the assistant turn after it
  auto assistant = [&]() -> json& {
    if (messages.empty() || messages.back()["role"] != "assistant" || !pending_reasoning.empty()) {
      json m{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array()}};
      if (!pending_reasoning.empty()) m["reasoning_content"] = std::exchange(pending_reasoning, {});
      messages.push_back(std::move(m));
    }
    if (!messages.back().contains("tool_calls")) messages.back()["tool_calls"] = json::array();
    return messages.back();
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string where = at("input", i);
    if (!item.is_object()) return bad_param(where, where + " must be an object");
    if (item.contains("type") && !item["type"].is_string())
      return bad_param(where + ".type", where + ".type must be a string");
    const std::string type = string_field(item, "type", item.contains("role") ? "message" : "");
    if (type == "message") {
      const std::string role = string_field(item, "role");
      if (role != "user" && role != "system" && role != "developer" && role != "assistant")
        return bad_param(where + ".role", "unknown role \"" + role + "\" (user, system, developer or assistant)");
      auto text = text_of(item.value("content", json(nullptr)), where + ".content");
      if (!text) return text.err();
      json m{{"role", role == "developer" ? "system" : role}, {"content", *text}};
      if (role == "assistant" && !pending_reasoning.empty())
        m["reasoning_content"] = std::exchange(pending_reasoning, {});
      messages.push_back(std::move(m));
    } else if (type == "function_call") {
      for (const char* key : {"call_id", "name", "arguments"}) {
        if (!item.contains(key) || !item[key].is_string())
          return bad_param(where + "." + key, where + "." + key + " must be a string");
      }
      assistant()["tool_calls"].push_back({{"id", item["call_id"]},
                                           {"type", "function"},
                                           {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
    } else if (type == "function_call_output") {
      if (!item.contains("call_id") || !item["call_id"].is_string())
        return bad_param(where + ".call_id", where + ".call_id must be a string");
      auto output = text_of(item.value("output", json(nullptr)), where + ".output");
      if (!output) return output.err();
      messages.push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", *output}});
    } else if (type == "reasoning") {
      const json& parts = item.contains("content") && item["content"].is_array() ? item["content"]
                                                                                 : item.value("summary", json::array());
      auto text = text_of(parts, where + ".content");
      if (!text) return text.err();
      pending_reasoning += *text;
    } else {
      return bad_param(where + ".type", "input items of type '" + type +
                                            "' are not supported (message, function_call, "
                                            "function_call_output, reasoning)");
    }
  }
  return std::nullopt;
}

// Function tools as chat tools; a built-in tool is named in the error.
result<json, api_error> chat_tools(const json& tools) {
  if (!tools.is_array()) return bad_param("tools", "tools must be a list");
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string type = string_field(t, "type");
    if (type != "function")
      return bad_param(at("tools", i) + ".type",
                       "tools of type '" + type + "' are not supported: troupe serves function tools only");
    if (!t.contains("name") || !t["name"].is_string())
      return bad_param(at("tools", i) + ".name", at("tools", i) + ".name must be a string");
    json function{{"name", t["name"]}};
    for (const char* key : {"description", "parameters", "strict"}) {
      if (t.contains(key) && !t[key].is_null()) function[key] = t[key];
    }
    out.push_back({{"type", "function"}, {"function", function}});
  }
  return out;
}

result<json, api_error> chat_tool_choice(const json& choice) {
  if (choice.is_string()) return choice;
  if (choice.is_object() && string_field(choice, "type") == "function" && choice.contains("name"))
    return json{{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  const std::string type = string_field(choice, "type");
  return bad_param("tool_choice", "tool_choice of type '" + type +
                                      "' is not supported (\"auto\", \"none\", \"required\" or "
                                      "{\"type\": \"function\", \"name\": ...})");
}

result<json, api_error> chat_response_format(const json& text) {
  if (!text.is_object()) return bad_param("text", "text must be an object");
  if (!text.contains("format")) return json(nullptr);
  const json& f = text["format"];
  const std::string type = string_field(f, "type");
  if (type == "text" || type == "json_object") return json{{"type", type}};
  if (type != "json_schema")
    return bad_param("text.format", "text.format.type must be \"text\", \"json_object\" or \"json_schema\"");
  json schema{{"name", string_field(f, "name", "response")}, {"schema", f.value("schema", json::object())}};
  if (f.contains("strict")) schema["strict"] = f["strict"];
  return json{{"type", "json_schema"}, {"json_schema", schema}};
}

}  // namespace

std::string previous_response_id(const json& body) {
  const json id = body.value("previous_response_id", json(nullptr));
  return id.is_string() ? id.get<std::string>() : std::string();
}

result<responses_request, api_error> parse_responses_request(const json& body, const json* previous) {
  for (const auto& field : refused_fields) {
    const json v = body.value(field, json(nullptr));
    if (!v.is_null() && v != json(false)) return bad_param(field, "'" + field + "' is not supported by this server");
  }
  responses_request r;
  if (!body.contains("model") || !body["model"].is_string()) return bad_param("model", "model must be a string");
  if (!body.contains("input")) return bad_param("input", "input is required");
  r.conversation = previous ? *previous : json::array();
  const json& input = body["input"];
  if (input.is_string()) {
    r.conversation.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    if (auto e = add_items(input, r.conversation)) return *e;
  } else {
    return bad_param("input", "input must be a string or a list of items");
  }
  if (r.conversation.empty()) return bad_param("input", "input must not be empty");
  json& chat = r.chat_body;
  chat = json{{"model", body["model"]}};
  json messages = json::array();
  const json instructions = body.value("instructions", json(nullptr));
  if (!instructions.is_null()) {
    if (!instructions.is_string()) return bad_param("instructions", "instructions must be a string");
    messages.push_back({{"role", "system"}, {"content", instructions}});
  }
  for (const json& m : r.conversation) messages.push_back(m);
  chat["messages"] = std::move(messages);
  if (body.contains("tools") && !body["tools"].is_null()) {
    auto tools = chat_tools(body["tools"]);
    if (!tools) return tools.err();
    if (!tools->empty()) chat["tools"] = *tools;
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    auto choice = chat_tool_choice(body["tool_choice"]);
    if (!choice) return choice.err();
    chat["tool_choice"] = *choice;
  }
  if (body.contains("text") && !body["text"].is_null()) {
    auto format = chat_response_format(body["text"]);
    if (!format) return format.err();
    if (!format->is_null()) chat["response_format"] = *format;
  }
  if (body.contains("max_output_tokens") && !body["max_output_tokens"].is_null())
    chat["max_tokens"] = body["max_output_tokens"];
  for (const char* key : {"temperature", "top_p", "top_k", "seed", "user", "parallel_tool_calls", "stream",
                          "ignore_eos", "presence_penalty", "frequency_penalty", "stop"}) {
    if (body.contains(key) && !body[key].is_null()) chat[key] = body[key];
  }
  // reasoning.effort "none" turns the model's thinking off; other efforts keep the default.
  const json reasoning = body.value("reasoning", json(nullptr));
  if (reasoning.is_object() && reasoning.value("effort", json(nullptr)) == json("none"))
    chat["chat_template_kwargs"] = {{"enable_thinking", false}};
  const json store = body.value("store", json(true));
  if (!store.is_boolean()) return bad_param("store", "store must be true or false");
  r.store = store.get<bool>();
  const json metadata = body.value("metadata", json::object());
  if (!metadata.is_object() && !metadata.is_null()) return bad_param("metadata", "metadata must be an object");
  r.echo = {
      {"instructions", instructions},
      {"max_output_tokens", body.value("max_output_tokens", json(nullptr))},
      {"metadata", metadata.is_null() ? json::object() : metadata},
      {"parallel_tool_calls", body.value("parallel_tool_calls", json(true))},
      {"previous_response_id", body.value("previous_response_id", json(nullptr))},
      {"reasoning",
       {{"effort", reasoning.is_object() ? reasoning.value("effort", json(nullptr)) : json(nullptr)},
        {"summary", nullptr}}},
      {"store", r.store},
      {"temperature", body.value("temperature", json(1.0))},
      {"text", body.contains("text") && body["text"].is_object() ? body["text"] : json{{"format", {{"type", "text"}}}}},
      {"tool_choice", body.value("tool_choice", json("auto"))},
      {"tools", body.value("tools", json::array())},
      {"top_p", body.value("top_p", json(1.0))},
      {"truncation", body.value("truncation", json("disabled"))},
      {"user", body.value("user", json(nullptr))}};
  return r;
}

}  // namespace troupe
