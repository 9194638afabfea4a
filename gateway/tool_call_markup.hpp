#pragma once
// One complete tool-call block (the text between <tool_call> and </tool_call>) read as a
// call of one of the offered tools.
#include <optional>
#include <string_view>
#include <vector>

#include "gateway/tool_call_parser.hpp"

namespace troupe {

// The call's name and arguments (id left empty), or nothing when the body does not parse
// or names a tool not in `tools`. xml parameter values take the JSON type the tool's
// schema declares for them, as vLLM's qwen3_coder parser does.
std::optional<tool_call> read_tool_call(tool_call_format format, std::string_view body,
                                        const std::vector<tool_spec>& tools);

}  // namespace troupe
