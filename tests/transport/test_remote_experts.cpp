// MoE dispatch between processes: expert_wire's bytes, then expert_server and
// remote_experts over the in-process and UCX transports (every node an endpoint in this
// process). A split over nodes gives the bits of in_process_experts with the same groups;
// a group or a server that is gone, a late reply and bytes that are no request give
// errors, never a hang or a crash. Timeouts are generous where they only bound a wait (a
// loaded 2-core machine may stall a thread for seconds), short where a case waits for one.
#define BOOST_TEST_MODULE remote_experts
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <regex>
#include <thread>
#include <tuple>

#include "model/local_experts.hpp"
#include "model/qwen3_moe_weights.hpp"
#include "tests/support/error_text.hpp"
#include "tests/support/random.hpp"
#include "tests/transport/byte_pattern.hpp"
#include "tests/transport/transport_kinds.hpp"
#include "transport/expert_server.hpp"
#include "transport/expert_wire.hpp"
#include "transport/in_process_transport.hpp"
#include "transport/remote_experts.hpp"
#include "transport/tags.hpp"
#include "transport/ucx_transport.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using group = remote_experts::group;

namespace {

constexpr auto patience = 20s;
constexpr uint64_t exact = ~uint64_t{0};
constexpr int num_experts = 16, hidden = 64, top_k = 4, num_layers = 2;

// A small random-weight model, made once: only its experts are used.
const model_weights& model() {
  static const model_weights w = [] {
    model_config c;
    c.model_type = "qwen3_moe";
    c.vocab_size = 32;
    c.hidden_size = hidden;
    c.num_layers = num_layers;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 32;
    c.num_experts = num_experts;
    c.num_experts_per_tok = top_k;
    c.moe_intermediate_size = 32;
    c.intermediate_size = 64;
    return make_dummy_weights(c, 7);
  }();
  return w;
}

// One MoE layer's routed tokens: top_k distinct experts of [first, last) per token.
struct routed {
  int layer = 0, tokens = 0;
  std::vector<float> x, weights;
  std::vector<int> chosen;
  size_t size() const { return size_t(tokens) * hidden; }
};

routed route(int layer, int tokens, uint32_t seed, int first = 0, int last = num_experts) {
  routed r{layer, tokens, test::random_floats(size_t(tokens) * hidden, seed), {}, {}};
  std::mt19937 gen(seed);
  std::vector<int> experts(size_t(last - first));
  std::iota(experts.begin(), experts.end(), first);
  for (int t = 0; t < tokens; ++t) {
    std::shuffle(experts.begin(), experts.end(), gen);
    r.chosen.insert(r.chosen.end(), experts.begin(), experts.begin() + top_k);
    for (int j = 0; j < top_k; ++j) r.weights.push_back(std::uniform_real_distribution<float>(0.1f, 1.0f)(gen));
  }
  return r;
}

void attach(in_process_experts& experts, int first, int last) {
  // Named so that the map's order is the order of the ranges.
  experts.attach("group_" + std::to_string(100 + first), std::make_shared<local_experts>(model(), first, last), first,
                 last);
}

std::shared_ptr<in_process_experts> experts_of(std::initializer_list<std::pair<int, int>> ranges) {
  auto e = std::make_shared<in_process_experts>(num_experts, hidden);
  for (auto [first, last] : ranges) attach(*e, first, last);
  return e;
}

std::vector<float> run(expert_executor& experts, const routed& r) {
  std::vector<float> out(r.size(), -1.0f);
  const status s = experts.run(r.layer, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), out.data());
  BOOST_REQUIRE_MESSAGE(s, test::error_text(s));
  return out;
}

