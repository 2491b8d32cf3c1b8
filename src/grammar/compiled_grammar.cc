#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <map>

#include "core/utf8.h"

namespace folio::grammar {

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(const Grammar& grammar) {
  FOLIO_RETURN_IF_ERROR(validate_grammar(grammar));
  if (grammar.rules.size() > kOperandMask || grammar.char_sets.size() > kOperandMask) {
    return invalid_argument("grammar: too many rules or character sets");
  }
  std::shared_ptr<CompiledGrammar> g(new CompiledGrammar());
  g->source_ = grammar;
  g->root_ = grammar.root;
  g->alt_offsets_.push_back(0);
  for (const GrammarRule& rule : grammar.rules) {
    for (const GrammarSequence& alt : rule.alternatives) {
      g->alt_starts_.push_back(static_cast<uint32_t>(g->symbols_.size()));
      for (const GrammarSymbol& s : alt) {
        const SymbolKind k = s.is_rule() ? SymbolKind::kRule : SymbolKind::kChars;
        g->symbols_.push_back((static_cast<uint32_t>(k) << 30) | s.index);
      }
      g->symbols_.push_back(static_cast<uint32_t>(SymbolKind::kEnd) << 30);
    }
    g->alt_offsets_.push_back(static_cast<uint32_t>(g->alt_starts_.size()));
  }
  if (g->symbols_.size() > kOperandMask) return invalid_argument("grammar: too large");
  g->build_classes();
  return std::shared_ptr<const CompiledGrammar>(std::move(g));
}

size_t CompiledGrammar::interval_of(uint32_t cp) const {
  auto it = std::upper_bound(interval_starts_.begin(), interval_starts_.end(), cp);
  return static_cast<size_t>(it - interval_starts_.begin()) - 1;
}

void CompiledGrammar::build_classes() {
  const std::vector<CharSet>& sets = source_.char_sets;
  // Interval starts: 0, every range's lo and hi + 1, and the ASCII and
  // surrogate edges (so no interval mixes ASCII with non-ASCII, or
  // surrogates with real characters).
  std::vector<uint32_t> starts = {0, 0x80, kSurrogateLo, kSurrogateHi + 1};
  for (const CharSet& s : sets) {
    for (const CodeRange& r : s.ranges()) {
      starts.push_back(r.lo);
      if (r.hi < kMaxCodePoint) starts.push_back(r.hi + 1);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  interval_starts_ = std::move(starts);
  const size_t n = interval_starts_.size();

  // Membership signature of each interval: one bit per char set.
  const size_t words = (sets.size() + 63) / 64;
  std::vector<uint64_t> signature(n * words, 0);
  for (size_t s = 0; s < sets.size(); ++s) {
    for (const CodeRange& r : sets[s].ranges()) {
      for (size_t i = interval_of(r.lo); i < n && interval_starts_[i] <= r.hi; ++i) {
        signature[i * words + s / 64] |= uint64_t{1} << (s % 64);
      }
    }
  }
  std::map<std::vector<uint64_t>, uint32_t> class_ids;
  interval_class_.resize(n);
  representative_.clear();
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint64_t> sig(signature.begin() + i * words, signature.begin() + (i + 1) * words);
    auto [it, inserted] =
        class_ids.try_emplace(std::move(sig), static_cast<uint32_t>(class_ids.size()));
    if (inserted) representative_.push_back(interval_starts_[i]);
    const uint32_t cls = it->second;
    interval_class_[i] = cls;
    // Prefer a real character as the representative.
    const uint32_t rep = representative_[cls];
    if (rep >= kSurrogateLo && rep <= kSurrogateHi &&
        !(interval_starts_[i] >= kSurrogateLo && interval_starts_[i] <= kSurrogateHi)) {
      representative_[cls] = interval_starts_[i];
    }
  }
  num_classes_ = static_cast<uint32_t>(class_ids.size());
  for (uint32_t cp = 0; cp < 0x80; ++cp) ascii_class_[cp] = interval_class_[interval_of(cp)];

  // One class for all non-ASCII characters?
  uniform_non_ascii_ = -1;
  int64_t seen = -1;
  bool uniform = true;
  for (size_t i = interval_of(0x80); i < n; ++i) {
    if (interval_starts_[i] >= kSurrogateLo && interval_starts_[i] <= kSurrogateHi) continue;
    if (seen < 0) {
      seen = interval_class_[i];
    } else if (seen != interval_class_[i]) {
      uniform = false;
      break;
    }
  }
  if (uniform && seen >= 0) uniform_non_ascii_ = static_cast<int32_t>(seen);
}

}  // namespace folio::grammar
