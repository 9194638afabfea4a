// cuda::sample_tokens against the CPU sampler (sample_with_uniform, the same u) on random
// logits: flat (scale 1), peaked (scale 8) and coarse (many exact ties), vocabularies of
// 151936, 1000 and 37, every filter and penalty alone and combined, and constrained rows
// (a random third of the tokens allowed), 40 draws each, all the rows of one kind in one
// launch.
// Each check logs its counts (--log_level=test_suite).
#define BOOST_TEST_MODULE cuda_sampling
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "kernels/cpu/log_softmax.hpp"
#include "kernels/cuda/sampling.cuh"
#include "model/sampler.hpp"
#include "tests/kernels/cuda_test_support.hpp"
#include "tests/support/random.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

constexpr int draws = 40;
constexpr int max_top = cuda::sampling_max_top_logprobs;
// The GPU sums fp32 probabilities in fp64: where the CPU's target lies this close to a
// cumulative mass (relative to the kept mass), either neighbour is a fair draw.
constexpr double boundary_window = 1e-5;

struct sampling_case {
  std::string name;
  sampling_params params;
  bool history = false;
  bool masked = false;
};

std::vector<sampling_case> sampling_cases() {
  std::vector<sampling_case> cases;
  auto add = [&](std::string name, float temperature, bool history, const std::function<void(sampling_params&)>& set,
                 bool masked = false) {
    sampling_params p;
    p.temperature = temperature;
    p.seed = 1000 + cases.size();
    set(p);
    cases.push_back({std::move(name), p, history, masked});
  };
  add("greedy", 0.0f, false, [](sampling_params& p) { p.top_logprobs = 3; });
  add("T 0.7", 0.7f, false, [](sampling_params&) {});
  add("top_k 1", 1.0f, false, [](sampling_params& p) { p.top_k = 1; });
  add("top_k 20", 0.7f, false, [](sampling_params& p) {
    p.top_k = 20;
    p.top_logprobs = 5;
  });
  add("top_k 50", 1.0f, false, [](sampling_params& p) { p.top_k = 50; });
  add("top_p 0.1", 0.7f, false, [](sampling_params& p) { p.top_p = 0.1f; });
  add("top_p 0.9", 1.0f, false, [](sampling_params& p) {
    p.top_p = 0.9f;
    p.top_logprobs = 0;
  });
  add("min_p 0.05", 0.7f, false, [](sampling_params& p) { p.min_p = 0.05f; });
  add("min_p 0.3", 1.0f, false, [](sampling_params& p) { p.min_p = 0.3f; });
  add("penalties", 0.8f, true, [](sampling_params& p) {
    p.repetition_penalty = 1.3f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.4f;
  });
  add("greedy with penalties", 0.0f, true, [](sampling_params& p) {
    p.repetition_penalty = 1.3f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = -0.3f;
    p.top_logprobs = 0;
  });
  add("top_k 50 top_p 0.9 min_p 0.05", 0.9f, false, [](sampling_params& p) {
    p.top_k = 50;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    p.top_logprobs = 20;
  });
  add("top_k 20 top_p 0.8 min_p 0.02 with penalties", 0.7f, true, [](sampling_params& p) {
    p.top_k = 20;
    p.top_p = 0.8f;
    p.min_p = 0.02f;
    p.repetition_penalty = 1.2f;
    p.presence_penalty = 0.5f;
    p.top_logprobs = 1;
  });
  add("top_k 3000 top_p 0.97", 1.3f, false, [](sampling_params& p) {
    p.top_k = 3000;
    p.top_p = 0.97f;
  });
  // Ids below 37, the smallest vocabulary checked.
  const std::vector<token_bias> bias = {{2, 4.0f}, {5, -100.0f}, {17, 1.5f}, {30, -0.75f}};
  add("logit_bias", 0.8f, false, [&](sampling_params& p) { p.logit_bias = bias; });
  add("greedy with logit_bias and penalties", 0.0f, true, [&](sampling_params& p) {
    p.logit_bias = bias;
    p.repetition_penalty = 1.3f;
    p.frequency_penalty = 0.5f;
    p.top_logprobs = 2;
  });
  add(
      "masked logit_bias top_p 0.9", 0.7f, false,
      [&](sampling_params& p) {
        p.logit_bias = bias;
        p.top_p = 0.9f;
      },
      true);
  add(
      "masked greedy", 0.0f, false, [](sampling_params& p) { p.top_logprobs = 2; }, true);
  add(
      "masked T 0.8", 0.8f, false, [](sampling_params&) {}, true);
  add(
      "masked top_k 20 top_p 0.9 with penalties", 0.7f, true,
      [](sampling_params& p) {
        p.top_k = 20;
        p.top_p = 0.9f;
        p.repetition_penalty = 1.3f;
        p.presence_penalty = 0.5f;
        p.top_logprobs = 3;
      },
      true);
  return cases;
}