// What one process with groups [0, 8) and [8, 16) computes.
std::vector<float> in_one_process(const routed& r) {
  auto experts = experts_of({{0, 8}, {8, 16}});
  return run(*experts, r);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool contains(const std::string& text, const std::string& part) {
  BOOST_TEST_MESSAGE(text);
  return text.find(part) != std::string::npos;
}

using kinds = test::transport_kinds;

// Nodes 0..n-1, each an endpoint connected to every node in node order, with its own
// in_process_experts (empty until attached) and, once started, an expert_server. Node 0
// runs the stage.
template <class Kind>
struct cluster {
  explicit cluster(int n) {
    for (int i = 0; i < n; ++i) {
      nodes.push_back(kind.make());
      experts.push_back(std::make_shared<in_process_experts>(num_experts, hidden));
    }
    peers.resize(size_t(n));
    servers.resize(size_t(n));
    for (int from = 0; from < n; ++from)
      for (int to = 0; to < n; ++to) {
        auto id = nodes[size_t(from)]->connect(nodes[size_t(to)]->address());
        BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
        peers[size_t(from)].push_back(*id);
      }
  }

  void serve(int node) {
    const std::vector<int>& table = peers[size_t(node)];
    servers[size_t(node)] = std::make_unique<expert_server>(
        nodes[size_t(node)], experts[size_t(node)],
        [&table](int other) -> std::optional<int> {
          if (other < 0 || size_t(other) >= table.size()) return std::nullopt;
          return table[size_t(other)];
        },
        patience);
  }

  // A group of node 0's stage served by `node`.
  group on(int node, int first, int last) const { return {first, last, peers[0][size_t(node)]}; }

  remote_experts stage(std::vector<group> groups, std::chrono::milliseconds timeout = patience) {
    return remote_experts(nodes[0], experts[0], std::move(groups), 0, hidden, timeout);
  }

  Kind kind;
  std::vector<std::shared_ptr<transport>> nodes;
  std::vector<std::shared_ptr<in_process_experts>> experts;
  std::vector<std::vector<int>> peers;                  // peers[a][b]: node b's peer id on node a's endpoint
  std::vector<std::unique_ptr<expert_server>> servers;  // last: they use the tables above
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void set_u32(std::vector<uint8_t>& bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + size_t(i)] = uint8_t(v >> (8 * i));
}

std::vector<uint8_t> request_bytes(const routed& r, int first, int last, int hidden_size = hidden) {
  return encode_request({r.layer, first, last, r.tokens, top_k, hidden_size}, r.x.data(), r.chosen.data(),
                        r.weights.data());
}

}  // namespace

// expert_wire

BOOST_AUTO_TEST_CASE(a_request_and_its_replies_round_trip) {
  const routed r = route(1, 3, 11);
  auto q = decode_request(request_bytes(r, 8, 16));
  BOOST_REQUIRE_MESSAGE(q, test::error_text(q));
  BOOST_TEST(q->header.layer == 1);
  BOOST_TEST(q->header.first_expert == 8);
  BOOST_TEST(q->header.last_expert == 16);
  BOOST_TEST(q->header.tokens == 3);
  BOOST_TEST(q->header.k == top_k);
  BOOST_TEST(q->header.hidden == hidden);
  BOOST_TEST(same_bits(q->x, r.x));
  BOOST_TEST((q->chosen == r.chosen));
  BOOST_TEST(same_bits(q->weights, r.weights));

  std::vector<float> share(r.size());
  BOOST_REQUIRE(decode_reply(encode_reply(r.x.data(), r.size()), share.data(), share.size()));
  BOOST_TEST(same_bits(share, r.x));
  const status failed = decode_reply(encode_error_reply("group gone"), share.data(), share.size());
  BOOST_TEST(!failed);
  BOOST_TEST(test::error_text(failed) == "group gone");
}

BOOST_AUTO_TEST_CASE(every_cut_or_lengthened_message_is_rejected) {
  const routed r = route(0, 2, 12);
  const auto request = request_bytes(r, 0, 8);
  const auto reply = encode_reply(r.x.data(), r.size());
  const auto error_reply = encode_error_reply("group gone");
  std::vector<float> share(r.size());
  for (size_t n = 0; n < request.size(); ++n)
    BOOST_TEST(!decode_request({request.begin(), request.begin() + ptrdiff_t(n)}), "a request cut to " << n);
  for (size_t n = 0; n < reply.size(); ++n)
    BOOST_TEST(!decode_reply({reply.begin(), reply.begin() + ptrdiff_t(n)}, share.data(), share.size()),
               "a reply cut to " << n);
  for (size_t n = 0; n < error_reply.size(); ++n) {
    const status s = decode_reply({error_reply.begin(), error_reply.begin() + ptrdiff_t(n)}, share.data(), 1);
    BOOST_TEST(test::error_text(s).starts_with("malformed"), "an error reply cut to " << n);
  }
  for (auto bytes : {request, reply, error_reply}) {
    bytes.push_back(0);
    BOOST_TEST(!decode_request(bytes));
    BOOST_TEST(test::error_text(decode_reply(bytes, share.data(), share.size())).starts_with("malformed"));
  }
}

