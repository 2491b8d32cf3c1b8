// VocabTrie: a model's vocabulary as the bytes each token emits, in a byte
// trie laid out for one linear pass (the token masker's walk).
//
// Input: one byte string per token id (what the detokenizer emits for that
// token alone: SentencePiece's U+2581 already turned into a space, <0xNN>
// byte tokens into their byte; empty for control tokens, which a grammar
// never allows) and the end-of-generation ids (allowed exactly when the
// grammar is complete; they are kept out of the trie whatever their text).
//
// Layout: nodes in preorder (node 0 the root, the empty prefix), so a node's
// subtree is the range [i, end) and skipping a dead prefix is one jump. Each
// node holds the byte on its incoming edge, its depth, and the ids of the
// tokens that end there (several tokens can emit the same bytes, e.g. "A"
// and <0x41>), CSR-style in token_ids_, so the tokens of a whole subtree are
// one contiguous range. A summary of each subtree (the ASCII bytes below it,
// whether any byte is not ASCII, whether all of it is valid UTF-8) lets the
// masker accept a subtree wholesale when the grammar state loops on all its
// bytes (the inside of a JSON string). For Gemma 3 (262144 tokens): about
// 590k nodes, 32 bytes each.
//
// Built once per vocabulary; immutable, so one instance is shared by every
// request and thread (std::shared_ptr<const VocabTrie>).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace folio::grammar {

class VocabTrie {
 public:
  // 32 bytes: the summary sits in the same cache line as the node, which
  // the walk reads anyway.
  struct Node {
    uint64_t below_ascii[2];  // the ASCII bytes on the edges below (128-bit set)
    uint32_t end;             // one past the last node of this subtree
    uint32_t tokens_begin;    // token_ids_[tokens_begin, next node's tokens_begin)
    uint16_t depth;           // bytes from the root (the root: 0)
    uint8_t byte;             // the byte on the edge into this node
    uint8_t flags;            // kSubtree* below
  };
  // Every path below this node is valid UTF-8 (decoded from the root).
  static constexpr uint8_t kSubtreeValid = 1;
  // Some byte below this node is not ASCII.
  static constexpr uint8_t kSubtreeNonAscii = 2;

  // `tokens[id]`: the bytes token id emits. Errors (InvalidArgument): an
  // end-of-generation id outside [0, tokens.size()), a token over 65535 bytes.
  static Result<std::shared_ptr<const VocabTrie>> build(std::vector<std::string> tokens,
                                                        std::span<const int32_t> eog_ids);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  std::string_view token(int32_t id) const { return tokens_[id]; }
  bool is_eog(int32_t id) const { return is_eog_[id] != 0; }
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  // Nodes in preorder plus one sentinel (so node i's tokens end at node
  // i + 1's tokens_begin).
  size_t num_nodes() const { return nodes_.size() - 1; }
  std::span<const Node> nodes() const { return nodes_; }
  std::span<const int32_t> token_ids() const { return token_ids_; }
  size_t max_depth() const { return max_depth_; }
  // [(size + 63) / 64] the tokens in the trie (not empty, not end-of-generation).
  std::span<const uint64_t> trie_token_mask() const { return trie_token_mask_; }

 private:
  VocabTrie() = default;
  void summarize();  // fills flags and below_ascii

  std::vector<std::string> tokens_;        // [n_vocab]
  std::vector<uint8_t> is_eog_;            // [n_vocab]
  std::vector<int32_t> eog_ids_;           // sorted, unique
  std::vector<Node> nodes_;                // [num_nodes + 1] preorder + sentinel
  std::vector<int32_t> token_ids_;         // token ids grouped by node
  std::vector<uint64_t> trie_token_mask_;  // see trie_token_mask()
  size_t max_depth_ = 0;
};

}  // namespace folio::grammar
