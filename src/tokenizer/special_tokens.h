// Splits text at special-token texts before tokenizing (Hugging Face's
// added-token pass): leftmost-longest matching over a byte trie of the texts
// of the vocabulary's control, unknown and user-defined tokens. User-defined
// tokens are always split out; control and unknown ones only with
// parse_special (so "<|im_start|>" in chat-template output becomes the
// control token, while the same text typed by a user stays plain text).
// Literal spans narrow parse_special to part of a text: a control or unknown
// token whose text overlaps one stays text (a rendered chat prompt keeps the
// template's markup as tokens and the request's content as text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace folio::tokenizer {

// A byte range [begin, end) of a text.
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const TextSpan&) const = default;
};

struct Fragment {
  TokenId token;          // a special token, or kNoToken for text
  std::string_view text;  // the text (non-empty) when token == kNoToken
};

class SpecialTokenMatcher {
 public:
  void build(const Vocab& vocab);

  // Appends the fragments of `text` in order. Whitespace next to a token
  // with lstrip / rstrip is dropped. `vocab` is the one build() saw.
  // `literal` (sorted, disjoint; used only with parse_special): spans where
  // control and unknown tokens are not matched, as without parse_special.
  void split(const Vocab& vocab, std::string_view text, bool parse_special,
             std::vector<Fragment>* out, std::span<const TextSpan> literal = {}) const;

  // Appends the spans of `text` that split() with parse_special (and no
  // literal spans) turns into control or unknown tokens, in order: the
  // texts that become tokens only because of parse_special.
  void find_controls(std::string_view text, std::vector<TextSpan>* out) const;

 private:
  struct Node {
    TokenId token = kNoToken;  // the special token ending here
    bool always = false;       // user-defined: matched without parse_special
    uint32_t first_edge = 0;
    uint32_t num_edges = 0;
  };
  struct Edge {
    uint8_t byte;
    uint32_t child;
  };
  // Longest allowed match at text[i]: (length, token) or (0, kNoToken).
  std::pair<size_t, TokenId> match(std::string_view text, size_t i, bool parse_special) const;

  std::vector<Node> nodes_;
  std::vector<Edge> edges_;  // per node, sorted by byte
  bool first_byte_[256] = {};
  bool first_byte_always_[256] = {};
};

}  // namespace folio::tokenizer
