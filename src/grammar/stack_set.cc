#include "grammar/stack_set.h"

#include <algorithm>
#include <unordered_set>

#include "core/utf8.h"

namespace folio::grammar {
namespace {

using Kind = CompiledGrammar::SymbolKind;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xFF51AFD7ED558CCDull;
}

struct VectorHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = v.size();
    for (uint32_t x : v) h = mix(h, x);
    return static_cast<size_t>(h);
  }
};

// Expands positions into stacks with a terminal on top (see stack_set.h).
// frames_ holds the stack below the position being expanded.
class Closure {
 public:
  explicit Closure(const CompiledGrammar& g) : g_(g) {}

  void set_frames(std::span<const uint32_t> frames) {
    frames_.assign(frames.begin(), frames.end());
  }

  void expand(uint32_t pos) {
    if (overflow_) return;
    switch (g_.kind(pos)) {
      case Kind::kChars:
        frames_.push_back(pos);
        out_.push_back(frames_);
        frames_.pop_back();
        if (out_.size() > kMaxStacks) overflow_ = true;
        return;
      case Kind::kEnd: {
        if (frames_.empty()) {
          out_.emplace_back();  // the root is complete
          return;
        }
        const uint32_t ret = frames_.back();
        frames_.pop_back();
        expand(ret);
        frames_.push_back(ret);
        return;
      }
      case Kind::kRule: {
        // The same (frames, position) always expands to the same stacks:
        // expanding it once keeps ambiguous grammars ((a|b)(c|d)... with
        // nullable parts) linear instead of exponential.
        frames_.push_back(pos);
        const bool fresh = visited_.insert(frames_).second;
        frames_.pop_back();
        if (!fresh) return;
        const uint32_t ret = pos + 1;
        const bool push = g_.kind(ret) != Kind::kEnd;  // tail call: nothing to return to
        if (push) {
          if (frames_.size() >= kMaxStackDepth) return;  // nested too deep: drop this path
          frames_.push_back(ret);
        }
        for (uint32_t alt : g_.alternatives(g_.operand(pos))) expand(alt);
        if (push) frames_.pop_back();
        return;
      }
    }
  }

  StackSet result() {
    if (overflow_) return StackSet();
    return StackSet::from_stacks(std::move(out_));
  }

 private:
  const CompiledGrammar& g_;
  std::vector<uint32_t> frames_;
  std::vector<std::vector<uint32_t>> out_;
  std::unordered_set<std::vector<uint32_t>, VectorHash> visited_;
  bool overflow_ = false;
};

}  // namespace

StackSet StackSet::from_stacks(std::vector<std::vector<uint32_t>> stacks) {
  // Shorter stacks first (so the empty, accepting stack leads), then by content.
  std::sort(stacks.begin(), stacks.end(), [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  StackSet s;
  size_t total = 0;
  for (const auto& st : stacks) total += 1 + st.size();
  s.data_.reserve(total);
  for (const auto& st : stacks) {
    s.data_.push_back(static_cast<uint32_t>(st.size()));
    s.data_.insert(s.data_.end(), st.begin(), st.end());
  }
  return s;
}

size_t StackSet::num_stacks() const {
  size_t n = 0;
  for (size_t i = 0; i < data_.size(); i += 1 + data_[i]) ++n;
  return n;
}

size_t StackSet::hash() const {
  return VectorHash()(data_);
}

StackSet initial_stacks(const CompiledGrammar& g) {
  Closure c(g);
  for (uint32_t alt : g.alternatives(g.root())) c.expand(alt);
  return c.result();
}

StackSet advance_stacks(const CompiledGrammar& g, const StackSet& stacks, uint32_t cp) {
  Closure c(g);
  stacks.for_each([&](std::span<const uint32_t> st) {
    if (st.empty()) return;
    const uint32_t top = st.back();
    if (!g.char_set(g.operand(top)).contains(cp)) return;
    c.set_frames(st.first(st.size() - 1));
    c.expand(top + 1);
  });
  return c.result();
}

bool can_read_any(const CompiledGrammar& g, const StackSet& stacks, uint32_t lo, uint32_t hi) {
  bool any = false;
  stacks.for_each([&](std::span<const uint32_t> st) {
    if (any || st.empty()) return;
    const CharSet& set = g.char_set(g.operand(st.back()));
    // The range minus the surrogates: [lo, D7FF] and [E000, hi].
    if (lo < kSurrogateLo && set.intersects(lo, std::min(hi, kSurrogateLo - 1))) any = true;
    if (hi > kSurrogateHi && set.intersects(std::max(lo, kSurrogateHi + 1), hi)) any = true;
  });
  return any;
}

}  // namespace folio::grammar
