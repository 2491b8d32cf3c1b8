#include "grammar/token_masker.h"

#include "core/check.h"
#include "core/utf8.h"

namespace folio::grammar {

TokenMasker::TokenMasker(std::shared_ptr<const CompiledGrammar> grammar,
                         std::shared_ptr<const VocabTrie> vocab, size_t recent_masks)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {
  FOLIO_CHECK(grammar_ != nullptr && vocab_ != nullptr);
  num_classes_ = grammar_->num_classes();
  frames_.resize(vocab_->max_depth() + 1);
  recent_.resize(recent_masks);
}

void TokenMasker::clear_cache() {
  index_.clear();
  states_.clear();
  trans_.clear();
  info_.clear();
  for (RecentMask& r : recent_) r.state = -1;  // state ids are about to be reused
}

int32_t TokenMasker::intern(StackSet stacks) {
  auto [it, inserted] = index_.try_emplace(std::move(stacks), static_cast<int32_t>(states_.size()));
  if (inserted) {
    states_.push_back(&it->first);  // node-based map: the key's address is stable
    trans_.resize(trans_.size() + num_classes_, kUnknown);
    info_.emplace_back();
  }
  return it->second;
}

int32_t TokenMasker::transition(int32_t state, uint32_t cls) {
  const size_t slot = static_cast<size_t>(state) * num_classes_ + cls;
  if (trans_[slot] != kUnknown) return trans_[slot];
  StackSet next = advance_stacks(*grammar_, *states_[state], grammar_->representative(cls));
  const int32_t to = next.empty() ? kDead : intern(std::move(next));
  trans_[slot] = to;  // (intern may have grown trans_: index again)
  return to;
}

bool TokenMasker::can_read_range(int32_t state, uint32_t lo, uint32_t hi) {
  const CompiledGrammar& g = *grammar_;
  // A partial character is non-ASCII; usually all of those share a class.
  if (g.uniform_non_ascii_class() >= 0) {
    return transition(state, static_cast<uint32_t>(g.uniform_non_ascii_class())) >= 0;
  }
  for (size_t i = g.interval_of(lo); i < g.num_intervals() && g.interval_start(i) <= hi; ++i) {
    const uint32_t start = g.interval_start(i);
    if (start >= kSurrogateLo && start <= kSurrogateHi) continue;  // intervals never mix
    if (transition(state, g.class_of_interval(i)) >= 0) return true;
  }
  return false;
}

const TokenMasker::StateInfo& TokenMasker::non_ascii_info(int32_t state) {
  if (!info_[state].non_ascii_known) {
    const CompiledGrammar& g = *grammar_;
    bool live = true, loop = true;
    if (g.uniform_non_ascii_class() >= 0) {
      const int32_t t = transition(state, static_cast<uint32_t>(g.uniform_non_ascii_class()));
      live = t >= 0;
      loop = t == state;
    } else {
      for (size_t i = g.interval_of(0x80); i < g.num_intervals() && (live || loop); ++i) {
        const uint32_t start = g.interval_start(i);
        if (start >= kSurrogateLo && start <= kSurrogateHi) continue;
        const int32_t t = transition(state, g.class_of_interval(i));
        live = live && t >= 0;
        loop = loop && t == state;
      }
    }
    StateInfo& info = info_[state];  // (transition() may have grown info_)
    info.non_ascii_known = true;
    info.non_ascii_live = live;
    info.non_ascii_loop = loop;
  }
  return info_[state];
}

const TokenMasker::StateInfo& TokenMasker::loop_info(int32_t state) {
  non_ascii_info(state);
  if (!info_[state].ascii_known) {
    uint64_t ascii[2] = {0, 0};
    for (uint32_t b = 0; b < 0x80; ++b) {
      if (transition(state, grammar_->class_of(b)) == state) {
        ascii[b / 64] |= uint64_t{1} << (b % 64);
      }
    }
    StateInfo& info = info_[state];
    info.ascii_known = true;
    info.ascii_loop[0] = ascii[0];
    info.ascii_loop[1] = ascii[1];
  }
  return info_[state];
}

size_t TokenMasker::fill_mask(const GrammarMatcher& matcher, std::vector<uint64_t>* mask) {
  FOLIO_CHECK(&matcher.grammar() == grammar_.get());
  if (states_.size() > kMaxCachedStates) clear_cache();
  const int32_t start = intern(matcher.stacks());
  const Utf8State start_utf8 = matcher.utf8_state();
  // The same state as a recent call: the same mask.
  if (recent_.empty()) return compute_mask(start, start_utf8, matcher.is_accepting(), mask);
  ++uses_;
  RecentMask* slot = &recent_[0];
  for (RecentMask& r : recent_) {
    if (r.state == start && r.utf8 == start_utf8) {
      r.last_use = uses_;
      *mask = r.bits;
      return r.count;
    }
    if (r.last_use < slot->last_use) slot = &r;
  }
  const size_t count = compute_mask(start, start_utf8, matcher.is_accepting(), mask);
  slot->state = start;
  slot->utf8 = start_utf8;
  slot->last_use = uses_;
  slot->count = count;
  slot->bits = *mask;
  return count;
}

size_t TokenMasker::compute_mask(int32_t start, Utf8State start_utf8, bool accepting,
                                 std::vector<uint64_t>* mask) {
  const VocabTrie& vocab = *vocab_;
  mask->assign((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  uint64_t* bits = mask->data();
  size_t count = 0;
  if (accepting) {
    for (int32_t id : vocab.eog_ids()) {
      bits[id >> 6] |= uint64_t{1} << (id & 63);
      ++count;
    }
  }

  const CompiledGrammar& g = *grammar_;
  frames_[0] = {start, start_utf8};

  const std::span<const VocabTrie::Node> nodes = vocab.nodes();
  const int32_t* ids = vocab.token_ids().data();
  const size_t n = vocab.num_nodes();
  // The trie's UTF-8 summaries assume decoding starts at the root.
  const bool start_idle = frames_[0].utf8.idle();
  const int32_t uniform = g.uniform_non_ascii_class();
  auto lookup = [&](int32_t state, uint32_t cls) {
    const int32_t t = trans_[static_cast<size_t>(state) * num_classes_ + cls];
    return t != kUnknown ? t : transition(state, cls);
  };
  // Every token of the trie ends up in an allowed or a refused range of
  // the trie's token list; consecutive nodes give adjacent ranges, merged.
  allowed_.clear();
  refused_.clear();
  auto add = [](std::vector<Range>* ranges, uint32_t begin, uint32_t end) {
    if (begin == end) return;
    if (!ranges->empty() && ranges->back().end == begin) {
      ranges->back().end = end;
    } else {
      ranges->push_back({begin, end});
    }
  };
  size_t i = 1;
  while (i < n) {
    const VocabTrie::Node& node = nodes[i];
    const Frame& parent = frames_[node.depth - 1];
    Frame f = parent;
    if (f.utf8.idle() && node.byte < 0x80) {
      // ASCII between characters: one table lookup once computed.
      f.state = lookup(f.state, g.class_of(node.byte));
    } else {
      const Utf8Result r = utf8_step(&f.utf8, node.byte);
      if (r.step == Utf8Step::kInvalid) {
        f.state = kDead;
      } else if (r.step == Utf8Step::kPartial) {
        // Usually every non-ASCII character is readable, or none is. (A
        // copy: can_read_range() may add states, moving info_.)
        const bool all_live = info_[f.state].non_ascii_known
                                  ? info_[f.state].non_ascii_live
                                  : non_ascii_info(f.state).non_ascii_live;
        const bool live = all_live || (uniform < 0 && can_read_range(f.state, r.lo, r.hi));
        if (!live) f.state = kDead;
      } else {
        f.state = lookup(f.state, g.class_of(r.lo));
      }
    }
    if (f.state < 0) {
      add(&refused_, node.tokens_begin, nodes[node.end].tokens_begin);
      i = node.end;  // no token under this prefix can be accepted
      continue;
    }
    frames_[node.depth] = f;
    const uint32_t subtree_end = node.end;
    if (start_idle && f.utf8.idle() && f.state == parent.state && subtree_end > i + 1 &&
        (node.flags & VocabTrie::kSubtreeValid)) {
      const StateInfo& l = info_[f.state].ascii_known ? info_[f.state] : loop_info(f.state);
      const uint64_t* below = node.below_ascii;
      if ((below[0] & ~l.ascii_loop[0]) == 0 && (below[1] & ~l.ascii_loop[1]) == 0 &&
          (l.non_ascii_loop || !(node.flags & VocabTrie::kSubtreeNonAscii))) {
        add(&allowed_, node.tokens_begin, nodes[subtree_end].tokens_begin);  // the whole subtree
        i = subtree_end;
        continue;
      }
    }
    add(&allowed_, node.tokens_begin, nodes[i + 1].tokens_begin);
    ++i;
  }

  // Set the allowed bits, or (when most tokens are allowed, as inside a
  // string) start from every token of the trie and clear the refused ones.
  size_t n_allowed = 0, n_refused = 0;
  for (const Range& r : allowed_) n_allowed += r.end - r.begin;
  for (const Range& r : refused_) n_refused += r.end - r.begin;
  if (n_allowed <= n_refused) {
    for (const Range& r : allowed_) {
      for (uint32_t k = r.begin; k < r.end; ++k) bits[ids[k] >> 6] |= uint64_t{1} << (ids[k] & 63);
    }
  } else {
    const std::span<const uint64_t> all = vocab.trie_token_mask();
    for (size_t w = 0; w < all.size(); ++w) bits[w] |= all[w];
    for (const Range& r : refused_) {
      for (uint32_t k = r.begin; k < r.end; ++k)
        bits[ids[k] >> 6] &= ~(uint64_t{1} << (ids[k] & 63));
    }
  }
  return count + n_allowed;
}

}  // namespace folio::grammar
