#include "text/grammar/token_trie.hpp"

#include <algorithm>
#include <string_view>

#include "base/check.hpp"

namespace troupe {

// Sorted by bytes, the tokens list the trie in preorder: each token adds the nodes for
// the part of it not shared with the token before.
token_trie::token_trie(const std::vector<std::string>& token_bytes) : vocab_size_(int(token_bytes.size())) {
  std::vector<int32_t> order;
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    if (!token_bytes[id].empty()) order.push_back(int32_t(id));
  }
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return token_bytes[size_t(a)] < token_bytes[size_t(b)]; });

  nodes_.push_back(node{});
  std::vector<int32_t> node_token;  // per node, one token ending there, or -1
  node_token.push_back(-1);
  std::vector<int32_t> path = {0};  // the node of each prefix of the previous token
  std::string_view previous;
  std::vector<std::vector<int32_t>> extra_tokens;  // tokens with the same bytes as another
  for (int32_t id : order) {
    std::string_view bytes = token_bytes[size_t(id)];
    TROUPE_CHECK(bytes.size() < 65535, "token too long for the trie");
    if (bytes == previous) {
      extra_tokens.push_back({path.back(), id});
      continue;
    }
    size_t shared = std::mismatch(bytes.begin(), bytes.end(), previous.begin(), previous.end()).first - bytes.begin();
    path.resize(shared + 1);
    for (size_t d = shared; d < bytes.size(); ++d) {
      nodes_.push_back(node{uint8_t(bytes[d]), uint16_t(d + 1), 0});
      node_token.push_back(-1);
      path.push_back(int32_t(nodes_.size() - 1));
    }
    node_token[size_t(path.back())] = id;
    previous = bytes;
    max_depth_ = std::max(max_depth_, int(bytes.size()));
  }

  // A node's subtree ends at the next node no deeper than it.
  std::vector<int32_t> open;
  for (int32_t i = 0; i < int32_t(nodes_.size()); ++i) {
    while (!open.empty() && nodes_[size_t(open.back())].depth >= nodes_[size_t(i)].depth) {
      nodes_[size_t(open.back())].subtree_end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (int32_t i : open) nodes_[size_t(i)].subtree_end = int32_t(nodes_.size());

  std::vector<std::vector<int32_t>> per_node(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (node_token[i] >= 0) per_node[i].push_back(node_token[i]);
  }
  for (auto& e : extra_tokens) per_node[size_t(e[0])].push_back(e[1]);
  token_begin_.push_back(0);
  for (auto& t : per_node) {
    tokens_.insert(tokens_.end(), t.begin(), t.end());
    token_begin_.push_back(int32_t(tokens_.size()));
  }
}

}  // namespace troupe