BOOST_AUTO_TEST_CASE(inconsistent_fields_are_rejected) {
  const routed r = route(0, 2, 13);
  const auto valid = request_bytes(r, 0, 8);
  BOOST_REQUIRE(decode_request(valid));
  // Header offsets: magic 0, layer 4, first 8, last 12, tokens 16, k 20, hidden 24.
  const std::vector<std::tuple<size_t, uint32_t, const char*>> patches = {
      {0, 0x12345678, "magic"},
      {4, uint32_t(-1), "negative layer"},
      {8, 8, "empty range"},
      {8, uint32_t(-2), "negative first"},
      {16, uint32_t(-1), "negative tokens"},
      {16, 3, "more tokens"},
      {20, 0, "k of 0"},
      {24, 0, "hidden of 0"},
      {16, 0x7fffffff, "2^31 tokens"},
      {24, 0x7fffffff, "2^31 hidden"},
      {28 + 4 * r.size(), uint32_t(-3), "negative expert"}};
  for (const auto& [at, value, what] : patches) {
    auto bytes = valid;
    set_u32(bytes, at, value);
    auto q = decode_request(bytes);
    BOOST_TEST(!q, what);
    BOOST_TEST_MESSAGE(what << ": " << test::error_text(q));
  }

  const auto reply = encode_reply(r.x.data(), r.size());
  std::vector<float> share(r.size() + 1);
  BOOST_TEST(!decode_reply(reply, share.data(), r.size() + 1));  // not the size asked for
  auto unknown_kind = reply;
  set_u32(unknown_kind, 4, 7);
  BOOST_TEST(!decode_reply(unknown_kind, share.data(), r.size()));
}

// in_process_experts::run_group

BOOST_AUTO_TEST_CASE(run_group_writes_one_groups_share_and_names_a_missing_range) {
  const routed r = route(1, 17, 21);
  auto experts = experts_of({{0, 8}, {8, 16}});
  local_experts alone(model(), 8, 16);
  std::vector<float> share(r.size()), expected(r.size());
  BOOST_REQUIRE(alone.run(1, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), expected.data()));
  const status s =
      experts->run_group(8, 16, 1, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), share.data());
  BOOST_REQUIRE_MESSAGE(s, test::error_text(s));
  BOOST_TEST(same_bits(share, expected));

  const status missing =
      experts->run_group(0, 16, 1, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), share.data());
  BOOST_TEST(contains(test::error_text(missing), "[0, 16)"));
  const status no_layer =
      experts->run_group(8, 16, 9, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), share.data());
  BOOST_TEST(contains(test::error_text(no_layer), "layer 9"));
}

// expert_server and remote_experts

BOOST_AUTO_TEST_CASE_TEMPLATE(a_split_over_nodes_gives_the_bits_of_one_process, Kind, kinds) {
  cluster<Kind> c(3);
  attach(*c.experts[0], 0, 8);
  attach(*c.experts[1], 8, 16);
  attach(*c.experts[2], 0, 8);
  c.serve(1);
  c.serve(2);
  auto local_remote = c.stage({{0, 8, std::nullopt}, c.on(1, 8, 16)});
  auto remote_remote = c.stage({c.on(2, 0, 8), c.on(1, 8, 16)});
  uint32_t seed = 100;
  for (int layer = 0; layer < num_layers; ++layer)
    for (int tokens : {1, 3, 17}) {
      const routed r = route(layer, tokens, seed++);
      const auto expected = in_one_process(r);
      BOOST_TEST(same_bits(run(local_remote, r), expected), "[local, remote], layer " << layer << ", " << tokens);
      BOOST_TEST(same_bits(run(remote_remote, r), expected), "[remote, remote], layer " << layer << ", " << tokens);
    }
}