// The row's three best tokens (so that the penalties matter) and some random ones, each
// seen 1 to 3 times, some of those in the output.
token_history history_for(const float* logits, int vocab, uint32_t seed) {
  std::vector<int> by_logit(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) by_logit[size_t(i)] = i;
  const size_t best = std::min<size_t>(3, size_t(vocab));
  std::partial_sort(by_logit.begin(), by_logit.begin() + long(best), by_logit.end(),
                    [&](int a, int b) { return logits[a] > logits[b]; });
  std::vector<int> tokens(by_logit.begin(), by_logit.begin() + long(best));
  for (int t : random_ints(20, vocab, seed)) tokens.push_back(t);
  const auto counts = random_ints(2 * tokens.size(), 3, seed + 1);
  std::set<int> added;
  token_history h;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!added.insert(tokens[i]).second) continue;
    const int seen = 1 + counts[2 * i];
    const int generated = i == 0 ? seen : std::min(seen, counts[2 * i + 1]);
    for (int g = 0; g < seen; ++g) h.add(tokens[i], g < generated);
  }
  return h;
}

// A random third of the tokens, and always one, as a mask of 64-bit words.
std::vector<uint64_t> random_mask(int vocab, uint32_t seed) {
  std::vector<uint64_t> words(size_t(vocab + 63) / 64, 0);
  const auto picks = random_ints(size_t(vocab), 3, seed);
  for (int i = 0; i < vocab; ++i)
    if (picks[size_t(i)] == 0) words[size_t(i / 64)] |= uint64_t(1) << (i % 64);
  const int always = random_ints(1, vocab, seed + 1)[0];
  words[size_t(always / 64)] |= uint64_t(1) << (always % 64);
  return words;
}

bool allows(const std::vector<uint64_t>& mask, int token) {
  return (mask[size_t(token / 64)] >> (token % 64) & 1u) != 0;
}

// A batch's parameters in the layout of cuda::sampling_rows, on the host and then the device.
struct host_rows {
  std::vector<float> temperature, top_p, min_p, repetition, frequency, presence, bias;
  std::vector<int> top_k, top_logprobs, offsets{0}, tokens, seen, generated, mask_rows;
  std::vector<double> uniform;
  std::vector<uint64_t> allowed;
  int mask_words = 0;

  void add(const sampling_params& p, double u, const token_history& h, const std::vector<uint64_t>* mask = nullptr) {
    mask_rows.push_back(-1);
    if (mask != nullptr) {
      mask_words = int(mask->size());
      mask_rows.back() = int(allowed.size()) / mask_words;
      allowed.insert(allowed.end(), mask->begin(), mask->end());
    }
    temperature.push_back(p.temperature);
    top_p.push_back(p.top_p);
    top_k.push_back(p.top_k);
    min_p.push_back(p.min_p);
    repetition.push_back(p.repetition_penalty);
    frequency.push_back(p.frequency_penalty);
    presence.push_back(p.presence_penalty);
    uniform.push_back(u);
    top_logprobs.push_back(p.top_logprobs);
    // The tokens the history or the bias touch, each once.
    std::map<int, float> biased;
    for (const token_bias& b : p.logit_bias) biased[b.token] = b.bias;
    for (const auto& [token, count] : h.seen()) {
      tokens.push_back(token);
      seen.push_back(count);
      const auto g = h.generated().find(token);
      generated.push_back(g == h.generated().end() ? 0 : g->second);
      bias.push_back(biased.count(token) ? biased[token] : 0.0f);
      biased.erase(token);
    }
    for (const auto& [token, b] : biased) {
      tokens.push_back(token);
      seen.push_back(0);
      generated.push_back(0);
      bias.push_back(b);
    }
    offsets.push_back(int(tokens.size()));
  }
};

