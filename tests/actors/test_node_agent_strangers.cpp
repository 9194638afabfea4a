// A node agent behind a plaintext control port (`insecure = yes`): a peer that has not
// joined the cluster (no secret proven) is refused exits and drills; the head that joined
// may stop it. Two actor systems in this process, linked by CAF's middleman on loopback.
// (An exit with reason `kill` ends any CAF actor before its handler runs: only the TLS of
// the control links keeps such a peer out.)
#define BOOST_TEST_MODULE node_agent_strangers
#include <boost/test/unit_test.hpp>

#include <caf/io/middleman.hpp>

#include "actors/message_types.hpp"
#include "actors/node_agent.hpp"
#include "cluster/join_proof.hpp"
#include "transport/in_process_transport.hpp"

using namespace troupe;

namespace {

caf::actor_system_config& control_config(caf::actor_system_config& config) {
  add_message_types(config);
  config.load<caf::io::middleman>();
  return config;
}

node_agent_options two_node_options() {
  node_agent_options o;
  o.spec.is_cluster = true;
  o.spec.cluster.name = "test";
  o.spec.cluster.secret = "the-secret";
  o.spec.cluster.insecure = true;
  o.spec.nodes = {node_spec{"head", "127.0.0.1", 0}, node_spec{"second", "127.0.0.1", 0}};
  o.node = 1;
  o.link = std::make_shared<in_process_transport>(std::make_shared<in_process_hub>());
  return o;
}

// Whether `agent` still answers a challenge (from `self`) within a second.
bool answers(caf::scoped_actor& self, const node_agent_actor& agent) {
  bool answered = false;
  self->request(agent, std::chrono::seconds(1), challenge_atom::value)
      .receive([&](const std::vector<uint8_t>&) { answered = true; }, [](const caf::error&) {});
  return answered;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_peer_that_has_not_joined_cannot_stop_or_hang_the_agent_and_the_head_can_stop_it) {
  caf::actor_system_config node_config, peer_config;
  caf::actor_system node{control_config(node_config)};
  caf::actor_system peer{control_config(peer_config)};
  auto agent = node.spawn(node_agent, two_node_options());
  auto port = node.middleman().publish(agent, 0, "127.0.0.1", true);
  BOOST_REQUIRE(port);
  caf::scoped_actor watcher{node};
  watcher->monitor(agent);

  auto remote = peer.middleman().remote_actor<node_agent_actor>("127.0.0.1", *port);
  BOOST_REQUIRE(remote);
  caf::scoped_actor stranger{peer};
  caf::anon_send_exit(*remote, caf::exit_reason::user_shutdown);
  stranger->send_exit(*remote, caf::sec::runtime_error);
  stranger->send(*remote, hang_atom::value, 60000);
  BOOST_CHECK_MESSAGE(answers(stranger, *remote), "a stranger's exit ended the agent");
  bool down = false;
  watcher->receive([&](const caf::down_msg&) { down = true; }, caf::after(std::chrono::milliseconds(200)) >> [] {});
  BOOST_CHECK(!down);

  // The same peer, once it proves the secret, is the head: its exit is obeyed.
  std::vector<uint8_t> nonce;
  stranger->request(*remote, std::chrono::seconds(5), challenge_atom::value)
      .receive([&](std::vector<uint8_t>& n) { nonce = std::move(n); }, [](const caf::error&) {});
  BOOST_REQUIRE(!nonce.empty());
  bool joined = false;
  stranger->request(*remote, std::chrono::seconds(5), join_atom::value, join_proof("the-secret", "test", nonce))
      .receive([&](const node_description&) { joined = true; }, [](const caf::error&) {});
  BOOST_REQUIRE(joined);
  stranger->send_exit(*remote, caf::exit_reason::user_shutdown);
  watcher->receive([&](const caf::down_msg&) { down = true; }, caf::after(std::chrono::seconds(10)) >> [] {});
  BOOST_CHECK_MESSAGE(down, "the joined head's exit did not end the agent");
}
