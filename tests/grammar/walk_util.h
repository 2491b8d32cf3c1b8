// Shared by the grammar tests and folio-grammar-walk: a small synthetic
// vocabulary and random walks over a grammar through its token masks.
//
// A walk starts at a matcher's state and repeatedly draws a token the mask
// allows until it draws end-of-generation. Every drawn token must then be
// accepted by the matcher: a walk checks the mask's soundness as it goes.
// To end in reasonable time on recursive grammars, the walk stops when it
// may with probability 1/4, and after `soft_limit` tokens it stops as soon as
// it may and otherwise mostly draws among the tokens that bring it closest
// to a complete document (CompletionDistance).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/vocab_trie.h"

namespace folio::grammar::testing {

inline constexpr int32_t kSyntheticEos = 0;

// Token 0 is end-of-generation; then single characters (printable ASCII,
// \n, \t, a few control characters and non-ASCII letters), the pieces of
// two characters split mid-UTF-8, and common multi-character JSON pieces.
inline std::vector<std::string> synthetic_vocab() {
  std::vector<std::string> v = {""};  // EOS
  for (int c = 0x20; c < 0x7F; ++c) v.push_back(std::string(1, static_cast<char>(c)));
  for (const char* s : {"\n", "\t", "\r", "\x01", "\x1f", "\x7f"}) v.push_back(s);
  for (const char* s : {"é", "ß", "中", "文", "😀", "€"}) v.push_back(s);
  // U+1F600 and U+4E2D and U+00E9 split across tokens.
  for (const char* s :
       {"\xF0\x9F", "\x98\x80", "\xE4", "\xB8\xAD", "\xC3", "\xA9", "\xF0", "\x80"}) {
    v.push_back(s);
  }
  for (const char* s :
       {"{\"",   "\":",  "\": ", "\", \"", "\",",   "\"}",     "},",      "}, ",
        "],",    "[{",   "}]",   "{}",     "[]",    "[\"",     "\"]",     "true",
        "false", "null", "tr",   "ue",     "fa",    "lse",     "nu",      "ll",
        "\\n",   "\\\"", "\\\\", "\\u00",  "\\u20", "\\ud83d", "\\ude00", "\\uD83D\\uDE00",
        "  ",    "    ", "\n  ", "\n    ", "\n\n",  "0.",      "12",      "-1",
        "e+",    "E-",   "1e5",  "name",   "id",    "type",    "abc",     "xyz",
        "ing",   " the", "20",   "2024-",  "-0",    "T1",      "Z",       ":0",
        "00:",   "-4",   "a-",   "ab",     " {",    " [",      ", ",      ": "}) {
    v.push_back(s);
  }
  return v;
}

// The fewest characters that complete a matcher's text into a sentence:
// per rule the shortest derivation (a fixed point), per stack the sum over
// its positions of the rest of their alternatives, per state the minimum.
class CompletionDistance {
 public:
  static constexpr size_t kInfinite = SIZE_MAX / 4;

  explicit CompletionDistance(const CompiledGrammar& g) : g_(g), rule_(g.num_rules(), kInfinite) {
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t r = 0; r < g.num_rules(); ++r) {
        for (uint32_t alt : g.alternatives(r)) {
          const size_t d = rest(alt);
          if (d < rule_[r]) {
            rule_[r] = d;
            changed = true;
          }
        }
      }
    }
  }

  // The symbols from `pos` to the end of its alternative.
  size_t rest(uint32_t pos) const {
    size_t d = 0;
    for (; g_.kind(pos) != CompiledGrammar::SymbolKind::kEnd; ++pos) {
      d += g_.kind(pos) == CompiledGrammar::SymbolKind::kChars ? 1 : rule_[g_.operand(pos)];
      if (d >= kInfinite) return kInfinite;
    }
    return d;
  }

  size_t of(const GrammarMatcher& m) const {
    size_t best = kInfinite;
    m.stacks().for_each([&](std::span<const uint32_t> st) {
      size_t d = 0;
      for (uint32_t pos : st) d = std::min(kInfinite, d + rest(pos));
      best = std::min(best, d);
    });
    return best;
  }

 private:
  const CompiledGrammar& g_;
  std::vector<size_t> rule_;  // [rules] shortest derivation
};

struct WalkOptions {
  size_t max_tokens = 4000;
  size_t soft_limit = 150;
};

struct WalkResult {
  std::optional<std::string> text;  // the document, when the walk ended at end-of-generation
  std::string error;                // otherwise why not
  size_t tokens = 0;
};

inline WalkResult random_walk(GrammarMatcher matcher, TokenMasker& masker, std::mt19937_64& rng,
                              const WalkOptions& opts = {}) {
  const VocabTrie& vocab = masker.vocab();
  const CompletionDistance distance(matcher.grammar());
  WalkResult out;
  std::string text;
  std::vector<uint64_t> mask;
  std::vector<int32_t> allowed, closest;
  for (size_t step = 0; step < opts.max_tokens; ++step) {
    masker.fill_mask(matcher, &mask);
    allowed.clear();
    bool eos = false;
    for (int32_t id = 0; id < vocab.size(); ++id) {
      if (!TokenMasker::allowed(mask, id)) continue;
      if (vocab.is_eog(id)) {
        eos = true;
      } else {
        allowed.push_back(id);
      }
    }
    if (eos != matcher.is_accepting()) {
      out.error = "end-of-generation allowed is not the same as is_accepting()";
      return out;
    }
    const bool late = step >= opts.soft_limit;
    if (eos && (allowed.empty() || late || rng() % 4 == 0)) {
      out.text = std::move(text);
      out.tokens = step;
      return out;
    }
    if (allowed.empty()) {
      out.error = "dead end: no token allowed and the grammar is not complete after: " + text;
      return out;
    }
    int32_t id = allowed[rng() % allowed.size()];
    if (late && rng() % 8 != 0) {
      // Among the tokens that leave the shortest completion, at random.
      size_t best = CompletionDistance::kInfinite;
      closest.clear();
      for (int32_t candidate : allowed) {
        GrammarMatcher next = matcher;
        if (!next.accept_token(vocab, candidate)) continue;
        const size_t d = distance.of(next);
        if (d < best) {
          best = d;
          closest.clear();
        }
        if (d == best) closest.push_back(candidate);
      }
      if (!closest.empty()) id = closest[rng() % closest.size()];
    }
    if (!matcher.accept_token(vocab, id)) {
      out.error = "the mask allowed token " + std::to_string(id) + " but the matcher refused it";
      return out;
    }
    text += vocab.token(id);
  }
  out.error = "no end after " + std::to_string(opts.max_tokens) + " tokens: " + text;
  return out;
}

}  // namespace folio::grammar::testing
