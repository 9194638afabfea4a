#define BOOST_TEST_MODULE cluster_spec
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cluster/cluster_spec.hpp"
#include "cluster/gpu_placements.hpp"

using namespace troupe;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const fs::path dir = fs::temp_directory_path() / ("troupe_cluster_spec_" + std::to_string(::getpid()));

fs::path write(const std::string& name, const std::string& text,
               fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  fs::create_directories(dir);
  const auto path = dir / name;
  fs::remove(path);
  std::ofstream(path) << text;
  fs::permissions(path, perms);
  return path;
}

cluster_spec spec_of(const std::string& text) {
  auto spec = read_cluster_spec(write("cluster.conf", text));
  BOOST_REQUIRE_MESSAGE(spec, (spec ? "" : spec.err().message));
  return std::move(spec).value();
}

std::string error_of(const std::string& text) {
  auto spec = read_cluster_spec(write("cluster.conf", text));
  BOOST_REQUIRE_MESSAGE(!spec, "parsed: " + text);
  return spec.err().message;
}

model_config model_of(int layers, int experts) {
  model_config m;
  m.num_layers = layers;
  m.num_experts = experts;
  return m;
}

// Empty when the spec fits the model, else the error.
std::string misfit(const cluster_spec& spec, const model_config& model) {
  auto v = validate_against_model(spec, model);
  return v ? "" : v.err().message;
}

bool same(const placement& p, const std::string& node, std::optional<int> gpu, int first, std::optional<int> last) {
  return p.node == node && p.gpu == gpu && p.first == first && p.last == last;
}

// Two CPU nodes (a at line 6) and what a cluster file needs around them (plaintext control
// links: the TLS keys have tests of their own): `extra` follows them, from line 10 when
// `cluster_keys` (from line 3) is one line.
std::string two_nodes(const std::string& extra, const std::string& cluster_keys = "secret = s3cret\n") {
  return "[cluster]\ninsecure = yes\n" + cluster_keys + "[model]\npath = m\n" +
         "[node.a]\naddress = 10.0.0.1\n[node.b]\naddress = 10.0.0.2\n" + extra;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_every_key_of_a_cluster_file) {
  const auto s = spec_of(
      "[cluster]\n"
      "name = demo-1\n"
      "secret = s3cret   # inline\n"
      "transport = nccl\n"
      "heartbeat_interval_ms = 500\n"
      "connection_timeout_ms = 2500\n"
      "startup_timeout_s = 30\n"
      "step_timeout_s = 9\n"
      "max_node_restarts = 50\n"
      "node_restart_window_s = 30\n"
      "certs = ../tls\n"
      "[model]\npath = ../models/q\nserved_model_name = q3\nload_format = dummy\n"
      "[gateway]\nhost = 0.0.0.0\nport = 0\napi_key = sk-1\nmax_pending = 7\nnode = tail\nrouting = prefix_aware\n"
      "send_timeout_ms = 4500\n"
      "[engine]\nmax_num_seqs = 8\nmax_num_batched_tokens = 512\nmax_model_len = 1024\nkv_cache_mb = 256\nblock_size = "
      "32\n"
      "progress_timeout_ms = 1500\npipeline_micro_batches = 3\n"
      "[node.head]\naddress = gpu-1.example.org\nport = 7100\ndevices = cuda:0,1\n"
      "[node.tail]\naddress = fd00::2\nport = 7101\ndevices = cuda:3\n"
      "[replica.r_1]\nstages = head:0-23, head:1:24-35, tail:36-47\nexperts = tail:64-127, head:1:0-63\nweight = 2.5\n"
      "[replica.r-2]\nstages = tail:0-47\nweight = 0\nstart = no\n");
  BOOST_TEST(s.is_cluster);
  BOOST_TEST(s.file == dir / "cluster.conf");
  BOOST_TEST(s.cluster.name == "demo-1");
  BOOST_TEST(s.cluster.secret == "s3cret");
  BOOST_TEST((s.cluster.transport == transport_kind::nccl));
  BOOST_TEST(s.cluster.heartbeat_interval.count() == 500);
  BOOST_TEST(s.cluster.connection_timeout.count() == 2500);
  BOOST_TEST(s.cluster.startup_timeout.count() == 30);
  BOOST_TEST(s.cluster.step_timeout.count() == 9);
  BOOST_TEST(s.cluster.max_node_restarts == 50);
  BOOST_TEST(s.cluster.node_restart_window.count() == 30);
  BOOST_TEST(s.cluster.certs == (dir / "../tls").lexically_normal());
  BOOST_TEST(!s.cluster.insecure);
  BOOST_TEST(s.model.path == (dir / "../models/q").lexically_normal());
  BOOST_TEST(s.model.served_model_name == "q3");
  BOOST_TEST((s.model.load_format == weight_format::dummy));
  BOOST_TEST(s.gateway.host == "0.0.0.0");
  BOOST_TEST(s.gateway.port == 0);
  BOOST_TEST(s.gateway.api_key == "sk-1");
  BOOST_TEST(s.gateway.max_pending == 7);
  BOOST_TEST(s.gateway.node == "tail");
  BOOST_TEST(s.gateway.routing == "prefix_aware");
  BOOST_TEST(s.engine.max_num_seqs == 8);
  BOOST_TEST(s.engine.max_num_batched_tokens == 512);
  BOOST_TEST(s.engine.max_model_len == 1024);
  BOOST_TEST(s.engine.kv_cache_mb == 256);
  BOOST_TEST(s.engine.block_size == 32);
  BOOST_TEST(s.engine.progress_timeout.count() == 1500);
  BOOST_TEST(s.engine.pipeline_micro_batches == 3);
  BOOST_TEST(s.gateway.send_timeout.count() == 4500);
  BOOST_REQUIRE(s.nodes.size() == 2);
  BOOST_TEST(s.nodes[0].name == "head");
  BOOST_TEST(s.nodes[0].address == "gpu-1.example.org");
  BOOST_TEST(s.nodes[0].port == 7100);
  BOOST_TEST(s.nodes[0].gpus == (std::vector<int>{0, 1}));
  BOOST_TEST(s.nodes[0].line == 32);
  BOOST_TEST(s.nodes[1].address == "fd00::2");
  BOOST_TEST(s.nodes[1].gpus == std::vector<int>{3});
  BOOST_TEST(s.node("tail") == &s.nodes[1]);
  BOOST_TEST(s.node("nobody") == nullptr);
  BOOST_REQUIRE(s.replicas.size() == 2);
  const auto& r = s.replicas[0];
  BOOST_TEST(r.name == "r_1");
  BOOST_TEST(r.weight == 2.5);
  BOOST_TEST(r.line == 40);
  BOOST_REQUIRE(r.stages.size() == 3);
  BOOST_TEST(same(r.stages[0], "head", 0, 0, 23));  // no GPU given: the node's first
  BOOST_TEST(same(r.stages[1], "head", 1, 24, 35));
  BOOST_TEST(same(r.stages[2], "tail", 3, 36, 47));
  BOOST_TEST(r.stages[2].line == 41);
  BOOST_REQUIRE(r.experts.size() == 2);  // file order
  BOOST_TEST(same(r.experts[0], "tail", 3, 64, 127));
  BOOST_TEST(same(r.experts[1], "head", 1, 0, 63));
  BOOST_TEST(r.experts[1].line == 42);
  const auto& r2 = s.replicas[1];
  BOOST_TEST(r2.name == "r-2");
  BOOST_TEST(r2.weight == 0);
  BOOST_TEST(r.start);
  BOOST_TEST(!r2.start);                  // a standby, started at runtime
  BOOST_REQUIRE(r2.experts.size() == 1);  // none given: one group beside the first stage
  BOOST_TEST(same(r2.experts[0], "tail", 3, 0, std::nullopt));
  BOOST_TEST(misfit(s, model_of(48, 128)) == "");
}

