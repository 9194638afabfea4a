#include "gateway/reasoning_grammar.hpp"

#include <string_view>
#include <vector>

#include "text/grammar/grammar_builder.hpp"

namespace troupe {
namespace {

constexpr std::string_view close_tag = "</think>";

// Any bytes through the first `close_tag`: one rule per count of the tag's bytes matched
// so far (the tag's bytes are all different, so a mismatch falls back to 0, or to 1 on '<').
grammar_sequence text_through_close_tag(grammar_builder& b) {
  const int length = int(close_tag.size());
  std::vector<int32_t> matched(close_tag.size(), 0);
  for (auto& rule : matched) rule = b.declare();
  for (int k = 0; k < length; ++k) {
    const uint8_t expected = uint8_t(close_tag[size_t(k)]);
    byte_set restart;  // the bytes that match nothing of the tag
    restart.add(0, 255);
    for (uint8_t c : {expected, uint8_t('<')}) restart.words[c >> 6] &= ~(uint64_t(1) << (c & 63));
    std::vector<grammar_sequence> next = {join({b.bytes(restart), grammar_builder::reference(matched[0])})};
    if (expected != '<') next.push_back(join({b.literal("<"), grammar_builder::reference(matched[1])}));
    next.push_back(k + 1 == length ? b.literal(close_tag.substr(size_t(k), 1))
                                   : join({b.literal(close_tag.substr(size_t(k), 1)),
                                           grammar_builder::reference(matched[size_t(k) + 1])}));
    b.define(matched[size_t(k)], std::move(next));
  }
  return grammar_builder::reference(matched[0]);
}

}  // namespace

grammar after_reasoning(const grammar& answer) {
  grammar_builder b;
  auto reasoning = text_through_close_tag(b);
  auto newline = b.optional(b.literal("\n"));
  return b.finish(join({reasoning, newline, newline, b.include(answer)}));
}

}  // namespace troupe
