#pragma once
// The vocabulary as a byte trie, built once per tokenizer and shared read-only: the mask
// walk follows it so that tokens sharing a prefix share the grammar work on that prefix,
// and a prefix the grammar rejects skips its whole subtree.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace troupe {

class token_trie {
 public:
  // token_bytes[id]: the bytes token `id` stands for; empty ones (special tokens) are
  // left out, so no grammar ever allows them.
  explicit token_trie(const std::vector<std::string>& token_bytes);

  // Nodes in depth-first preorder; node 0 is the root (the empty prefix). A node's
  // descendants are the nodes after it up to subtree_end.
  struct node {
    uint8_t byte = 0;
    uint16_t depth = 0;
    int32_t subtree_end = 0;
  };
  const std::vector<node>& nodes() const { return nodes_; }
  // The tokens whose bytes end at node i.
  std::span<const int32_t> tokens_at(int32_t i) const {
    return {tokens_.data() + token_begin_[size_t(i)], tokens_.data() + token_begin_[size_t(i) + 1]};
  }
  int vocab_size() const { return vocab_size_; }
  int max_depth() const { return max_depth_; }

 private:
  std::vector<node> nodes_;
  std::vector<int32_t> token_begin_;  // per node, into tokens_; one more at the end
  std::vector<int32_t> tokens_;
  int vocab_size_ = 0;
  int max_depth_ = 0;
};

}  // namespace troupe