// A node in a network namespace is started by the head, there, at whatever address it has
// there: port 0 at an address off the loopback. So may the gateway's node, which is the
// head and listens on no control port.
BOOST_AUTO_TEST_CASE(a_node_in_a_network_namespace_takes_port_0_at_its_address) {
  const auto s =
      spec_of(two_nodes("[gateway]\nnode = c\n[node.c]\naddress = 10.231.0.1\nport = 0\n"
                        "[node.d]\naddress = 10.231.0.2\nport = 0\nnetns = chaos_d\n"));
  BOOST_REQUIRE(s.nodes.size() == 4);
  BOOST_TEST(s.nodes[3].netns == "chaos_d");
  BOOST_TEST(s.nodes[3].port == 0);
  BOOST_TEST(s.nodes[2].port == 0);
  BOOST_TEST(s.nodes[0].netns == "");
}

BOOST_AUTO_TEST_CASE(a_cluster_file_leaves_out_what_has_a_default) {
  const auto s = spec_of("[model]\npath = m/\n[node.solo]\naddress = 127.0.0.1\nport = 0\n[replica.main]\n");
  BOOST_TEST(s.is_cluster);
  BOOST_TEST(s.cluster.name == "troupe");
  BOOST_TEST(s.cluster.secret.empty());  // one node: nobody else joins
  BOOST_TEST((s.cluster.transport == transport_kind::ucx));
  BOOST_TEST((s.cluster.heartbeat_interval == 1000ms));
  BOOST_TEST((s.cluster.connection_timeout == 5000ms));
  BOOST_TEST((s.cluster.startup_timeout == 120s));
  BOOST_TEST((s.cluster.step_timeout == 60s));
  BOOST_TEST(s.cluster.max_node_restarts == 20);
  BOOST_TEST((s.cluster.node_restart_window == 60s));
  BOOST_TEST(s.model.path == dir / "m");
  BOOST_TEST(s.model.served_model_name == "m");
  BOOST_TEST((s.model.load_format == weight_format::safetensors));
  BOOST_TEST(s.gateway.host == "127.0.0.1");
  BOOST_TEST(s.gateway.port == 8000);
  BOOST_TEST(s.gateway.api_key.empty());
  BOOST_TEST(s.gateway.max_pending == 1024);
  BOOST_TEST(s.gateway.node == "solo");
  BOOST_TEST(s.engine.max_num_seqs == 64);
  BOOST_TEST(s.engine.pipeline_micro_batches == 0);
  BOOST_TEST(s.engine.max_num_batched_tokens == 2048);
  BOOST_TEST(s.engine.max_model_len == 0);
  BOOST_TEST(s.engine.kv_cache_mb == 0);
  BOOST_TEST(s.engine.block_size == 16);
  BOOST_TEST(s.nodes[0].gpus.empty());
  BOOST_REQUIRE(s.replicas.size() == 1);
  BOOST_TEST(s.replicas[0].weight == 1);
  BOOST_REQUIRE(s.replicas[0].stages.size() == 1);
  BOOST_TEST(same(s.replicas[0].stages[0], "solo", std::nullopt, 0, std::nullopt));
  BOOST_TEST(same(s.replicas[0].experts[0], "solo", std::nullopt, 0, std::nullopt));
  BOOST_TEST(misfit(s, model_of(48, 128)) == "");
  BOOST_TEST(misfit(s, model_of(2, 0)) == "");
}

