// The rank map of expert parallelism across GPUs: for each stage of a GPU replica, the
// experts its own process serves and the groups it reaches over NCCL (rank r + 1 the r-th
// of them, in the file's order); for each group, the stages that reach it; for each node,
// its stages' peers and its group.
#define BOOST_TEST_MODULE expert_ranks
#include <boost/test/unit_test.hpp>

#include "cluster/expert_ranks.hpp"
#include "tests/cluster/three_gpu_nodes.hpp"

using namespace troupe;

namespace {

constexpr int experts = 16;

// `replica` in the three GPU nodes.
replica_spec replica_of(const std::string& replica) { return test::three_gpu_nodes(replica).replicas.front(); }

std::string text(const stage_expert_ranks& r) {
  std::string t = "local " + std::to_string(r.local_first) + "-" + std::to_string(r.local_last) + ", peers";
  for (const expert_rank& p : r.peers)
    t += " " + p.node + "(group " + std::to_string(p.group) + ") " + std::to_string(p.first_expert) + "-" +
         std::to_string(p.last_expert);
  return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_stage_serves_its_nodes_group_and_reaches_the_others_in_file_order) {
  const auto r = replica_of("[replica.r]\nstages = g:0-19\nexperts = g:0-3, e:10-15, h:4-9\n");
  BOOST_TEST(text(expert_ranks_of_stage(r, 0, experts)) == "local 0-4, peers e(group 1) 10-16 h(group 2) 4-10");
  BOOST_TEST(stages_reaching_group(r, 0, experts).empty());
  BOOST_TEST((stages_reaching_group(r, 1, experts) == std::vector<int>{0}));
  BOOST_TEST((stages_reaching_group(r, 2, experts) == std::vector<int>{0}));
}

BOOST_AUTO_TEST_CASE(pipeline_stages_on_two_gpus_each_reach_the_others_group) {
  const auto r = replica_of("[replica.r]\nstages = g:0-9, h:10-19\nexperts = h:0-7, g:8-15\n");
  BOOST_TEST(text(expert_ranks_of_stage(r, 0, experts)) == "local 8-16, peers h(group 0) 0-8");
  BOOST_TEST(text(expert_ranks_of_stage(r, 1, experts)) == "local 0-8, peers g(group 1) 8-16");
  BOOST_TEST((stages_reaching_group(r, 0, experts) == std::vector<int>{0}));
  BOOST_TEST((stages_reaching_group(r, 1, experts) == std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(a_stage_without_a_group_on_its_node_reaches_every_expert) {
  const auto r = replica_of("[replica.r]\nstages = g:0-19\nexperts = e:0-15\n");
  BOOST_TEST(text(expert_ranks_of_stage(r, 0, experts)) == "local 0-0, peers e(group 0) 0-16");
}

BOOST_AUTO_TEST_CASE(stages_of_a_replica_without_listed_experts_reach_nothing) {
  const auto r = replica_of("[replica.r]\nstages = g:0-9, h:10-19\n");
  for (size_t k = 0; k < 2; ++k) BOOST_TEST(text(expert_ranks_of_stage(r, k, experts)) == "local 0-16, peers");
  for (size_t g = 0; g < r.experts.size(); ++g) BOOST_TEST(stages_reaching_group(r, g, experts).empty());
}

BOOST_AUTO_TEST_CASE(a_node_counts_its_stages_peers_and_whether_others_reach_its_group) {
  const auto r = replica_of("[replica.r]\nstages = g:0-9, h:10-19\nexperts = g:0-3, e:10-15, h:4-9\n");
  const node_expert_ranks g = expert_ranks_of_node(r, "g", experts);
  BOOST_TEST((g.stage_peers == std::vector<size_t>{2}));
  BOOST_TEST((g.group == std::pair{0, 4}));
  BOOST_TEST(g.group_reached);  // by h's stage
  const node_expert_ranks e = expert_ranks_of_node(r, "e", experts);
  BOOST_TEST(e.stage_peers.empty());
  BOOST_TEST((e.group == std::pair{10, 16}));
  BOOST_TEST((e.group_reached && e.spread()));
  const auto whole = replica_of("[replica.r]\nstages = g:0-9, h:10-19\n");
  BOOST_TEST(!expert_ranks_of_node(whole, "g", experts).spread());
  BOOST_TEST(!expert_ranks_of_node(whole, "e", experts).group);
}
