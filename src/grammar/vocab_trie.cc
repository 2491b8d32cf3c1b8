#include "grammar/vocab_trie.h"

#include <algorithm>

#include "core/utf8.h"

namespace folio::grammar {

Result<std::shared_ptr<const VocabTrie>> VocabTrie::build(std::vector<std::string> tokens,
                                                          std::span<const int32_t> eog_ids) {
  std::shared_ptr<VocabTrie> t(new VocabTrie());
  const auto n = static_cast<int64_t>(tokens.size());
  if (n > INT32_MAX) return invalid_argument("vocab trie: {} tokens is too many", n);
  t->is_eog_.assign(tokens.size(), 0);
  for (int32_t id : eog_ids) {
    if (id < 0 || id >= n) {
      return invalid_argument(
          "vocab trie: end-of-generation token id {} is outside the "
          "vocabulary (size {})",
          id, n);
    }
    t->is_eog_[id] = 1;
  }
  t->eog_ids_.assign(eog_ids.begin(), eog_ids.end());
  std::sort(t->eog_ids_.begin(), t->eog_ids_.end());
  t->eog_ids_.erase(std::unique(t->eog_ids_.begin(), t->eog_ids_.end()), t->eog_ids_.end());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].size() > UINT16_MAX) {
      return invalid_argument("vocab trie: token {} is {} bytes long (limit {})", i,
                              tokens[i].size(), UINT16_MAX);
    }
  }
  t->tokens_ = std::move(tokens);

  // Tokens in byte order: the trie's preorder visits them in this order.
  std::vector<int32_t> order;
  order.reserve(t->tokens_.size());
  for (int32_t id = 0; id < static_cast<int32_t>(t->tokens_.size()); ++id) {
    if (!t->tokens_[id].empty() && !t->is_eog_[id]) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string& x = t->tokens_[a];
    const std::string& y = t->tokens_[b];
    return x != y ? x < y : a < b;  // lexicographic: every prefix's strings are contiguous
  });

  // Build the preorder layout from the sorted strings: `path` holds the
  // nodes of the previous string; each new string shares its longest common
  // prefix with it, closes the deeper nodes and opens its own.
  std::vector<Node>& nodes = t->nodes_;
  nodes.push_back({});  // the root
  std::vector<uint32_t> path = {0};
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = t->tokens_[id];
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    while (path.size() > common + 1) {
      nodes[path.back()].end = static_cast<uint32_t>(nodes.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes.size()));
      nodes.push_back({.tokens_begin = static_cast<uint32_t>(t->token_ids_.size()),
                       .depth = static_cast<uint16_t>(d + 1),
                       .byte = static_cast<uint8_t>(s[d])});
    }
    t->token_ids_.push_back(id);
    t->max_depth_ = std::max(t->max_depth_, s.size());
    prev = s;
  }
  while (!path.empty()) {
    nodes[path.back()].end = static_cast<uint32_t>(nodes.size());
    path.pop_back();
  }
  const size_t count = nodes.size();
  nodes.push_back({.end = static_cast<uint32_t>(count + 1),
                   .tokens_begin = static_cast<uint32_t>(t->token_ids_.size())});  // sentinel
  t->trie_token_mask_.assign((t->tokens_.size() + 63) / 64, 0);
  for (int32_t id : t->token_ids_) t->trie_token_mask_[id >> 6] |= uint64_t{1} << (id & 63);
  t->summarize();
  return std::shared_ptr<const VocabTrie>(std::move(t));
}

void VocabTrie::summarize() {
  const size_t n = nodes_.size() - 1;
  // Top-down: each node's parent and whether the bytes from the root to it
  // are valid UTF-8 so far.
  std::vector<uint32_t> parent(n, 0);
  std::vector<uint8_t> valid(n, 1);
  std::vector<Utf8State> state(n);
  std::vector<uint32_t> path = {0};  // path[d]: the node at depth d on the current path
  for (size_t i = 1; i < n; ++i) {
    const Node& node = nodes_[i];
    path.resize(node.depth);
    const uint32_t p = path.back();
    parent[i] = p;
    path.push_back(static_cast<uint32_t>(i));
    state[i] = state[p];
    valid[i] = valid[p] && utf8_step(&state[i], node.byte).step != Utf8Step::kInvalid;
  }
  // Bottom-up: fold each node into its parent (children follow parents in
  // preorder, so reverse order sees every child before its parent).
  for (size_t i = 0; i < n; ++i) nodes_[i].flags = kSubtreeValid;
  for (size_t i = n - 1; i >= 1; --i) {
    const Node& node = nodes_[i];
    const uint32_t p = parent[i];
    nodes_[p].below_ascii[0] |= node.below_ascii[0];
    nodes_[p].below_ascii[1] |= node.below_ascii[1];
    if (node.byte < 0x80) {
      nodes_[p].below_ascii[node.byte / 64] |= uint64_t{1} << (node.byte % 64);
    } else {
      nodes_[p].flags |= kSubtreeNonAscii;
    }
    nodes_[p].flags |= node.flags & kSubtreeNonAscii;
    if (!valid[i] || !(node.flags & kSubtreeValid)) nodes_[p].flags &= ~kSubtreeValid;
  }
}

}  // namespace folio::grammar