BOOST_AUTO_TEST_CASE(without_replicas_a_cluster_runs_one_main_on_the_gateway_node) {
  const auto s = spec_of(two_nodes("[gateway]\nnode = b\n[node.c]\naddress = 10.0.0.3\ndevices = cuda:4,5\n"));
  BOOST_REQUIRE(s.replicas.size() == 1);
  BOOST_TEST(s.replicas[0].name == "main");
  BOOST_TEST(same(s.replicas[0].stages[0], "b", std::nullopt, 0, std::nullopt));
  BOOST_TEST(same(s.replicas[0].experts[0], "b", std::nullopt, 0, std::nullopt));
  BOOST_TEST(s.nodes[2].port == 7100);
  BOOST_TEST(s.nodes[2].gpus == (std::vector<int>{4, 5}));
}

BOOST_AUTO_TEST_CASE(the_example_cluster_file_parses_and_fits_the_demo_model) {
  auto s = read_cluster_spec(fs::path(TROUPE_SOURCE_DIR) / "docs/cluster.example.conf");
  BOOST_REQUIRE_MESSAGE(s, (s ? "" : s.err().message));
  BOOST_TEST(s->is_cluster);
  BOOST_TEST(s->nodes.size() == 3);
  for (const auto& n : s->nodes) BOOST_TEST((n.address == "127.0.0.1" && n.port == 0));
  BOOST_TEST(s->model.path == (fs::path(TROUPE_SOURCE_DIR) / "models/demo").lexically_normal());
  BOOST_REQUIRE(s->replicas.size() == 1);
  BOOST_TEST(s->replicas[0].stages.size() == 2);
  BOOST_TEST(s->replicas[0].experts.size() == 2);
  BOOST_TEST(misfit(*s, model_of(4, 16)) == "");  // models/demo's shape
}

BOOST_AUTO_TEST_CASE(the_repo_cluster_conf_is_a_single_node_file) {
  auto s = read_cluster_spec(fs::path(TROUPE_SOURCE_DIR) / "cluster.conf");
  BOOST_REQUIRE_MESSAGE(s, (s ? "" : s.err().message));
  BOOST_TEST(!s->is_cluster);
  BOOST_REQUIRE(s->nodes.size() == 1);
  BOOST_TEST(s->nodes[0].name == "local");
  BOOST_TEST(s->nodes[0].expert_groups == 1);
  BOOST_TEST(s->engine.pipeline_stages == 1);
  BOOST_TEST(s->gateway.node == "local");
  BOOST_TEST(s->replicas.empty());
  BOOST_TEST(s->model.served_model_name == "demo");
}

BOOST_AUTO_TEST_CASE(a_single_node_file_may_leave_out_the_node_and_the_address) {
  const auto s = spec_of("[engine]\npipeline_stages = 2\n");
  BOOST_TEST(!s.is_cluster);
  BOOST_TEST(s.nodes.empty());
  BOOST_TEST(s.engine.pipeline_stages == 2);
  BOOST_TEST(s.model.path.empty());
  BOOST_TEST(s.gateway.node.empty());
  const auto one = spec_of("[node.x]\ndevices = cuda\nexpert_groups = 4\n");
  BOOST_TEST(one.nodes[0].address.empty());
  BOOST_TEST(one.nodes[0].gpus == std::vector<int>{0});
  BOOST_TEST(one.nodes[0].expert_groups == 4);
}

BOOST_AUTO_TEST_CASE(a_secret_file_is_read_and_trimmed) {
  write("secret", "  t0ken\n\n");
  const auto s = spec_of(two_nodes("", "secret_file = secret\n"));
  BOOST_TEST(s.cluster.secret == "  t0ken");
}

