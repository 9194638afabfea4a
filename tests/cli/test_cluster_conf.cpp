#define BOOST_TEST_MODULE cluster_conf
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/cluster_conf.hpp"

using troupe::cli::cluster_conf_flags;
namespace fs = std::filesystem;

namespace {

const fs::path dir = fs::temp_directory_path() / ("troupe_cluster_conf_" + std::to_string(::getpid()));

fs::path write(const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / "cluster.conf") << text;
  return dir / "cluster.conf";
}

std::string error_of(const std::string& text) {
  auto flags = cluster_conf_flags(write(text));
  BOOST_REQUIRE_MESSAGE(!flags, "read: " + text);
  return flags.err().message;
}

}  // namespace

// What cluster_conf_flags gave for the repo's cluster.conf before the cluster format.
BOOST_AUTO_TEST_CASE(the_repo_cluster_conf_gives_the_flags_it_always_gave) {
  const fs::path source = TROUPE_SOURCE_DIR;
  auto flags = cluster_conf_flags(source / "cluster.conf");
  BOOST_REQUIRE_MESSAGE(flags, (flags ? "" : flags.err().message));
  const std::vector<std::string> expected = {"--model",
                                             (source / "models/demo").lexically_normal().string(),
                                             "--served-model-name",
                                             "demo",
                                             "--load-format",
                                             "safetensors",
                                             "--host",
                                             "127.0.0.1",
                                             "--port",
                                             "8000",
                                             "--api-key",
                                             "",
                                             "--max-pending",
                                             "1024",
                                             "--max-num-seqs",
                                             "64",
                                             "--max-num-batched-tokens",
                                             "2048",
                                             "--max-model-len",
                                             "0",
                                             "--kv-cache-mb",
                                             "0",
                                             "--block-size",
                                             "16",
                                             "--pipeline-stages",
                                             "1",
                                             "--device",
                                             "cpu",
                                             "--expert-groups",
                                             "1"};
  BOOST_TEST(*flags == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(only_the_keys_a_file_sets_become_flags) {
  auto flags =
      cluster_conf_flags(write("[engine]\npipeline_stages = 2\npipeline_micro_batches = 1\n[node.gpu]\naddress = "
                               "10.0.0.1\nport = 7200\ndevices = cuda:0\n"));
  BOOST_REQUIRE(flags);
  BOOST_TEST(*flags == (std::vector<std::string>{"--pipeline-stages", "2", "--pipeline-micro-batches", "1", "--device",
                                                 "cuda"}),
             boost::test_tools::per_element());
  auto cuda = cluster_conf_flags(write("[node.gpu]\ndevices = cuda\n"));
  BOOST_REQUIRE(cuda);
  BOOST_TEST(*cuda == (std::vector<std::string>{"--device", "cuda"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_connection_cap_and_the_keys_are_gateway_keys) {
  auto flags = cluster_conf_flags(write("[gateway]\nmax_connections = 77\nadmin_key = sk-a\nprotect_metrics = yes\n"));
  BOOST_REQUIRE_MESSAGE(flags, (flags ? "" : flags.err().message));
  BOOST_TEST(
      *flags == (std::vector<std::string>{"--max-connections", "77", "--admin-key", "sk-a", "--protect-metrics"}),
      boost::test_tools::per_element());
  flags = cluster_conf_flags(write("[gateway]\napi_key = k\nprotect_metrics = no\n"));
  BOOST_REQUIRE(flags);
  BOOST_TEST(*flags == (std::vector<std::string>{"--api-key", "k"}), boost::test_tools::per_element());
  BOOST_TEST(error_of("[gateway]\nmax_connections = 0\n").find("`max_connections` must be an integer 1 or more") !=
             std::string::npos);
  BOOST_TEST(error_of("[gateway]\nprotect_metrics = yes\n")
                 .find(":2: protect_metrics = yes needs an `api_key` or an `admin_key` to ask for") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_clusters_file_is_refused_naming_the_command_that_starts_it) {
  const std::string start = ": this file describes a cluster: start it with `troupe cluster up ";
  BOOST_TEST(error_of("[model]\npath = m\n[node.a]\naddress = 10.0.0.1\n[node.b]\naddress = 10.0.0.2\n")
                 .find((dir / "cluster.conf").string() + ":5" + start) == 0);
  BOOST_TEST(error_of("[node.a]\n[replica.main]\n").find(":2" + start) != std::string::npos);
  BOOST_TEST(error_of("# c\n[cluster]\nname = x\n").find(":2" + start) != std::string::npos);
  const fs::path example = fs::path(TROUPE_SOURCE_DIR) / "docs/cluster.example.conf";
  auto refused = cluster_conf_flags(example);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.err().message.find(start + example.string() + "`") != std::string::npos, refused.err().message);
}

BOOST_AUTO_TEST_CASE(a_single_node_files_mistakes_name_the_line) {
  BOOST_TEST(error_of("[engine]\nmax_num_seqs = 8\nmax_num_seqz = 3\n")
                 .find("cluster.conf:3: unknown key `max_num_seqz` in [engine]") != std::string::npos);
  BOOST_TEST(
      error_of("[model]\nload_format = dumy\n").find("cluster.conf:2: `load_format` must be safetensors or dummy") !=
      std::string::npos);
  BOOST_TEST(
      error_of("[node.x]\ndevices = cuda:1\n").find("cluster.conf:2: `troupe serve` runs on the CPU or one GPU") !=
      std::string::npos);
}

BOOST_AUTO_TEST_CASE(clean_up) { fs::remove_all(dir); }
