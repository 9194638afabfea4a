#pragma once
// The serving end of MoE dispatch between processes. In a process that holds expert
// groups, one thread takes every dispatch request (channel moe_dispatch) from the
// transport, runs the one group it names on this process's in_process_experts, and sends
// that group's share to the node that asked (channel moe_combine, under the request's own
// sender and sequence). Requests are served one at a time, in arrival order.
//
// A request the groups cannot serve (its group crashed and is restarting) gets an error
// reply. Bytes that are no request get one too, when their sender can be told, and are
// dropped otherwise; the first of each kind of bad input is logged to stderr. No input
// stops the server.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport/in_process_experts.hpp"
#include "transport/transport.hpp"

namespace troupe {

class expert_server {
 public:
  // The peer id on the server's transport of the node with this index in the cluster (the
  // sender field of a tag); none when this process has no link to it.
  using peer_lookup = std::function<std::optional<int>(int node)>;

  // `poll` bounds how long the thread waits for a request before it looks whether it
  // should stop; `reply_timeout` bounds each reply's send.
  expert_server(std::shared_ptr<transport> transport, std::shared_ptr<in_process_experts> experts,
                peer_lookup peer_of_node, std::chrono::milliseconds reply_timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  // Stops and joins the thread.
  ~expert_server();
  expert_server(const expert_server&) = delete;
  expert_server& operator=(const expert_server&) = delete;

 private:
  void serve_loop();
  void serve(const transport::message& request);
  void reply(int peer, uint64_t tag, const std::vector<uint8_t>& bytes);

  std::shared_ptr<transport> transport_;
  std::shared_ptr<in_process_experts> experts_;
  peer_lookup peer_of_node_;
  std::chrono::milliseconds reply_timeout_, poll_;
  std::vector<float> out_;  // the share being computed; the thread's own
  bool logged_malformed_ = false, logged_no_peer_ = false, logged_reply_failure_ = false;
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace troupe