BOOST_AUTO_TEST_CASE(placement_text_and_order_of_expert_groups) {
  const auto s = spec_of(two_nodes("[replica.x]\nstages = a:0-9, b:10-19\nexperts = b:8-15, a:0-7\n"));
  BOOST_TEST(same(s.replicas[0].experts[0], "b", std::nullopt, 8, 15));
  BOOST_TEST(misfit(s, model_of(20, 16)) == "");
}

// Each bad file: the line its error names and words the message must hold.
struct bad_file {
  std::string text;
  int line;
  std::vector<std::string> words;
};

BOOST_AUTO_TEST_CASE(every_mistake_names_file_line_and_what_is_expected) {
  fs::permissions(write("open_secret", "x\n"), fs::perms::owner_read | fs::perms::group_read);
  write("empty_secret", "\n");
  const std::vector<bad_file> cases = {
      // syntax
      {"[cluster\nname = x\n", 1, {"section header must end with ']'"}},
      {"[]\n", 1, {"needs a name"}},
      {"[model]\npath\n", 2, {"expected `key = value`"}},
      {"[model]\n= x\n", 2, {"the key is missing"}},
      {"# hi\npath = x\n", 2, {"a key before any [section]"}},
      {"[model]\npath = a\n[gateway]\n[model]\n", 4, {"[model] again", "line 1"}},
      {"[engine]\nblock_size = 8\nblock_size = 16\n", 3, {"`block_size` again in [engine]", "line 2"}},
      // sections and keys
      {"[clusters]\n", 1, {"unknown section [clusters]", "cluster, model, gateway, engine, node.NAME, replica.NAME"}},
      {"[node]\n", 1, {"unknown section [node]", "node.NAME"}},
      {"[cluster]\nnmae = x\n",
       2,
       {"unknown key `nmae` in [cluster]", "connection_timeout_ms", "heartbeat_interval_ms", "certs", "insecure",
        "max_node_restarts", "name", "node_restart_window_s", "secret", "secret_file", "startup_timeout_s",
        "step_timeout_s", "transport"}},
      {"[cluster]\nmax_node_restarts = 0\n", 2, {"`max_node_restarts` must be an integer 1 or more"}},
      {"[cluster]\nnode_restart_window_s = 1.5\n", 2, {"`node_restart_window_s`"}},
      {"[engine]\nmax_num_seqs = 8\nmax_num_seqz = 3\n", 3, {"unknown key `max_num_seqz` in [engine]"}},
      {"[node.a]\ngpus = 1\n", 2, {"unknown key `gpus` in [node.a]", "address", "devices", "port"}},
      {"[replica.r]\nstage = a:0-1\n", 2, {"unknown key `stage` in [replica.r]", "experts", "stages", "weight"}},
      {"[node.Head]\n", 1, {"node name", "lowercase", "\"Head\""}},
      {"[replica.a b]\n", 1, {"replica name", "\"a b\""}},
      {"[cluster]\nname = My Cluster\n", 2, {"cluster name"}},
      {"[model]\nserved_model_name =\n", 2, {"`served_model_name` needs a value"}},
      // values
      {"[gateway]\nport = 70000\n", 2, {"`port` must be an integer from 0 to 65535", "\"70000\""}},
      {"[gateway]\nport = 80a\n", 2, {"`port` must be an integer", "\"80a\""}},
      {"[gateway]\nmax_pending = 0\n", 2, {"`max_pending` must be an integer 1 or more"}},
      {"[engine]\nkv_cache_mb = -1\n", 2, {"`kv_cache_mb` must be an integer 0 or more"}},
      {"[engine]\nmax_num_seqs = 99999999999\n", 2, {"`max_num_seqs` must be an integer"}},
      {"[engine]\npipeline_micro_batches = -1\n", 2, {"`pipeline_micro_batches` must be an integer 0 or more"}},
      {"[cluster]\nheartbeat_interval_ms = 0\n", 2, {"`heartbeat_interval_ms` must be an integer 1 or more"}},
      {"[cluster]\nstep_timeout_s = -5\n", 2, {"`step_timeout_s` must be an integer 1 or more"}},
      {"[cluster]\nstartup_timeout_s = 0\n", 2, {"`startup_timeout_s`", "1 or more"}},
      {"[cluster]\nconnection_timeout_ms = 0\n", 2, {"`connection_timeout_ms`", "1 or more"}},
      {"[cluster]\nheartbeat_interval_ms = 2000\nconnection_timeout_ms = 2000\n",
       3,
       {"connection_timeout_ms (2000) must be longer than heartbeat_interval_ms (2000)"}},
      {"[cluster]\ntransport = tcp\n", 2, {"`transport` must be ucx or nccl", "\"tcp\""}},
      {"[model]\nload_format = dumy\n", 2, {"`load_format` must be safetensors or dummy", "\"dumy\""}},
      {"[gateway]\nrouting = random\n",
       2,
       {"`routing` must be round_robin or least_load or prefix_aware", "\"random\""}},
      {"[node.a]\naddress = 10.0.0.256\n",
       2,
       {"`address` must be a host name or an IPv4 or IPv6 address", "10.0.0.256"}},
      {"[node.a]\naddress = my host\n", 2, {"`address`", "\"my host\""}},
      {"[gateway]\nhost = -bad-\n", 2, {"`host` must be a host name"}},
      {"[node.a]\ndevices = gpu\n", 2, {"`devices` must be cpu, cuda or cuda:ORDINALS", "\"gpu\""}},
      {"[node.a]\ndevices = cuda:0,x\n", 2, {"`devices` must be"}},
      {"[node.a]\ndevices = cuda:1,1\n", 2, {"lists GPU 1 twice"}},
      {"[node.a]\nexpert_groups = 0\n", 2, {"`expert_groups` must be an integer 1 or more"}},
      // placements
      {two_nodes("[replica.r]\nstages = a:5-3\n"), 11, {"`stages`", "item \"a:5-3\"", "runs backwards (5 > 3)"}},
      {two_nodes("[replica.r]\nstages = a:-1-3\n"), 11, {"item \"a:-1-3\"", "first-last"}},
      {two_nodes("[replica.r]\nstages = a:0-2147483647\n"), 11, {"first-last, two numbers from 0 to 999999"}},
      {two_nodes("[replica.r]\nstages = a\n"),
       11,
       {"item \"a\"", "expected node[:gpu]:first-last (as in a:0-23, b:1:24-47)"}},
      {two_nodes("[replica.r]\nstages = a:0-1,\n"), 11, {"item \"\"", "node[:gpu]:first-last"}},
      {two_nodes("[replica.r]\nexperts = a:x:0-3\n"), 11, {"`experts`", "the GPU must be an ordinal"}},
      {two_nodes("[replica.r]\nstages = a:0:1:0-3\n"), 11, {"expected node[:gpu]:first-last"}},
      {two_nodes("[replica.r]\nstages = :0-3\n"), 11, {"the node name is missing"}},
      {two_nodes("[replica.r]\nweight = -1\n"), 11, {"`weight` must be a number, 0 or more", "\"-1\""}},
      {two_nodes("[replica.r]\nweight = nan\n"), 11, {"`weight` must be a number"}},
      // nodes
      {two_nodes("[replica.r]\nstages = a:0-9, c:10-19\n"),
       11,
       {"replica r: stage c:10-19 is on node `c`, which no [node.c] defines", "(nodes: a, b)"}},
      {two_nodes("[replica.r]\nstages = a:0-9\nexperts = z:0-7\n"),
       12,
       {"replica r: expert group z:0-7", "no [node.z]"}},
      {two_nodes("[gateway]\nnode = head\n"), 11, {"[gateway] node `head` is not defined"}},
      {two_nodes("[node.c]\naddress = 10.0.0.1\n"),
       10,
       {"node c has the address and port of node a (line 6)", "10.0.0.1 port 7100"}},
      {two_nodes("[node.c]\naddress = fd00:0::1\nport = 7\n[node.d]\naddress = FD00::1\nport = 7\n"),
       13,
       {"node d has the address and port of node c (line 10)"}},
      {two_nodes("[node.c]\naddress = Gpu-1\n[node.d]\naddress = gpu-1\n"),
       12,
       {"node d has the address and port of node c"}},
      {two_nodes("[node.c]\naddress = 10.0.0.9\nport = 0\n"), 12, {"port 0", "node c at 10.0.0.9 needs a fixed port"}},
      {two_nodes("[node.c]\naddress = 10.0.0.9\nport = 7\nnetns = n1\n"),
       13,
       {"`netns` is for a node of a cluster that `troupe cluster up` starts on this host (port 0)"}},
      {two_nodes("[node.c]\naddress = 10.0.0.9\nport = 0\nnetns = a/b\n"), 13, {"name of a network namespace", "a/b"}},
      {two_nodes("[gateway]\nnode = c\n[node.c]\naddress = 10.0.0.9\nport = 0\nnetns = n1\n"),
       15,
       {"node c runs the gateway", "it takes no `netns`"}},
      {two_nodes("[node.c]\ndevices = cpu\n"), 10, {"[node.c] needs `address`"}},
      {two_nodes("[replica.r]\nstages = a:1:0-9\n"),
       11,
       {"replica r: stage a:1:0-9 asks for GPU 1", "computes on its CPU"}},
      {two_nodes("[node.c]\naddress = 10.0.0.3\ndevices = cuda:0,1\n[replica.r]\nstages = c:2:0-9\n"),
       14,
       {"stage c:2:0-9 asks for GPU 2, which is not among node c's devices (cuda:0,1, line 10)"}},
      {two_nodes("[node.c]\naddress = 10.0.0.3\ndevices = cuda:0\n[replica.r]\nstages = c:0-4, a:5-9\n",
                 "secret = s\ntransport = nccl\n"),
       15,
       {"transport nccl moves activations GPU to GPU", "node a computes on its CPU"}},
      {"[cluster]\nsecret = x\n[model]\npath = m\n", 1, {"a cluster needs at least one [node.NAME]"}},
      {"[cluster]\n[model]\npath = m\n[node.a]\naddress = 10.0.0.1\n[node.b]\naddress = 10.0.0.2\n",
       6,
       {"a cluster of several nodes needs a secret", "secret_file"}},
      {"[model]\npath = m\n[node.a]\naddress = 10.0.0.1\n[node.b]\naddress = 10.0.0.2\n", 5, {"needs a secret"}},
      {"[cluster]\nsecret = s\n[model]\npath = m\n[node.a]\naddress = 10.0.0.1\n[node.b]\naddress = 10.0.0.2\n",
       7,
       {"links them with mutual TLS", "`certs = DIR`", "troupe cluster certs", "`insecure = yes`"}},
      {two_nodes("", "secret = s\ncerts = tls\n"), 2, {"give `certs` or `insecure = yes`, not both"}},
      {two_nodes("", "secret = s\ninsecure = maybe\n"), 4, {"`insecure` again in [cluster]"}},
      {two_nodes("", "secret = a\nsecret_file = open_secret\n"), 4, {"`secret` or `secret_file`, not both", "line 3"}},
      {two_nodes("", "secret_file = open_secret\n"),
       3,
       {"open_secret is open to group or others (mode 0440)", "chmod 600"}},
      {two_nodes("", "secret_file = no_such_file\n"), 3, {"no_such_file is not a readable file"}},
      {two_nodes("", "secret_file = empty_secret\n"), 3, {"empty_secret is empty"}},
      {"[node.a]\naddress = 127.0.0.1\n[replica.r]\n", 1, {"a cluster file needs `path` in [model]"}},
      {two_nodes("[engine]\npipeline_stages = 2\n"), 11, {"`pipeline_stages` is for single-node files", "`stages`"}},
      {two_nodes("[node.c]\naddress = 10.0.0.3\nexpert_groups = 2\n"),
       12,
       {"`expert_groups` is for single-node files", "`experts`"}},
      // replicas
      {two_nodes("[replica.x]\nstages = a:0-9\n[replica.y]\n"),
       12,
       {"[replica.y] needs `stages` when the file has several replicas"}},
      {two_nodes("[replica.x]\nstages = a:0-9, b:5-19\n"),
       11,
       {"replica x: stage b:5-19 overlaps layers 5-9 of the stages before it", "pipeline order"}},
      {two_nodes("[replica.x]\nstages = b:10-19, a:0-9\n"),
       11,
       {"replica x: no stage holds layers 0-9 (before b:10-19)", "pipeline order"}},
      {two_nodes("[replica.x]\nstages = a:0-9, b:12-19\n"),
       11,
       {"replica x: no stage holds layers 10-11 (before b:12-19)"}},
      {two_nodes("[replica.x]\nstages = a:0-9, b:2-3\n"), 11, {"stage b:2-3 overlaps layers 2-3"}},
      {two_nodes("[replica.x]\nstages = a:0-9\nexperts = a:0-63, b:60-127\n"),
       12,
       {"replica x: expert group b:60-127 overlaps experts 60-63 of the expert groups before it"}},
      {two_nodes("[replica.x]\nstages = a:0-9\nexperts = a:0-31, b:64-127\n"),
       12,
       {"replica x: no expert group holds experts 32-63 (before b:64-127)"}},
      {two_nodes("[replica.x]\nstages = a:0-9\nexperts = b:8-15\n"), 12, {"no expert group holds experts 0-7"}},
      {two_nodes("[replica.x]\nstages = a:0-9\nweight = 0\n[replica.y]\nstages = b:0-9\nweight = 0.0\n"),
       13,
       {"no replica that starts has a weight above 0", "none would get traffic"}},
      {two_nodes("[replica.x]\nstages = a:0-9\nweight = 0\n[replica.y]\nstages = b:0-9\nstart = no\n"),
       13,
       {"no replica that starts has a weight above 0"}},
      {two_nodes("[replica.x]\nstages = a:0-9\nstart = maybe\n"), 12, {"`start` must be yes or no", "\"maybe\""}},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.text);
    BOOST_TEST_CONTEXT(c.text) {
      BOOST_TEST(message.rfind((dir / "cluster.conf").string() + ":" + std::to_string(c.line) + ": ", 0) == 0, message);
      for (const auto& w : c.words)
        BOOST_TEST(message.find(w) != std::string::npos, message << " (wanted: " << w << ")");
    }
  }
}

