// libFuzzer: the Jinja engine with hostile templates (tests/fuzz/README.md): a template is
// compiled or refused with its line; one that compiles renders a chat or fails with a
// message, in bounded time and memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "text/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto t = chat_template::from_source(source, "<s>", "</s>");
  if (!t) {
    TROUPE_CHECK(!t.err().message.empty(), "a refused template without a message");
    return 0;
  }
  const jinja::array messages{jinja::object{{"role", "system"}, {"content", "be brief"}},
                              jinja::object{{"role", "user"}, {"content", "Hi <|im_start|>"}}};
  const jinja::array tools{jinja::object{{"type", "function"}, {"function", jinja::object{{"name", "f"}}}}};
  auto text = t->render(messages, tools, true, {{"enable_thinking", false}});
  if (!text) TROUPE_CHECK(!text.err().message.empty(), "a failed render without a message");
  return 0;
}
