// `troupe cluster check` as a user runs it: the layout of a good file, the file:line error
// and exit status 2 of a bad one.
#define BOOST_TEST_MODULE cluster_command
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "tests/support/run_command.hpp"
#include "tests/support/source_dir.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

troupe::test::command_result check(const std::string& file) {
  return troupe::test::run_command(std::string(TROUPE_BINARY) + " cluster check " + file + " 2>&1");
}

}  // namespace

BOOST_AUTO_TEST_CASE(prints_where_each_stage_and_expert_group_of_the_example_runs) {
  const auto r = check((troupe::test::source_dir() / "docs/cluster.example.conf").string());
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  for (const char* line :
       {"a cluster, 3 node(s), 1 replica(s)", "(4 layers, 16 experts)", "stage layers 0-1 on head:cpu",
        "stage layers 2-3 on second:cpu", "experts 0-7 on second:cpu", "experts 8-15 on third:cpu"})
    BOOST_TEST(r.output.find(line) != std::string::npos, "missing \"" << line << "\" in:\n" << r.output);
}

BOOST_AUTO_TEST_CASE(a_file_that_does_not_fit_its_model_exits_2_naming_the_line) {
  troupe::test::temp_dir dir("cluster_check");
  const auto file = dir.path() / "cluster.conf";
  std::ofstream(file) << "[cluster]\nsecret = s\n[model]\npath = "
                      << (troupe::test::source_dir() / "models/demo").string()
                      << "\n[node.a]\naddress = 127.0.0.1\n[replica.r]\nstages = a:0-1\n";
  const auto r = check(file.string());
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find(file.string() + ":8: replica r: stages cover layers 0-1 but the model has 4 (0-3)") !=
                 std::string::npos,
             r.output);
  BOOST_TEST(check((dir.path() / "missing.conf").string()).exit_code == 2);
}

BOOST_AUTO_TEST_CASE(the_gpu_example_splits_the_experts_over_two_gpus) {
  const auto r = check((troupe::test::source_dir() / "docs/cluster.gpu.example.conf").string());
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  for (const char* line : {"a cluster, 2 node(s), 1 replica(s)", "stage layers 0-3 on head:cuda:0",
                           "experts 0-7 on head:cuda:0", "experts 8-15 on second:cuda:1"})
    BOOST_TEST(r.output.find(line) != std::string::npos, "missing \"" << line << "\" in:\n" << r.output);
}

BOOST_AUTO_TEST_CASE(two_expert_groups_of_a_replica_on_one_gpu_node_exit_2_naming_the_line) {
  troupe::test::temp_dir dir("cluster_check_gpu");
  const auto file = dir.path() / "cluster.conf";
  std::ofstream(file)
      << "[cluster]\nsecret = s\ninsecure = yes\n[model]\npath = "
      << (troupe::test::source_dir() / "models/demo").string()
      << "\n[node.a]\naddress = 127.0.0.1\nport = 0\ndevices = cuda:0\n[node.b]\naddress = 127.0.0.1\n"
      << "port = 0\ndevices = cuda:1\n[replica.r]\nstages = a:0-1, b:2-3\nexperts = a:0-7, b:8-11, b:12-15\n";
  const auto r = check(file.string());
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find(file.string() + ":16: replica r: node b holds expert groups b:1:8-11 and b:1:12-15; a GPU "
                                           "node holds one expert group of a replica") != std::string::npos,
             r.output);
}