BOOST_AUTO_TEST_CASE(what_needs_the_model_is_checked_against_its_config) {
  const std::string head = two_nodes("[replica.main]\n");  // stages on line 11, experts on 12
  struct model_case {
    std::string lists;
    model_config model;
    std::string message;  // after "PATH:"
  };
  const std::vector<model_case> cases = {
      {"stages = a:0-19, b:20-39\nexperts = a:0-127\n", model_of(48, 128),
       "11: replica main: stages cover layers 0-39 but the model has 48 (0-47)"},
      {"stages = a:0-19, b:20-63\nexperts = a:0-127\n", model_of(48, 128),
       "11: replica main: stages cover layers 0-63 but the model has 48 (0-47)"},
      {"stages = a:0-47\nexperts = a:0-63, b:64-99\n", model_of(48, 128),
       "12: replica main: expert groups cover experts 0-99 but the model has 128 (0-127)"},
      {"stages = a:0-47\nexperts = a:0-63, b:64-255\n", model_of(48, 128),
       "12: replica main: expert groups cover experts 0-255 but the model has 128 (0-127)"},
      {"stages = a:0-47\nexperts = a:0-7\n", model_of(48, 0),
       "12: replica main: `experts` lists experts but the model has none"},
  };
  for (const auto& c : cases) {
    const auto s = spec_of(head + c.lists);
    auto v = validate_against_model(s, c.model);
    BOOST_TEST_CONTEXT(c.lists) {
      BOOST_REQUIRE(!v);
      BOOST_TEST(v.err().message == (dir / "cluster.conf").string() + ":" + c.message);
    }
  }
  BOOST_TEST(misfit(spec_of(head + "stages = a:0-47\n"), model_of(48, 0)) == "");        // default group, no experts
  BOOST_TEST(misfit(spec_of("[engine]\npipeline_stages = 3\n"), model_of(2, 4)) == "");  // serve checks its own
}

