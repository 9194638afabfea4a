#include "gateway/tool_call_markup.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "gateway/streamed_text.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

bool take(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Up to `end`, consuming it; nothing when `end` does not come.
std::optional<std::string_view> take_until(std::string_view& s, std::string_view end) {
  const size_t at = s.find(end);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view head = s.substr(0, at);
  s.remove_prefix(at + end.size());
  return head;
}

const tool_spec* find_tool(const std::vector<tool_spec>& tools, std::string_view name) {
  auto it = std::find_if(tools.begin(), tools.end(), [&](const tool_spec& t) { return t.name == name; });
  return it == tools.end() ? nullptr : &*it;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

// A parameter value as the JSON type its schema declares; what does not convert stays a
// string, so a sloppy value never loses the call.
json convert_value(const std::string& value, const std::string& declared) {
  const std::string type = lower(declared);
  if (lower(value) == "null") return nullptr;
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" || type == "enum")
    return value;
  const json parsed = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (type.starts_with("int") || type.starts_with("uint") || type == "long" || type == "short" || type == "unsigned")
    return !parsed.is_discarded() && parsed.is_number_integer() ? parsed : json(value);
  if (type.starts_with("num") || type.starts_with("float") || type == "double")
    return !parsed.is_discarded() && parsed.is_number() ? parsed : json(value);
  if (type == "boolean" || type == "bool" || type == "binary")
    return !parsed.is_discarded() && parsed.is_boolean() ? parsed : json(value);
  return parsed.is_discarded() ? json(value) : parsed;
}

std::optional<tool_call> read_hermes(std::string_view body, const std::vector<tool_spec>& tools) {
  const json j = json::parse(trim(body), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const std::string name = j["name"].get<std::string>();
  if (!find_tool(tools, name)) return std::nullopt;
  json args = j.value("arguments", json::object());
  if (args.is_string()) args = json::parse(args.get<std::string>(), nullptr, false);
  if (args.is_discarded() || !args.is_object()) return std::nullopt;
  return tool_call{{}, name, dump(args)};
}

std::optional<tool_call> read_xml(std::string_view body, const std::vector<tool_spec>& tools) {
  std::string_view s = trim(body);
  if (!take(s, "<function=")) return std::nullopt;
  const auto name = take_until(s, ">");
  if (!name) return std::nullopt;
  const tool_spec* spec = find_tool(tools, trim(*name));
  if (!spec) return std::nullopt;
  json args = json::object();
  for (;;) {
    s = trim(s);
    if (take(s, "</function>")) break;
    if (!take(s, "<parameter=")) return std::nullopt;
    const auto param = take_until(s, ">");
    const auto raw = param ? take_until(s, "</parameter>") : std::nullopt;
    if (!raw) return std::nullopt;
    // The template puts the value on lines of its own.
    std::string_view value = *raw;
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    const std::string key(trim(*param));
    auto type = spec->parameter_types.find(key);
    args[key] = convert_value(std::string(value), type == spec->parameter_types.end() ? "" : type->second);
  }
  if (!trim(s).empty()) return std::nullopt;
  return tool_call{{}, spec->name, dump(args)};
}

}  // namespace

std::optional<tool_call> read_tool_call(tool_call_format format, std::string_view body,
                                        const std::vector<tool_spec>& tools) {
  return format == tool_call_format::hermes ? read_hermes(body, tools) : read_xml(body, tools);
}

}  // namespace troupe
