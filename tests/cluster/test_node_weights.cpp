// The weights a GPU node loads, from cluster.conf: its stages' layers (the embedding with
// layer 0, lm_head with the last), every expert of them when each stage serves its own
// layers' experts, and only its own group's experts, of every layer, under expert
// parallelism. And what such a share says it holds.
#define BOOST_TEST_MODULE node_weights
#include <boost/test/unit_test.hpp>

#include "cluster/node_weights.hpp"
#include "tests/cluster/three_gpu_nodes.hpp"

using namespace troupe;

namespace {

// 20 layers, the second dense (mlp_only_layers), 16 experts, untied embeddings.
model_config model() {
  model_config c;
  c.num_layers = 20;
  c.num_experts = 16;
  c.mlp_only_layers = {1};
  return c;
}

// The share of `node` in the three GPU nodes with `replica`.
weight_share share_of(const std::string& replica, const std::string& node) {
  const cluster_spec spec = test::three_gpu_nodes(replica);
  return weights_of_node(spec, *spec.node(node), model());
}

using range = std::pair<int, int>;

}  // namespace

BOOST_AUTO_TEST_CASE(pipeline_stages_hold_their_own_layers_and_every_expert_of_them) {
  const std::string replica = "[replica.r]\nstages = g:0-9, h:10-19\n";
  const model_config c = model();
  const weight_share first = share_of(replica, "g"), second = share_of(replica, "h");
  BOOST_TEST(first.text() == "layers 0-9");
  BOOST_TEST(second.text() == "layers 10-19");
  BOOST_TEST((first.holds_layers(0, 10) && !first.holds_layer(10)));
  BOOST_TEST((second.holds_layers(10, 20) && !second.holds_layer(9)));
  BOOST_TEST((first.experts_of(0, c) == range{0, 16}));
  BOOST_TEST((first.experts_of(1, c) == range{0, 0}));  // dense
  BOOST_TEST((first.experts_of(10, c) == range{0, 0}));
  BOOST_TEST((second.experts_of(10, c) == range{0, 16}));
  BOOST_TEST((first.holds_embedding(c) && !first.holds_lm_head(c)));
  BOOST_TEST((!second.holds_embedding(c) && second.holds_lm_head(c)));
  model_config tied = c;
  tied.tie_word_embeddings = true;  // lm_head is the embedding: the last stage holds it too
  BOOST_TEST(second.holds_embedding(tied));
}

BOOST_AUTO_TEST_CASE(expert_parallelism_holds_the_nodes_group_of_every_layer) {
  const std::string replica = "[replica.r]\nstages = g:0-19\nexperts = g:0-7, e:8-15\n";
  const model_config c = model();
  const weight_share stage = share_of(replica, "g"), group = share_of(replica, "e");
  BOOST_TEST(stage.text() == "layers 0-19 and experts 0-7 of every layer");
  BOOST_TEST((stage.experts_of(5, c) == range{0, 8}));
  BOOST_TEST(group.text() == "no layer and experts 8-15 of every layer");
  BOOST_TEST(!group.holds_layer(0));
  BOOST_TEST((group.experts_of(0, c) == range{8, 16}));
  BOOST_TEST((group.experts_of(19, c) == range{8, 16}));
  BOOST_TEST(!group.holds_embedding(c));
  BOOST_TEST(!group.holds_lm_head(c));
}

BOOST_AUTO_TEST_CASE(a_stage_whose_node_has_no_group_holds_no_expert) {
  const model_config c = model();
  const weight_share stage = share_of("[replica.r]\nstages = g:0-19\nexperts = e:0-15\n", "g");
  BOOST_TEST(stage.text() == "layers 0-19 and no expert");
  BOOST_TEST((stage.experts_of(0, c) == range{0, 0}));
}

BOOST_AUTO_TEST_CASE(pipeline_stages_that_reach_each_others_groups_hold_their_own_group_of_every_layer) {
  const std::string replica = "[replica.r]\nstages = g:0-9, h:10-19\nexperts = h:0-7, g:8-15\n";
  const model_config c = model();
  const weight_share first = share_of(replica, "g");
  BOOST_TEST(first.text() == "layers 0-9 and experts 8-15 of every layer");
  BOOST_TEST((first.experts_of(15, c) == range{8, 16}));  // served to h's stage
}

BOOST_AUTO_TEST_CASE(a_whole_share_holds_everything) {
  const model_config c = model();
  const weight_share all;
  BOOST_TEST(all.text() == "every weight");
  BOOST_TEST(all.holds_layers(0, 20));
  BOOST_TEST((all.experts_of(3, c) == range{0, 16}));
  BOOST_TEST((all.holds_embedding(c) && all.holds_lm_head(c)));
}