// Steps of two stages in one process at once, through one server: each takes its own reply.
BOOST_AUTO_TEST_CASE_TEMPLATE(stages_running_at_once_take_only_their_own_replies, Kind, kinds) {
  cluster<Kind> c(2);
  attach(*c.experts[0], 0, 8);
  attach(*c.experts[1], 8, 16);
  c.serve(1);
  constexpr int stages = 2, steps = 10;
  std::vector<routed> inputs;
  for (int i = 0; i < stages * steps; ++i) inputs.push_back(route(i % num_layers, 1 + i % 5, uint32_t(80 + i)));
  std::vector<std::vector<float>> outputs(inputs.size());
  std::vector<std::string> failures(stages);
  std::vector<std::thread> threads;
  for (int s = 0; s < stages; ++s)
    threads.emplace_back([&, s] {
      auto stage = c.stage({{0, 8, std::nullopt}, c.on(1, 8, 16)});
      for (int j = s * steps; j < (s + 1) * steps; ++j) {
        const routed& r = inputs[size_t(j)];
        outputs[size_t(j)].resize(r.size());
        const status st = stage.run(r.layer, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(),
                                    outputs[size_t(j)].data());
        if (!st) return void(failures[size_t(s)] = st.err().message);
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures) BOOST_TEST(f.empty(), f);
  for (size_t i = 0; i < inputs.size(); ++i) BOOST_TEST(same_bits(outputs[i], in_one_process(inputs[i])), "step " << i);
}

// A group none of whose experts is chosen is not asked: it may even be gone.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_group_without_chosen_experts_is_not_asked, Kind, kinds) {
  cluster<Kind> c(2);
  attach(*c.experts[0], 0, 8);
  c.serve(1);
  auto stage = c.stage({{0, 8, std::nullopt}, c.on(1, 8, 16)});
  const routed r = route(0, 5, 31, 0, 8);
  BOOST_TEST(same_bits(run(stage, r), in_one_process(r)));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_detached_group_fails_the_step_at_once, Kind, kinds) {
  cluster<Kind> c(2);
  attach(*c.experts[0], 0, 8);
  attach(*c.experts[1], 8, 16);
  c.serve(1);
  auto stage = c.stage({{0, 8, std::nullopt}, c.on(1, 8, 16)});
  const routed r = route(1, 3, 41);
  BOOST_TEST(same_bits(run(stage, r), in_one_process(r)));

  c.experts[1]->detach("group_108");
  std::vector<float> out(r.size());
  const auto start = std::chrono::steady_clock::now();
  const status s = stage.run(1, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), out.data());
  BOOST_TEST(seconds_since(start) < 5.0);  // the server's answer, not the 20 s timeout
  BOOST_TEST(contains(test::error_text(s), "expert group [8, 16) of layer 1 on peer"));
  BOOST_TEST(contains(test::error_text(s), "no expert group serves experts [8, 16)"));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_server_that_is_gone_fails_the_step_within_the_timeout, Kind, kinds) {
  cluster<Kind> c(2);
  attach(*c.experts[1], 8, 16);
  c.serve(1);
  const auto timeout = 500ms;
  auto stage = c.stage({c.on(1, 8, 16)}, timeout);
  const routed r = route(0, 3, 51, 8, 16);
  BOOST_TEST(same_bits(run(stage, r), in_one_process(r)));

  c.servers[1].reset();
  c.nodes[1].reset();
  std::vector<float> out(r.size());
  const auto start = std::chrono::steady_clock::now();
  const status s = stage.run(0, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), out.data());
  BOOST_TEST(seconds_since(start) < 5.5);
  BOOST_TEST(contains(test::error_text(s), "expert group [8, 16) of layer 0 on peer"));
}

