#include "cli/cluster_system.hpp"

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/remote_actor.hpp>

#include <csignal>

#include "actors/message_types.hpp"
#include "cluster/tls_files.hpp"
#include "cluster/tls_peer_check.hpp"

namespace troupe::cli {

status configure_cluster_system(caf::actor_system_config& config, const cluster_spec& spec, const std::string& self) {
  add_message_types(config);
  config.load<caf::io::middleman>();
  config.set("scheduler.policy", caf::atom("sharing"));
  config.set("middleman.heartbeat-interval", caf::timespan{spec.cluster.heartbeat_interval});
  config.set("middleman.connection-timeout", caf::timespan{spec.cluster.connection_timeout});
  if (spec.cluster.insecure || spec.cluster.certs.empty()) return ok();
  const tls_files files = tls_files_of(spec, self);
  // CAF's OpenSSL module throws from its I/O thread on a file it cannot load: checked here.
  if (auto checked = check_tls_files(files); !checked)
    return error{"node " + self + "'s TLS files: " + checked.err().message};
  // OpenSSL writes to its sockets with write(2): a peer gone mid-write is an error to
  // handle, not a signal that ends the process.
  std::signal(SIGPIPE, SIG_IGN);
  config.load<caf::openssl::manager>();
  config.openssl_certificate = files.certificate.string();
  config.openssl_key = files.key.string();
  config.openssl_cafile = files.ca.string();
  return ok();
}

result<uint16_t> publish_agent(caf::actor_system& system, const node_agent_actor& agent, const std::string& address,
                               uint16_t port) {
  auto published = system.has_openssl_manager() ? caf::openssl::publish(agent, port, address.c_str(), true)
                                                : system.middleman().publish(agent, port, address.c_str(), true);
  if (!published) return error{system.render(published.error())};
  return *published;
}

reached_agent connect_agent(caf::actor_system& system, const cluster_spec& spec, const std::string& self,
                            const std::string& address, int port) {
  auto agent = system.has_openssl_manager()
                   ? caf::openssl::remote_actor<node_agent_actor>(system, address, uint16_t(port))
                   : system.middleman().remote_actor<node_agent_actor>(address, uint16_t(port));
  if (agent) return {*agent, "", false};
  reached_agent out;
  out.why = system.render(agent.error());
  if (system.has_openssl_manager()) {
    const tls_verdict verdict =
        check_tls_peer(address, port, tls_files_of(spec, self), spec.cluster.connection_timeout);
    if (!verdict.handshake_done) {
      out.why = verdict.why;
      out.lasting = verdict.lasting;
    }
  }
  return out;
}

}  // namespace troupe::cli
