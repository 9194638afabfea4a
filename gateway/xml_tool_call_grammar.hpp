#pragma once
// Forced tool calls in the xml markup that Qwen3.5's and Qwen3-Coder's chat templates teach:
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// written so that read_tool_call (tool_call_markup.hpp) reads back a call of that tool
// whose arguments match its parameters schema:
// - The parameters are the schema's properties, in the schema's order: the required ones
//   always, the optional ones maybe, no others. A tool whose parameters schema is absent or
//   lists no properties takes none. The parameters schema itself must be an object's.
// - A value is read back as the type its property declares (tool_parameter_type.hpp), so
//   it is written as that type:
//   string: raw text of tabs, newlines, printable ASCII other than '<' and multi-byte
//     UTF-8 characters (so it never holds a closing tag), never "null" in any letter case
//     (which reads back as null); minLength/maxLength count its characters. enum and const
//     strings are written as they are, and are refused if they hold "</" or read as null.
//   integer, number, boolean: their JSON text.
//   enum or const without a type: a string that does not parse as JSON raw (as the
//     template writes it), other values as JSON text.
//   anything else (object, array, or no type: anyOf, $ref, any value): compact JSON as
//     json_schema_grammar writes it, with '<' in strings as \u003c.
//   Where the type allows null, "null" too.
#include <vector>

#include "base/result.hpp"
#include "gateway/json_schema/json_schema_grammar.hpp"
#include "text/grammar/grammar.hpp"

namespace troupe {

// One call, or with `several` one or more separated by a newline (as the template writes
// them). One tool for a named tool_choice, all offered tools for "required".
result<grammar> xml_tool_call_grammar(const std::vector<tool_schema>& tools, bool several = false);

}  // namespace troupe