// No server yet: the step times out. The server then started answers that request late;
// its reply waits in node 0's endpoint while the next step takes its own.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_reply_after_its_step_timed_out_is_not_taken_for_a_later_one, Kind, kinds) {
  cluster<Kind> c(2);
  attach(*c.experts[1], 8, 16);
  const routed early = route(0, 3, 61, 8, 16), later = route(0, 3, 62, 8, 16);
  auto impatient = c.stage({c.on(1, 8, 16)}, 300ms);
  std::vector<float> out(early.size());
  const auto start = std::chrono::steady_clock::now();
  const status s =
      impatient.run(0, early.x.data(), early.tokens, top_k, early.chosen.data(), early.weights.data(), out.data());
  BOOST_TEST(seconds_since(start) >= 0.29);
  BOOST_TEST(seconds_since(start) < 5.3);
  BOOST_TEST(contains(test::error_text(s), "expert group [8, 16) of layer 0 on peer"));
  BOOST_TEST(contains(test::error_text(s), "no reply: no message with tag"));
  // The receive waited what was left of the 300 ms once the request had gone out.
  std::smatch waited;
  const std::string text = test::error_text(s);
  BOOST_REQUIRE_MESSAGE(std::regex_search(text, waited, std::regex("within ([0-9]+) ms")), text);
  BOOST_TEST(std::stoi(waited[1]) <= 300);
  BOOST_TEST(std::stoi(waited[1]) >= 250);

  c.serve(1);
  auto stage = c.stage({c.on(1, 8, 16)});
  BOOST_TEST(same_bits(run(stage, later), in_one_process(later)));
  auto stale = c.nodes[0]->receive(make_tag(channel::moe_combine, 0, 0), channel_mask, patience);
  BOOST_REQUIRE_MESSAGE(stale, test::error_text(stale));
  std::vector<float> share(early.size());
  BOOST_REQUIRE(decode_reply(stale->bytes, share.data(), share.size()));
  BOOST_TEST(same_bits(share, in_one_process(early)));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(bad_requests_get_error_replies_or_are_dropped_and_serving_goes_on, Kind, kinds) {
  cluster<Kind> c(2);
  attach(*c.experts[1], 8, 16);
  c.serve(1);
  const routed r = route(1, 3, 71);
  const auto good = request_bytes(r, 8, 16);
  const std::vector<std::pair<std::vector<uint8_t>, const char*>> bad = {
      {{}, "malformed"},
      {test::byte_pattern(200, 3), "malformed"},
      {{good.begin(), good.end() - 5}, "malformed"},
      {request_bytes(route(1, 3, 72), 8, 16, 32), "hidden size 32"},
      {request_bytes(route(9, 3, 73), 8, 16), "layer 9 has no experts"},
      {request_bytes(r, 0, 8), "no expert group serves experts [0, 8)"}};
  const auto send = [&](uint16_t sender, uint64_t sequence, const std::vector<uint8_t>& bytes) {
    const status s = c.nodes[0]->send(c.peers[0][1], make_tag(channel::moe_dispatch, sender, sequence), bytes.data(),
                                      bytes.size(), patience);
    BOOST_REQUIRE_MESSAGE(s, test::error_text(s));
  };
  const auto reply = [&](uint16_t sender, uint64_t sequence, std::vector<float>& share) {
    auto m = c.nodes[0]->receive(make_tag(channel::moe_combine, sender, sequence), exact, patience);
    BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
    return decode_reply(m->bytes, share.data(), share.size());
  };
  for (size_t i = 0; i < bad.size(); ++i) send(0, 1000 + i, bad[i].first);
  send(7, 2000, good);  // node 7 has no peer: dropped
  send(0, 3000, good);

  std::vector<float> share(r.size());
  for (size_t i = 0; i < bad.size(); ++i)
    BOOST_TEST(contains(test::error_text(reply(0, 1000 + i, share)), bad[i].second));
  const status s = reply(0, 3000, share);
  BOOST_REQUIRE_MESSAGE(s, test::error_text(s));
  std::vector<float> expected(r.size());
  BOOST_REQUIRE(local_experts(model(), 8, 16)
                    .run(1, r.x.data(), r.tokens, top_k, r.chosen.data(), r.weights.data(), expected.data()));
  BOOST_TEST(same_bits(share, expected));
  BOOST_TEST(!c.nodes[0]->receive(make_tag(channel::moe_combine, 7, 2000), exact, 200ms));
}
