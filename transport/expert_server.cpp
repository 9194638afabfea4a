#include "transport/expert_server.hpp"

#include <cstdio>

#include "transport/expert_wire.hpp"
#include "transport/tags.hpp"

namespace troupe {
namespace {

// Only the first: a peer that keeps sending bad bytes must not flood the log.
void log_first(bool& logged, const std::string& line) {
  if (logged) return;
  logged = true;
  std::fprintf(stderr, "troupe: expert_server: %s (further ones are not logged)\n", line.c_str());
}

}  // namespace

expert_server::expert_server(std::shared_ptr<transport> transport, std::shared_ptr<in_process_experts> experts,
                             peer_lookup peer_of_node, std::chrono::milliseconds reply_timeout,
                             std::chrono::milliseconds poll)
    : transport_(std::move(transport)),
      experts_(std::move(experts)),
      peer_of_node_(std::move(peer_of_node)),
      reply_timeout_(reply_timeout),
      poll_(poll),
      thread_([this] { serve_loop(); }) {}

expert_server::~expert_server() {
  stopping_ = true;
  thread_.join();
}

void expert_server::serve_loop() {
  while (!stopping_) {
    // A timeout here only means no request came: look at stopping_ and wait again.
    auto request = transport_->receive(make_tag(channel::moe_dispatch, 0, 0), channel_mask, poll_);
    if (request) serve(*request);
  }
}

void expert_server::serve(const transport::message& m) {
  const int node = tag_sender(m.tag);
  const uint64_t reply_tag = make_tag(channel::moe_combine, tag_sender(m.tag), tag_sequence(m.tag));
  const std::optional<int> peer = peer_of_node_(node);
  if (!peer) {
    log_first(logged_no_peer_,
              "dropped a dispatch request from node " + std::to_string(node) + ", which has no peer here");
    return;
  }
  auto decoded = decode_request(m.bytes);
  if (decoded && decoded->header.hidden != experts_->hidden_size())
    decoded = error{"hidden size " + std::to_string(decoded->header.hidden) + " in a dispatch request, " +
                    std::to_string(experts_->hidden_size()) + " here"};
  if (!decoded) {
    log_first(logged_malformed_, "answered a bad dispatch request from node " + std::to_string(node) +
                                     " with an error: " + decoded.err().message);
    return reply(*peer, reply_tag, encode_error_reply(decoded.err().message));
  }
  const dispatch_request& q = *decoded;
  const dispatch_header& h = q.header;
  out_.resize(size_t(h.tokens) * size_t(h.hidden));
  const status s = experts_->run_group(h.first_expert, h.last_expert, h.layer, q.x.data(), h.tokens, h.k,
                                       q.chosen.data(), q.weights.data(), out_.data());
  reply(*peer, reply_tag, s ? encode_reply(out_.data(), out_.size()) : encode_error_reply(s.err().message));
}

void expert_server::reply(int peer, uint64_t tag, const std::vector<uint8_t>& bytes) {
  if (auto s = transport_->send(peer, tag, bytes.data(), bytes.size(), reply_timeout_); !s)
    log_first(logged_reply_failure_, "could not reply to peer " + std::to_string(peer) + ": " + s.err().message);
}

}  // namespace troupe