struct device_rows {
  device_buffer<float> temperature, top_p, min_p, repetition, frequency, presence, bias;
  device_buffer<int> top_k, top_logprobs, offsets, tokens, seen, generated, mask_rows;
  device_buffer<double> uniform;
  device_buffer<uint64_t> allowed;
  int mask_words;

  explicit device_rows(const host_rows& h)
      : temperature(h.temperature),
        top_p(h.top_p),
        min_p(h.min_p),
        repetition(h.repetition),
        frequency(h.frequency),
        presence(h.presence),
        bias(h.bias),
        top_k(h.top_k),
        top_logprobs(h.top_logprobs),
        offsets(h.offsets),
        tokens(h.tokens),
        seen(h.seen),
        generated(h.generated),
        mask_rows(h.mask_rows),
        uniform(h.uniform),
        allowed(h.allowed),
        mask_words(h.mask_words) {}

  cuda::sampling_rows view() {
    return {temperature.get(), top_p.get(),   top_k.get(),        min_p.get(),   repetition.get(), frequency.get(),
            presence.get(),    uniform.get(), top_logprobs.get(), offsets.get(), tokens.get(),     seen.get(),
            generated.get(),   bias.get(),    mask_rows.get(),    allowed.get(), mask_words};
  }
};

// What one launch returns; logprob and top_* are poisoned so that rows without log-probs
// can be checked to stay untouched.
struct gpu_result {
  std::vector<int> tokens, top_ids;
  std::vector<float> logprob, top_logprobs;
};

constexpr int id_poison = -7;

gpu_result sample_on_gpu(const std::vector<float>& logits, int rows, int vocab, const host_rows& h) {
  device_buffer<float> d_logits(logits);
  device_rows d_rows(h);
  device_buffer<float> workspace(cuda::sampling_workspace_bytes(rows, vocab) / sizeof(float), NAN);
  device_buffer<int> tokens(size_t(rows), -1), top_ids(size_t(rows) * max_top, id_poison);
  device_buffer<float> logprob(size_t(rows), NAN), top_logprobs(size_t(rows) * max_top, NAN);
  cuda::sample_tokens(d_logits.get(), rows, vocab, d_rows.view(), workspace.get(), tokens.get(), logprob.get(),
                      top_ids.get(), top_logprobs.get(), nullptr);
  return {tokens.to_host(), top_ids.to_host(), logprob.to_host(), top_logprobs.to_host()};
}

// Random logits of a kind: N(0, scale), or with coarse=true rounded to quarters so that many
// tokens tie exactly (at the top-k and top-p cuts too).
std::vector<float> random_logits(int rows, int vocab, float scale, bool coarse, uint32_t seed) {
  std::vector<float> logits;
  logits.reserve(size_t(rows) * vocab);
  for (int r = 0; r < rows; ++r)
    for (float x : test::random_floats(size_t(vocab), seed + uint32_t(r), scale))
      logits.push_back(coarse ? std::round(x * 4.0f) / 4.0f : x);
  return logits;
}

