// Seeded random inputs against the tokenizer's promises: encode never crashes; UTF-8
// comes back from decode as its NFC form (by utf8proc itself); anything else is an error;
// streaming decode joins up to decode().
#define BOOST_TEST_MODULE tokenizer_fuzz
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <random>

#include <utf8proc.h>

#include "base/utf8.hpp"
#include "tests/support/qwen3_tokenizer.hpp"
#include "text/tokenizer/byte_level.hpp"
#include "text/tokenizer/incremental_detokenizer.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

const tokenizer& qwen3() { return test::qwen3_tokenizer(); }

// Whether utf8proc reads `s` as UTF-8 to its end.
bool utf8proc_valid(std::string_view s) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = utf8proc_ssize_t(s.size());
  while (left > 0) {
    utf8proc_int32_t c;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) return false;
    p += n, left -= n;
  }
  return true;
}

std::string nfc(std::string_view s) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()), &out,
                   utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  BOOST_REQUIRE(n >= 0);
  std::string text(reinterpret_cast<const char*>(out), size_t(n));
  std::free(out);
  return text;
}

// Text from many scripts with marks (and letters that compose like marks: Hangul jamo,
// Indic vowel signs), characters NFC replaces, emoji sequences, odd white space and
// pieces of added tokens. U+0338 is left out: after an added token's '>' it would compose with it
// under NFC of the whole text, while HF (and encode) normalize only the text between.
std::string random_text(std::mt19937& gen) {
  static const char* fragments[] = {"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|im_",
                                    "|>",           "<",          "'s",      "'LL",      "\r\n",        "\u200d",
                                    "\U0001F3FD",   "\ufe0f",     "    ",    "\t"};
  static const std::pair<char32_t, char32_t> ranges[] = {
      {0x20, 0x7E},     {0x00, 0x1F},       {0xA0, 0x24F},      {0x300, 0x337},   {0x339, 0x36F},   {0x370, 0x52F},
      {0x590, 0x6FF},   {0x900, 0x97F},     {0xE00, 0xE7F},     {0x1100, 0x11FF}, {0xB00, 0xDFF},   {0x1000, 0x109F},
      {0x1B00, 0x1B7F}, {0x2000, 0x21FF},   {0x3000, 0x30FF},   {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
      {0xFF00, 0xFFEF}, {0x1F300, 0x1FAFF}, {0x10000, 0x10FFFF}};
  std::string text;
  const int length = int(gen() % 40);
  for (int i = 0; i < length; ++i) {
    if (gen() % 8 == 0) {
      text += fragments[gen() % std::size(fragments)];
      continue;
    }
    const auto [low, high] = ranges[gen() % std::size(ranges)];
    char32_t c = low + gen() % (high - low + 1);
    if ((c >= 0xD800 && c <= 0xDFFF) || c == 0x338) c = 'x';
    append_utf8(c, text);
  }
  return text;
}

std::string random_bytes(std::mt19937& gen) {
  std::string s(gen() % 24, '\0');
  for (char& c : s) c = char(gen() % 4 == 0 ? 0x80 | gen() % 0x80 : gen() % 256);
  return s;
}

std::string streamed(const tokenizer& t, const std::vector<int>& ids, bool skip_special) {
  incremental_detokenizer d(t, skip_special);
  std::string text;
  for (int id : ids) text += d.push(id);
  return text + d.flush();
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_text_round_trips_through_nfc) {
  std::mt19937 gen(1234);
  for (int i = 0; i < 20000; ++i) {
    const std::string text = random_text(gen);
    auto ids = qwen3().encode(text);
    BOOST_REQUIRE_MESSAGE(ids, "text " << i);
    BOOST_TEST(qwen3().decode(ids.value()) == nfc(text), "text " << i);
    BOOST_TEST(streamed(qwen3(), ids.value(), false) == qwen3().decode(ids.value()), "text " << i);
    BOOST_TEST(streamed(qwen3(), ids.value(), true) == qwen3().decode(ids.value(), true), "text " << i);
  }
}

BOOST_AUTO_TEST_CASE(random_bytes_are_encoded_or_refused) {
  std::mt19937 gen(99);
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string bytes = random_bytes(gen);
    auto ids = qwen3().encode(bytes);
    BOOST_TEST(ids.ok() == utf8proc_valid(bytes), "input " << i);
    if (ids) {
      BOOST_TEST(qwen3().decode(ids.value()) == nfc(bytes), "input " << i);
    } else {
      ++refused;
    }
  }
  BOOST_TEST(refused > 10000);  // most random byte strings are not UTF-8
}

BOOST_AUTO_TEST_CASE(random_ids_stream_as_they_decode) {
  std::vector<int> byte_ids;  // the one-byte tokens, whose runs rarely form UTF-8
  for (int b = 0; b < 256; ++b) {
    std::string token;
    append_utf8(byte_level_char(uint8_t(b)), token);
    byte_ids.push_back(qwen3().token_to_id(token).value());
  }
  std::mt19937 gen(5);
  for (int i = 0; i < 5000; ++i) {
    std::vector<int> ids(gen() % 16);
    for (int& id : ids) {
      const int kind = int(gen() % 8);
      id = kind < 5   ? byte_ids[gen() % 256]
           : kind < 7 ? int(gen() % uint32_t(qwen3().vocab_size()))
                      : int(gen());  // mostly no token at all
    }
    const std::string text = qwen3().decode(ids);
    BOOST_TEST(find_invalid_utf8(text) == std::string_view::npos);
    BOOST_TEST(streamed(qwen3(), ids, false) == text, "sequence " << i);
    BOOST_TEST(streamed(qwen3(), ids, true) == qwen3().decode(ids, true), "sequence " << i);
  }
}
