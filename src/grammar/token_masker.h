// TokenMasker: which tokens may come next, for a matcher's state.
//
// Semantics (checked against a brute force in tests): token t is allowed iff
//   - t is an end-of-generation token and matcher.is_accepting(), or
//   - t has bytes and a copy of the matcher would accept_bytes(them).
// Empty (control) tokens are never allowed.
//
// How. The vocabulary's byte trie (vocab_trie.h) is walked once in
// preorder; the matcher state at each trie node is derived from its
// parent's by one byte, so a prefix shared by thousands of tokens is matched
// once, and a prefix the grammar refuses skips its whole subtree. The state
// at a node is (stack set, partial UTF-8 character); to make a byte step
// cheap, stack sets are interned as the states of a lazily built
// deterministic automaton whose alphabet is the grammar's code point classes
// (compiled_grammar.h): a transition is computed once with advance_stacks()
// on a representative code point, then read from a table
// (trans_[state * num_classes + class]). Inside a JSON string, say, every
// ordinary character leads from the in-string state back to itself, so
// almost all of a walk is table lookups. Partial UTF-8 characters are not
// automaton states: the walk keeps the decoder state per depth and checks
// that some class the character could still fall in is live.
//
// Whole subtrees at once. Where a state S loops on the byte that led to it
// (S -> S), and every byte below the node is one S loops on (the trie's
// subtree summary against S's loop set, two 64-bit tests), and all of it is
// valid UTF-8, then every token below is allowed and the walk jumps over
// the subtree after marking its tokens (a contiguous range of the trie's
// token list). Non-ASCII bytes count as looping when every non-ASCII class
// leads back to S. Inside a JSON string this turns a ~590k-node walk of
// Gemma's trie into ~26k nodes. The walk records allowed and refused ranges
// of token ids; when most are allowed, the mask starts from every token and
// clears the refused ones (~7k inside a JSON string, not ~255k to set).
//
// The automaton persists across calls (states repeat from step to step) and
// is dropped when it grows past kMaxCachedStates, at the start of a call.
// The last kRecentMasks masks are kept by state: while a model writes a
// string, every step starts from the same state, and its mask is a copy.
// (Gemma 3: a mask is 32 KiB, so at most 256 KiB per masker.)
//
// One masker per generation stream: it is not thread-safe (it caches), while
// the CompiledGrammar and VocabTrie it reads are shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/stack_set.h"
#include "grammar/vocab_trie.h"

namespace folio::grammar {

class TokenMasker {
 public:
  static constexpr size_t kMaxCachedStates = size_t{1} << 15;
  static constexpr size_t kRecentMasks = 8;

  // `recent_masks`: how many recent masks to keep for reuse (0: none).
  TokenMasker(std::shared_ptr<const CompiledGrammar> grammar,
              std::shared_ptr<const VocabTrie> vocab, size_t recent_masks = kRecentMasks);

  // Sets `mask` to (vocab size + 63) / 64 words, bit (id % 64) of word
  // id / 64 set iff token id is allowed. Returns how many are allowed.
  // `matcher` must run this masker's grammar.
  size_t fill_mask(const GrammarMatcher& matcher, std::vector<uint64_t>* mask);

  static bool allowed(const std::vector<uint64_t>& mask, int32_t id) {
    return (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
  }

  const VocabTrie& vocab() const { return *vocab_; }
  size_t num_cached_states() const { return states_.size(); }

 private:
  static constexpr int32_t kUnknown = -1;  // transition not computed yet
  static constexpr int32_t kDead = -2;     // no stack can read the class

  void clear_cache();
  // The trie walk for the state (`start`, `start_utf8`).
  size_t compute_mask(int32_t start, Utf8State start_utf8, bool accepting,
                      std::vector<uint64_t>* mask);
  int32_t intern(StackSet stacks);
  int32_t transition(int32_t state, uint32_t cls);
  // Some non-surrogate code point in [lo, hi] can be read from `state`.
  bool can_read_range(int32_t state, uint32_t lo, uint32_t hi);

  // Facts about a state's transitions, computed on first use.
  struct StateInfo {
    bool non_ascii_known = false;
    bool non_ascii_live = false;  // every non-ASCII character can be read
    bool non_ascii_loop = false;  // every non-ASCII character leads back to the state
    bool ascii_known = false;
    uint64_t ascii_loop[2] = {0, 0};  // the ASCII bytes that lead back to the state
  };
  const StateInfo& non_ascii_info(int32_t state);
  const StateInfo& loop_info(int32_t state);  // both halves

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const VocabTrie> vocab_;
  uint32_t num_classes_ = 0;

  std::unordered_map<StackSet, int32_t, StackSetHash> index_;  // stack set -> state
  std::vector<const StackSet*> states_;                        // [states] keys of index_
  std::vector<int32_t> trans_;                                 // [states * classes]
  std::vector<StateInfo> info_;                                // [states]

  struct Frame {
    int32_t state;   // automaton state after the bytes to this depth
    Utf8State utf8;  // the partial character after them
  };
  std::vector<Frame> frames_;  // [max token length + 1] the walk's path
  struct Range {
    uint32_t begin, end;  // [begin, end) of the trie's token list
  };
  std::vector<Range> allowed_, refused_;  // one walk's verdicts (kept for their capacity)

  struct RecentMask {
    int32_t state = -1;  // -1: empty slot
    Utf8State utf8;
    uint64_t last_use = 0;
    size_t count = 0;
    std::vector<uint64_t> bits;
  };
  std::vector<RecentMask> recent_;  // [recent_masks]
  uint64_t uses_ = 0;
};

}  // namespace folio::grammar
