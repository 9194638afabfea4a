// The tokenizer's settings, errors and decoding. Expected ids on tiny_tokenizer_json()
// and the Qwen3 cases below were recorded with Hugging Face tokenizers 0.23.2; the
// id-for-id comparison on real files is in test_tokenizer_oracle.cpp.
#define BOOST_TEST_MODULE tokenizer
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <thread>

#include "tests/support/error_text.hpp"
#include "tests/support/qwen3_tokenizer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/text/tiny_tokenizer.hpp"
#include "text/tokenizer/incremental_detokenizer.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
using json = nlohmann::json;
using ids = std::vector<int>;
namespace fs = std::filesystem;

namespace {

const tokenizer& qwen3() { return test::qwen3_tokenizer(); }

tokenizer tiny(const json& config) {
  auto t = tokenizer::parse(config.dump(), "tiny.json");
  BOOST_REQUIRE_MESSAGE(t, test::error_text(t));
  return std::move(t).value();
}

ids encode(const tokenizer& t, std::string_view text) {
  auto r = t.encode(text);
  BOOST_REQUIRE_MESSAGE(r, test::error_text(r));
  return r.value();
}

json added(int id, const char* content, const char* flag = nullptr) {
  json t = {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", false}, {"special", false}};
  if (flag) t[flag] = true;
  return t;
}

// The id of the one-byte token for `b`.
int byte_id(const tokenizer& t, uint8_t b) {
  std::string token;
  append_utf8(byte_level_char(b), token);
  return t.token_to_id(token).value();
}

std::string load_error(const json& config) {
  auto t = tokenizer::parse(config.dump(), "x/tokenizer.json");
  BOOST_REQUIRE(!t);
  return t.err().message;
}

}  // namespace

BOOST_AUTO_TEST_CASE(qwen3_matches_hugging_face_on_white_space_where_the_oracle_differs) {
  // U+FEFF is white space to JavaScript's \s, U+0085 is not; Oniguruma's \s (HF) says
  // the opposite. U+180E is not white space, though PCRE2's own \s takes it.
  BOOST_TEST(encode(qwen3(), "zero\u00a0width  \ufeffno-break") == (ids{14154, 4102, 3098, 220, 75780, 2152, 34349}));
  BOOST_TEST(encode(qwen3(), "next  \u0085\u0085line") == (ids{3600, 256, 126, 227, 126, 227, 1056}));
  BOOST_TEST(encode(qwen3(), "mongolian\u180e\u180evowel") == (ids{71155, 88008, 123970, 236, 123970, 236, 85, 67057}));
}

BOOST_AUTO_TEST_CASE(gpt2_style_byte_level_with_its_own_regex) {
  const tokenizer t = tiny(test::tiny_tokenizer_json());
  BOOST_TEST(encode(t, "hello world") == (ids{259, 260, 111, 114, 108, 100}));
  BOOST_TEST(encode(t, "hello  world\n") == (ids{259, 32, 260, 111, 114, 108, 100, 10}));
  BOOST_TEST(encode(t, "").empty());
  BOOST_TEST(t.decode(ids{259, 260, 111, 114, 108, 100}) == "hello world");
}

BOOST_AUTO_TEST_CASE(byte_level_prefix_space_starts_each_run_of_text) {
  json config = test::tiny_tokenizer_json();
  config["pre_tokenizer"]["add_prefix_space"] = true;
  const tokenizer t = tiny(config);
  BOOST_TEST(encode(t, "hello") == (ids{32, 259}));
  BOOST_TEST(encode(t, " hello") == (ids{32, 259}));
}

BOOST_AUTO_TEST_CASE(split_by_a_literal_string_then_byte_level) {
  json config = test::tiny_tokenizer_json();
  config["pre_tokenizer"] = {{"type", "Sequence"},
                             {"pretokenizers",
                              {{{"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "Isolated"}},
                               {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  const tokenizer t = tiny(config);
  BOOST_TEST(encode(t, "he") == (ids{256}));  // "." is no wildcard here
  BOOST_TEST(encode(t, "he.he") == (ids{256, 46, 256}));
  BOOST_TEST(encode(t, "hello world") == (ids{259, 260, 111, 114, 108, 100}));
}

BOOST_AUTO_TEST_CASE(merges_as_lists_read_like_merges_as_strings) {
  json config = test::tiny_tokenizer_json();
  for (json& m : config["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    m = json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  BOOST_TEST(encode(tiny(config), "hello world") == (ids{259, 260, 111, 114, 108, 100}));
}

BOOST_AUTO_TEST_CASE(ignore_merges_takes_a_whole_word_from_the_vocab) {
  json config = test::tiny_tokenizer_json();
  config["model"]["vocab"]["xyz"] = 261;  // no merges lead to it
  BOOST_TEST(encode(tiny(config), "xyz") == (ids{120, 121, 122}));
  config["model"]["ignore_merges"] = true;
  const tokenizer t = tiny(config);
  BOOST_TEST(encode(t, "xyz") == (ids{261}));
  BOOST_TEST(encode(t, "xyzxyz") == (ids{120, 121, 122, 120, 121, 122}));
}

BOOST_AUTO_TEST_CASE(a_sequence_of_normalizers) {
  json config = test::tiny_tokenizer_json();
  config["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}}}};
  BOOST_TEST(encode(tiny(config), "\ufb01 \u2460 \uff48\uff45\uff4c\uff4c\uff4f") == (ids{102, 105, 32, 49, 32, 259}));
}

BOOST_AUTO_TEST_CASE(added_tokens_honour_their_flags) {
  json config = test::tiny_tokenizer_json();
  config["normalizer"] = {{"type", "NFC"}};
  config["added_tokens"] = {added(261, "[L]", "lstrip"),         added(262, "[R]", "rstrip"),
                            added(263, "[W]", "single_word"),    added(264, "<s>", "special"),
                            added(265, "e\u0301", "normalized"), added(266, "o\u0308")};
  const tokenizer t = tiny(config);
  BOOST_TEST(encode(t, "a  [L]  b") == (ids{97, 261, 32, 32, 98}));
  BOOST_TEST(encode(t, "a  [R]  b") == (ids{97, 32, 32, 262, 98}));
  BOOST_TEST(encode(t, "\t[L][R]\n") == (ids{261, 262}));
  BOOST_TEST(encode(t, "x[W]y") == (ids{120, 91, 87, 93, 121}));
  BOOST_TEST(encode(t, "x [W] y") == (ids{120, 32, 263, 32, 121}));
  BOOST_TEST(encode(t, "-[W]-") == (ids{45, 263, 45}));
  BOOST_TEST(encode(t, "_[W]") == (ids{95, 91, 87, 93}));
  BOOST_TEST(encode(t, "hello<s> world</s>") == (ids{259, 264, 260, 111, 114, 108, 100, 60, 47, 115, 62}));
  // A normalized token is found after normalizing, so in either spelling; the others as written.
  BOOST_TEST(encode(t, "cafe\u0301 caf\u00e9") == (ids{99, 97, 102, 265, 32, 99, 97, 102, 265}));
  BOOST_TEST(encode(t, "o\u0308 \u00f6") == (ids{266, 32, 195, 182}));

  BOOST_TEST(t.decode(ids{259, 264, 260}) == "hello<s> w");
  BOOST_TEST(t.decode(ids{259, 264, 260}, true) == "hello w");
  BOOST_TEST(t.decode(ids{266}) == "o\u0308");  // outside the byte alphabet: as written
  BOOST_TEST(t.decode(ids{265}) == "\ufffd");   // "é" is byte 0xE9 of the alphabet, as in HF
  BOOST_TEST(t.token_to_id("e\u0301").value() == 265);
  BOOST_TEST(t.is_special(264));
  BOOST_TEST(!t.is_special(261));
  BOOST_TEST(t.vocab_size() == 267);
}

BOOST_AUTO_TEST_CASE(qwen3_vocabulary_and_special_tokens) {
  const tokenizer& t = qwen3();
  BOOST_TEST(t.vocab_size() == 151669);
  BOOST_TEST(t.token_to_id("<|im_start|>").value() == 151644);
  BOOST_TEST(t.token_to_id("<think>").value() == 151667);
  BOOST_TEST(t.token_to_id("Hello").value() == 9707);
  BOOST_TEST(!t.token_to_id("no such token"));
  BOOST_TEST(t.id_to_token(151645).value() == "<|im_end|>");
  BOOST_TEST(t.id_to_token(1879).value() == "\u0120world");
  BOOST_TEST(!t.id_to_token(151669));
  BOOST_TEST(!t.id_to_token(-1));
  BOOST_TEST(t.is_special(151643));
  BOOST_TEST(!t.is_special(151667));  // <think> is an added token, not a special one
  BOOST_TEST(encode(t, "<|im_start|>user\nhi<|im_end|>") == (ids{151644, 872, 198, 6023, 151645}));
  BOOST_TEST(t.decode(ids{151644, 872, 198, 6023, 151645}, true) == "user\nhi");
  BOOST_TEST(t.decode(ids{9707, -5, 151669, 1 << 30, 1879}) == "Hello world");  // unknown ids skipped
}

BOOST_AUTO_TEST_CASE(decode_replaces_ill_formed_utf8_as_hugging_face_does) {
  const tokenizer& t = qwen3();
  const auto bytes = [&](std::initializer_list<int> values) {
    ids out;
    for (int b : values) out.push_back(byte_id(t, uint8_t(b)));
    return out;
  };
  BOOST_TEST(t.decode(bytes({0xE4, 0xB8, 0xAD})) == "中");
  BOOST_TEST(t.decode(bytes({0xE4, 0xB8})) == "\ufffd");  // one per maximal ill-formed part
  BOOST_TEST(t.decode(bytes({0xE4, 'a'})) == "\ufffda");
  BOOST_TEST(t.decode(bytes({0xC0, 0xAF})) == "\ufffd\ufffd");
  BOOST_TEST(t.decode(bytes({0xED, 0xA0, 0x80})) == "\ufffd\ufffd\ufffd");
  BOOST_TEST(t.decode(bytes({0xFF, 'x'})) == "\ufffdx");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_an_error_not_a_crash) {
  for (std::string_view bad : {std::string_view("ab\xff"), std::string_view("\xc3"), std::string_view("\xed\xa0\x80"),
                               std::string_view("x\xc0\xafy")}) {
    auto r = qwen3().encode(bad);
    BOOST_REQUIRE(!r);
    BOOST_TEST(r.err().message.starts_with("text is not valid UTF-8: byte 0x"));
  }
  BOOST_TEST(qwen3().encode("ab\xff").err().message == "text is not valid UTF-8: byte 0xff at offset 2");
}

BOOST_AUTO_TEST_CASE(incremental_detokenizer_holds_back_a_partial_character) {
  const tokenizer& t = qwen3();
  incremental_detokenizer d(t);
  BOOST_TEST(d.push(byte_id(t, 0xE4)).empty());
  BOOST_TEST(d.push(byte_id(t, 0xB8)).empty());
  BOOST_TEST(d.push(byte_id(t, 0xAD)) == "中");
  BOOST_TEST(d.push(byte_id(t, 0xE4)).empty());
  BOOST_TEST(d.push(byte_id(t, 'a')) == "\ufffda");  // what cannot complete is final at once

  std::string streamed;
  const auto text = encode(t, "<think>👩‍💻 家族 👨‍👩‍👧‍👦</think>");
  for (int id : text) streamed += d.push(id);
  streamed += d.flush();
  BOOST_TEST(streamed == "<think>👩‍💻 家族 👨‍👩‍👧‍👦</think>");

  // A stream that ends mid-character ends with U+FFFD, as decode() does.
  BOOST_TEST(d.push(byte_id(t, 0xF0)).empty());
  BOOST_TEST(d.push(byte_id(t, 0x9F)).empty());
  BOOST_TEST(d.flush() == "\ufffd");
  BOOST_TEST(d.flush().empty());

  incremental_detokenizer skipping(t, /*skip_special=*/true);
  BOOST_TEST(skipping.push(151644).empty());
  BOOST_TEST(skipping.push(9707) == "Hello");
}

BOOST_AUTO_TEST_CASE(threads_share_one_tokenizer) {
  const tokenizer& t = qwen3();
  std::vector<std::string> texts;
  for (int i = 0; i < 2000; ++i)
    texts.push_back("doc " + std::to_string(i * 7919) + ": 文本 <think>x</think> word" + std::to_string(i % 97));
  std::vector<std::vector<int>> serial;
  for (const auto& text : texts) serial.push_back(encode(t, text));
  std::vector<std::vector<int>> a(texts.size()), b(texts.size());
  std::thread other([&] {
    for (size_t i = 0; i < texts.size(); ++i) a[i] = t.encode(texts[i]).value();
  });
  for (size_t i = texts.size(); i-- > 0;) b[i] = t.encode(texts[i]).value();
  other.join();
  BOOST_TEST((a == serial));
  BOOST_TEST((b == serial));
}

BOOST_AUTO_TEST_CASE(load_errors_name_the_file_and_the_construct) {
  auto missing = tokenizer::load("/nonexistent/tokenizer.json");
  BOOST_REQUIRE(!missing);
  BOOST_TEST(missing.err().message.starts_with("/nonexistent/tokenizer.json: cannot open"));

  test::temp_dir dir("tokenizer");
  std::ofstream(dir.path() / "tokenizer.json") << "{\"model\": ";
  auto broken = tokenizer::load(dir.path() / "tokenizer.json");
  BOOST_REQUIRE(!broken);
  BOOST_TEST(broken.err().message == (dir.path() / "tokenizer.json").string() + ": not valid JSON");
  BOOST_TEST(tokenizer::parse("[1, 2]", "x/tokenizer.json").err().message == "x/tokenizer.json: not a JSON object");

  const json base = test::tiny_tokenizer_json();
  json c = base;
  c["model"] = {{"type", "WordPiece"}, {"vocab", json::object()}};
  BOOST_TEST(load_error(c) ==
             "x/tokenizer.json: unsupported model type \"WordPiece\" (only byte-level BPE is supported)");
  c = base;
  c["model"]["type"] = "Unigram";
  BOOST_TEST(load_error(c).find("unsupported model type \"Unigram\"") != std::string::npos);
  c = base;
  c["normalizer"] = {{"type", "Lowercase"}};
  BOOST_TEST(load_error(c) ==
             "x/tokenizer.json: unsupported normalizer \"Lowercase\" (supported: NFC, NFD, NFKC, NFKD, "
             "Sequence, null)");
  c = base;
  c["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  BOOST_TEST(load_error(c) ==
             "x/tokenizer.json: unsupported pre_tokenizer \"Metaspace\" (supported: Split, "
             "ByteLevel, Sequence)");
  c = base;
  c["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Removed"}}}}};
  BOOST_TEST(load_error(c) == "x/tokenizer.json: unsupported Split behavior \"Removed\" (supported: Isolated)");
  c["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Isolated";
  BOOST_TEST(load_error(c) == "x/tokenizer.json: pre_tokenizer has no ByteLevel step: not a byte-level BPE tokenizer");
  c["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  BOOST_TEST(load_error(c).starts_with("x/tokenizer.json: cannot compile regex \"(unclosed\": "));
  c = base;
  c["decoder"] = {{"type", "WordPiece"}};
  BOOST_TEST(load_error(c) == "x/tokenizer.json: unsupported decoder \"WordPiece\" (supported: ByteLevel)");
  c = base;
  c["model"]["merges"].push_back("q z9");
  BOOST_TEST(load_error(c) == "x/tokenizer.json: merge \"q z9\" uses a token missing from the vocab");
  c = base;
  c["model"]["vocab"]["not a byte"] = c["model"]["vocab"]["\u0120"];  // its id stays taken
  c["model"]["vocab"].erase("\u0120");
  BOOST_TEST(load_error(c) == "x/tokenizer.json: the vocab lacks byte 0x20: not a byte-level BPE vocabulary");
  c = base;
  c["model"]["vocab"]["far"] = 2147483647;  // would size the id table at 2^31 entries
  BOOST_TEST(load_error(c) ==
             "x/tokenizer.json: vocab entry \"far\" has no valid id (the vocab's 262 entries "
             "have ids 0 to 261)");
  c = base;
  c["added_tokens"] = json::array({added(300, "<s>", "special")});  // {x} alone is x itself under clang
  BOOST_TEST(load_error(c) ==
             "x/tokenizer.json: added token \"<s>\" has id 300, but Hugging Face "
             "tokenizers gives it id 261");
}