void check_kind(int vocab, float scale, bool coarse) {
  const auto cases = sampling_cases();
  const int rows = int(cases.size()) * draws;
  const auto logits = random_logits(rows, vocab, scale, coarse, uint32_t(vocab) * 7 + uint32_t(scale));
  std::vector<token_history> histories(static_cast<size_t>(rows));
  std::vector<std::vector<uint64_t>> masks(static_cast<size_t>(rows));
  host_rows h;
  for (int r = 0; r < rows; ++r) {
    const sampling_case& c = cases[size_t(r / draws)];
    const float* row = logits.data() + size_t(r) * vocab;
    if (c.history) histories[size_t(r)] = history_for(row, vocab, uint32_t(r));
    if (c.masked) masks[size_t(r)] = random_mask(vocab, uint32_t(r) * 3 + 11);
    h.add(c.params, sampling_uniform(c.params.seed, r % draws), histories[size_t(r)],
          c.masked ? &masks[size_t(r)] : nullptr);
  }
  const gpu_result gpu = sample_on_gpu(logits, rows, vocab, h);

  std::ostringstream kind;
  kind << "vocab " << vocab << (coarse ? " coarse" : "") << " scale " << scale;
  int sampled = 0, excused = 0;
  for (int r = 0; r < rows; ++r) {
    const sampling_case& c = cases[size_t(r / draws)];
    const sampling_params& p = c.params;
    const float* row = logits.data() + size_t(r) * vocab;
    const token_history& history = histories[size_t(r)];
    const std::vector<uint64_t>* mask = c.masked ? &masks[size_t(r)] : nullptr;
    const double u = h.uniform[size_t(r)];
    const sampled_token cpu = sample_with_uniform(row, vocab, p, history, u, mask);
    const int token = gpu.tokens[size_t(r)];
    BOOST_TEST_CONTEXT(kind.str() << ", " << c.name << ", draw " << r % draws << ", u " << u) {
      sampled += p.temperature > 0.0f;
      if (c.masked)
        BOOST_TEST((token >= 0 && token < vocab && allows(masks[size_t(r)], token)),
                   "token " << token << " outside the mask");
      if (token != cpu.token) {
        // Excused only where the CPU's own choice changes within the window around u.
        const double below = std::max(0.0, u - boundary_window);
        const double above = std::min(std::nextafter(1.0, 0.0), u + boundary_window);
        const bool at_boundary =
            p.temperature > 0.0f && sample_with_uniform(row, vocab, p, history, below, mask).token !=
                                        sample_with_uniform(row, vocab, p, history, above, mask).token;
        BOOST_TEST(at_boundary, "GPU token " << token << ", CPU token " << cpu.token);
        excused += at_boundary;
      }
      const float* gpu_top_lp = gpu.top_logprobs.data() + size_t(r) * max_top;
      const int* gpu_top = gpu.top_ids.data() + size_t(r) * max_top;
      if (p.top_logprobs < 0) {
        BOOST_TEST(std::isnan(gpu.logprob[size_t(r)]), "log-prob written though not asked");
        BOOST_TEST(gpu_top[0] == id_poison, "top ids written though not asked");
        continue;
      }
      std::vector<float> ref(static_cast<size_t>(vocab));
      cpu::log_softmax(row, vocab, ref.data());
      if (token >= 0 && token < vocab)
        BOOST_TEST(std::abs(gpu.logprob[size_t(r)] - ref[size_t(token)]) < 1e-4,
                   "log-prob " << gpu.logprob[size_t(r)] << " vs " << ref[size_t(token)]);
      for (int j = 0; j < max_top; ++j) {
        if (j >= int(cpu.top.size())) {
          BOOST_TEST(gpu_top[j] == -1, "slot " << j << " past the asked ones holds " << gpu_top[j]);
          continue;
        }
        const int want = cpu.top[size_t(j)].token, got = gpu_top[j];
        BOOST_REQUIRE(got >= 0 && got < vocab);
        BOOST_TEST((got == want || std::abs(ref[size_t(got)] - ref[size_t(want)]) < 1e-6),
                   "top " << j << ": GPU " << got << ", CPU " << want);
        BOOST_TEST(std::abs(gpu_top_lp[j] - ref[size_t(got)]) < 1e-4, "top " << j << " log-prob");
      }
    }
  }
  BOOST_TEST_MESSAGE(kind.str() << ": " << rows << " rows, " << excused << " of " << sampled
                                << " draws differ at a boundary");
  BOOST_TEST(excused < 0.02 * sampled, kind.str() << ": " << excused << " draws at a boundary");
}

}  // namespace

BOOST_AUTO_TEST_CASE(sample_tokens_matches_cpu_on_flat_logits) {
  for (int vocab : {151936, 1000, 37}) check_kind(vocab, 1.0f, false);
}

BOOST_AUTO_TEST_CASE(sample_tokens_matches_cpu_on_peaked_logits) {
  for (int vocab : {151936, 1000, 37}) check_kind(vocab, 8.0f, false);
}

BOOST_AUTO_TEST_CASE(sample_tokens_matches_cpu_with_exact_ties) {
  for (int vocab : {151936, 1000, 37}) check_kind(vocab, 2.0f, true);
}
