#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace folio::tokenizer {

void SpecialTokenMatcher::build(const Vocab& vocab) {
  // Build with maps, then flatten into sorted edge ranges.
  struct BuildNode {
    TokenId token = kNoToken;
    bool always = false;
    std::map<uint8_t, uint32_t> children;
  };
  std::vector<BuildNode> tmp(1);
  for (TokenId id : vocab.special_tokens()) {
    const std::string_view text = vocab.text(id);
    const bool always = vocab.type(id) == TokenType::kUserDefined;
    uint32_t node = 0;
    for (char c : text) {
      const auto b = static_cast<uint8_t>(c);
      auto it = tmp[node].children.find(b);
      if (it == tmp[node].children.end()) {
        tmp.emplace_back();
        it = tmp[node].children.emplace(b, static_cast<uint32_t>(tmp.size() - 1)).first;
      }
      node = it->second;
    }
    tmp[node].token = id;
    tmp[node].always = always;
    first_byte_[static_cast<uint8_t>(text[0])] = true;
    if (always) first_byte_always_[static_cast<uint8_t>(text[0])] = true;
  }
  nodes_.assign(tmp.size(), Node{});
  edges_.clear();
  for (size_t i = 0; i < tmp.size(); ++i) {
    nodes_[i].token = tmp[i].token;
    nodes_[i].always = tmp[i].always;
    nodes_[i].first_edge = static_cast<uint32_t>(edges_.size());
    nodes_[i].num_edges = static_cast<uint32_t>(tmp[i].children.size());
    for (const auto& [b, child] : tmp[i].children) edges_.push_back({b, child});
  }
}

std::pair<size_t, TokenId> SpecialTokenMatcher::match(std::string_view text, size_t i,
                                                      bool parse_special) const {
  std::pair<size_t, TokenId> best{0, kNoToken};
  uint32_t node = 0;
  for (size_t k = i; k < text.size(); ++k) {
    const Node& n = nodes_[node];
    const Edge* begin = edges_.data() + n.first_edge;
    const Edge* end = begin + n.num_edges;
    const auto b = static_cast<uint8_t>(text[k]);
    const Edge* e =
        std::lower_bound(begin, end, b, [](const Edge& x, uint8_t v) { return x.byte < v; });
    if (e == end || e->byte != b) break;
    node = e->child;
    const Node& c = nodes_[node];
    if (c.token != kNoToken && (parse_special || c.always)) best = {k + 1 - i, c.token};
  }
  return best;
}

void SpecialTokenMatcher::split(const Vocab& vocab, std::string_view text, bool parse_special,
                                std::vector<Fragment>* out,
                                std::span<const TextSpan> literal) const {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  const bool* first = parse_special ? first_byte_ : first_byte_always_;
  size_t start = 0;  // start of the pending text fragment
  for (size_t i = 0; i < text.size();) {
    if (!first[static_cast<uint8_t>(text[i])]) {
      ++i;
      continue;
    }
    auto [len, token] = match(text, i, parse_special);
    if (len != 0 && parse_special && !literal.empty()) {
      // The first literal span that ends after i is the only one a match
      // starting at i can overlap first; any overlap leaves only the tokens
      // matched without parse_special.
      while (!literal.empty() && literal.front().end <= i) literal = literal.subspan(1);
      if (!literal.empty() && literal.front().begin < i + len) {
        std::tie(len, token) = match(text, i, /*parse_special=*/false);
      }
    }
    if (len == 0) {
      ++i;
      continue;
    }
    size_t end = i;
    if (vocab.lstrip(token)) {
      while (end > start && is_space(text[end - 1])) --end;
    }
    if (start < end) out->push_back({kNoToken, text.substr(start, end - start)});
    out->push_back({token, {}});
    i += len;
    if (vocab.rstrip(token)) {
      while (i < text.size() && is_space(text[i])) ++i;
    }
    start = i;
  }
  if (start < text.size()) out->push_back({kNoToken, text.substr(start)});
}

void SpecialTokenMatcher::find_controls(std::string_view text, std::vector<TextSpan>* out) const {
  for (size_t i = 0; i < text.size();) {
    if (!first_byte_[static_cast<uint8_t>(text[i])]) {
      ++i;
      continue;
    }
    const size_t len = match(text, i, /*parse_special=*/true).first;
    if (len == 0) {
      ++i;
      continue;
    }
    // A user-defined token (matched in every mode) is the same match
    // without parse_special; a control or unknown one is not.
    if (match(text, i, /*parse_special=*/false).first != len) out->push_back({i, i + len});
    i += len;
  }
}

}  // namespace folio::tokenizer