namespace {

// Two GPU nodes, g with two GPUs (line 6) and h with one (line 9); `extra` from line 12.
std::string two_gpu_nodes(const std::string& extra) {
  return "[cluster]\nsecret = s\ninsecure = yes\n[model]\npath = m\n"
         "[node.g]\naddress = 10.0.0.1\ndevices = cuda:0,1\n[node.h]\naddress = 10.0.0.2\ndevices = cuda:0\n" +
         extra;
}

// Empty when this version runs the file's GPU placements, else the error.
std::string gpu_refusal(const std::string& text) {
  auto runs = check_gpu_placements(spec_of(text));
  return runs ? "" : runs.err().message;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_replica_on_gpu_nodes_gets_a_group_of_all_experts_on_each_stage_node) {
  const auto s = spec_of(two_gpu_nodes("[replica.r]\nstages = g:0-4, g:5-9, h:10-19\n"));
  BOOST_TEST(gpu_refusal(two_gpu_nodes("[replica.r]\nstages = g:0-4, g:5-9, h:10-19\n")) == "");
  const auto& r = s.replicas[0];
  BOOST_REQUIRE(r.experts.size() == 2);  // one per node, in stage order
  BOOST_TEST(same(r.experts[0], "g", 0, 0, std::nullopt));
  BOOST_TEST(same(r.experts[1], "h", 0, 0, std::nullopt));
  BOOST_TEST(misfit(s, model_of(20, 16)) == "");
  const auto on_second_gpu = spec_of(two_gpu_nodes("[replica.r]\nstages = g:1:0-9, h:10-19\n"));
  BOOST_TEST(same(on_second_gpu.replicas[0].experts[0], "g", 1, 0, std::nullopt));
  // CPU nodes keep one group beside the first stage, which the other stages reach.
  const auto cpu = spec_of(two_nodes("[replica.r]\nstages = a:0-9, b:10-19\n"));
  BOOST_REQUIRE(cpu.replicas[0].experts.size() == 1);
  BOOST_TEST(same(cpu.replicas[0].experts[0], "a", std::nullopt, 0, std::nullopt));
  BOOST_TEST(check_gpu_placements(cpu).ok());
}

// Expert parallelism across GPUs: a stage with the group of its node in place and the
// others reached over NCCL, the same with two stages, a group beside the only stage.
BOOST_AUTO_TEST_CASE(expert_groups_of_a_gpu_replica_on_gpu_nodes_run) {
  for (const char* replica :
       {"[replica.r]\nstages = g:0-19\nexperts = g:0-7, h:8-15\n",
        "[replica.r]\nstages = g:0-9, h:10-19\nexperts = h:0-7, g:8-15\n",
        "[replica.r]\nstages = g:0-19\nexperts = h:0-15\n", "[replica.r]\nstages = g:0-19\nexperts = g:0-15\n"}) {
    BOOST_TEST(gpu_refusal(two_gpu_nodes(replica)) == "", replica);
    BOOST_TEST(misfit(spec_of(two_gpu_nodes(replica)), model_of(20, 16)) == "", replica);
  }
  const auto s = spec_of(two_gpu_nodes("[replica.r]\nstages = g:0-19\nexperts = g:0-7, h:8-15\n"));
  BOOST_TEST(same(s.replicas[0].experts[1], "h", 0, 8, 15));
}

BOOST_AUTO_TEST_CASE(what_gpu_nodes_do_not_run_yet_is_refused_naming_the_line) {
  const std::string file = (dir / "cluster.conf").string();
  const std::string cpu_node = "[node.c]\naddress = 10.0.0.3\n";  // lines 11 and 12
  BOOST_TEST(gpu_refusal(two_gpu_nodes("[replica.r]\nstages = g:0:0-9, g:1:10-19\n")) ==
             file +
                 ":13: node g runs stage g:1:10-19 of replica r on GPU 1 and stage g:0:0-9 of replica r (line 13) "
                 "on GPU 0; a node's process computes on one GPU: give each GPU a [node.NAME] of its own");
  BOOST_TEST(gpu_refusal(two_gpu_nodes(cpu_node + "[replica.r]\nstages = g:0-9, c:10-19\n")) ==
             file +
                 ":15: replica r: stage c:10-19 computes on the CPU of node c but stage g:0:0-9 on GPU 0 of node g; "
                 "a replica's stages run all on GPUs or all on CPUs (mixing them is not supported)");
  BOOST_TEST(gpu_refusal(two_gpu_nodes(cpu_node + "[replica.r]\nstages = c:0-19\nexperts = h:0-15\n")) ==
             file +
                 ":16: replica r: expert group h:0:0-15 is on GPU 0 of node h but the replica's stages compute on "
                 "CPUs; a replica runs all on GPUs or all on CPUs");
  BOOST_TEST(gpu_refusal(two_gpu_nodes(cpu_node + "[replica.r]\nstages = g:0-19\nexperts = g:0-7, c:8-15\n")) ==
             file +
                 ":16: replica r: expert group c:8-15 is on the CPU of node c but the replica's stages compute on "
                 "GPUs; a replica runs all on GPUs or all on CPUs");
  BOOST_TEST(gpu_refusal(two_gpu_nodes("[replica.r]\nstages = g:0-19\nexperts = g:0-7, g:8-15\n")) ==
             file +
                 ":14: replica r: node g holds expert groups g:0:0-7 and g:0:8-15; a GPU node holds one expert "
                 "group of a replica (one NCCL rank per GPU): give each group a [node.NAME] of its own");
  BOOST_TEST(gpu_refusal(two_gpu_nodes("[replica.r]\nstages = g:0-19\nexperts = g:1:0-7, h:8-15\n")) ==
             file +
                 ":14: node g runs expert group g:1:0-7 of replica r on GPU 1 and stage g:0:0-19 of replica r "
                 "(line 13) on GPU 0; a node's process computes on one GPU: give each GPU a [node.NAME] of its own");
  BOOST_TEST(gpu_refusal(two_gpu_nodes("[replica.x]\nstages = g:0-19\n[replica.y]\nstages = g:0-9, h:10-19\n")) ==
             file +
                 ":15: node g runs stages of replica x (line 13) and of replica y; a GPU node runs the stages of "
                 "one replica (its GPU's experts serve one replica): give each replica GPU nodes of its own");
  BOOST_TEST(gpu_refusal(two_gpu_nodes("[replica.x]\nstages = g:0-19\n[replica.y]\nstages = h:0-19\n"
                                       "experts = h:0-7, g:8-15\n")) ==
             file +
                 ":16: node g runs parts of replica x (line 13) and of replica y; a GPU node runs the parts of "
                 "one replica (its GPU's experts serve one replica): give each replica GPU nodes of its own");
  // Nine groups, one a GPU node: more than a token's rows are combined from.
  std::string nodes = "[cluster]\nsecret = s\ninsecure = yes\n[model]\npath = m\n", experts;
  for (int n = 0; n < 9; ++n) {
    nodes += "[node.n" + std::to_string(n) + "]\naddress = 10.0.0." + std::to_string(n + 1) + "\ndevices = cuda:0\n";
    experts += (n ? ", n" : "n") + std::to_string(n) + ":" + std::to_string(n) + "-" + std::to_string(n);
  }
  BOOST_TEST(gpu_refusal(nodes + "[replica.r]\nstages = n0:0-19\nexperts = " + experts + "\n") ==
             file + ":35: replica r: 9 expert groups on GPUs; expert parallelism across GPUs takes at most 8");
}

BOOST_AUTO_TEST_CASE(the_gpu_example_cluster_file_runs_and_fits_the_demo_model) {
  auto s = read_cluster_spec(fs::path(TROUPE_SOURCE_DIR) / "docs/cluster.gpu.example.conf");
  BOOST_REQUIRE_MESSAGE(s, (s ? "" : s.err().message));
  BOOST_TEST(check_gpu_placements(*s).ok());
  BOOST_REQUIRE(s->replicas.size() == 1);
  const auto& r = s->replicas[0];
  BOOST_REQUIRE(r.stages.size() == 1);
  BOOST_TEST(same(r.stages[0], "head", 0, 0, 3));
  BOOST_REQUIRE(r.experts.size() == 2);
  BOOST_TEST(same(r.experts[0], "head", 0, 0, 7));
  BOOST_TEST(same(r.experts[1], "second", 1, 8, 15));
  BOOST_TEST(misfit(*s, model_of(4, 16)) == "");
}

BOOST_AUTO_TEST_CASE(clean_up) { fs::remove_all(dir); }
