#include "tokenizer/spm.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/bpe.h"
#include "tokenizer/unicode.h"

namespace folio::tokenizer {

namespace {

// Heap order: highest score first, then leftmost.
bool spm_worse(const SpmScratch::Pair& a, const SpmScratch::Pair& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}

// The token for text, if text may be produced by merging.
TokenId mergeable(const Vocab& vocab, std::string_view text) {
  const TokenId id = vocab.find(text);
  if (id == kNoToken) return kNoToken;
  const TokenType t = vocab.type(id);
  if (vocab.is_hidden(id) || t == TokenType::kByte) return kNoToken;
  return id;
}

void push_pair(const Vocab& vocab, std::string_view text, SpmScratch* s, int32_t left) {
  if (left < 0) return;
  const int32_t right = s->symbols[left].next;
  if (right < 0) return;
  const uint32_t begin = s->symbols[left].begin;
  const uint32_t end = s->symbols[right].end;
  const TokenId id = mergeable(vocab, text.substr(begin, end - begin));
  if (id == kNoToken) return;
  s->heap.push_back({vocab.score(id), left, right, end - begin});
  std::push_heap(s->heap.begin(), s->heap.end(), spm_worse);
}

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, SpmScratch* s,
                std::vector<TokenId>* out) {
  if (text.empty()) return;
  auto& syms = s->symbols;
  syms.clear();
  s->heap.clear();
  for (size_t i = 0; i < text.size();) {
    const uint32_t len = utf8_decode(text, i, Utf8Invalid::kByteAboveUnicode).len;
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({idx - 1, -1, static_cast<uint32_t>(i), static_cast<uint32_t>(i + len)});
    if (idx > 0) syms[idx - 1].next = idx;
    i += len;
  }
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push_pair(vocab, text, s, i);

  while (!s->heap.empty()) {
    std::pop_heap(s->heap.begin(), s->heap.end(), spm_worse);
    const SpmScratch::Pair p = s->heap.back();
    s->heap.pop_back();
    SpmScratch::Symbol& left = syms[p.left];
    SpmScratch::Symbol& right = syms[p.right];
    // Stale: a side was merged away, or grew since the pair was pushed.
    if (left.end == left.begin || right.end == right.begin || left.next != p.right ||
        right.end - left.begin != p.size) {
      continue;
    }
    left.end = right.end;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = p.left;
    right.end = right.begin;
    push_pair(vocab, text, s, left.prev);
    push_pair(vocab, text, s, p.left);
  }

  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].begin, syms[i].end - syms[i].begin);
    const TokenId id = mergeable(vocab, piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    append_byte_fallback(vocab, piece, out);
  }
}

}  // namespace folio::tokenizer
