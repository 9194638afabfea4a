#pragma once
// Takes the tool calls out of a chat answer while it streams in, in pieces of any size.
// Two markups, as the model's chat template teaches them:
//   hermes (Qwen3):       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   xml (Qwen3.5, Coder): <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n
//                         </function>\n</tool_call>
// A block becomes a call once it closes and parses. One that does not parse, is still open
// when generation ends, or names a tool the request did not offer stays in the content as
// the model wrote it: the client sees what the model said, and no call is invented.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

enum class tool_call_format { hermes, xml };

// One tool the request offered: its name and the JSON type each parameter declares
// ("string", "integer", ...; empty when the schema gives none).
struct tool_spec {
  std::string name;
  std::map<std::string, std::string> parameter_types;
};

struct tool_call {
  std::string id;  // "call_" and 24 random letters and digits
  std::string name;
  std::string arguments;  // a JSON object, as text
};

class tool_call_parser {
 public:
  struct output {
    std::string content;
    std::vector<tool_call> calls;
  };

  tool_call_parser(tool_call_format format, std::shared_ptr<const std::vector<tool_spec>> tools);

  // The markup the template teaches: xml when it shows `<function=`.
  static tool_call_format format_of_template(std::string_view template_source);

  output push(std::string_view text);
  // The end of generation: held-back text, and an unclosed block as content.
  output flush();

 private:
  void advance(output& out);
  void finish_block(std::string_view body, output& out);
  void release(std::string text, output& out);

  tool_call_format format_;
  std::shared_ptr<const std::vector<tool_spec>> tools_;
  std::string held_;
  std::string space_;  // trailing whitespace of the content: dropped if a call follows
  bool in_block_ = false;
  bool found_call_ = false;
};

}  // namespace troupe
