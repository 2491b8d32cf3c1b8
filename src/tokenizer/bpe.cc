#include "tokenizer/bpe.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace folio::tokenizer {

namespace {

// Heap order: lowest rank first, then leftmost.
bool bpe_worse(const BpeScratch::Pair& a, const BpeScratch::Pair& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

void push_pair(const Vocab& vocab, BpeScratch* s, int32_t left) {
  if (left < 0) return;
  const int32_t right = s->symbols[left].next;
  if (right < 0) return;
  const TokenId l = s->symbols[left].id;
  const TokenId r = s->symbols[right].id;
  if (l == kNoToken || r == kNoToken) return;
  const PairIndex::Entry* m = vocab.find_merge(l, r);
  if (m == nullptr) return;
  s->heap.push_back({m->rank, left, l, r});
  std::push_heap(s->heap.begin(), s->heap.end(), bpe_worse);
}

}  // namespace

void append_byte_fallback(const Vocab& vocab, std::string_view bytes, std::vector<TokenId>* out) {
  for (char c : bytes) {
    if (vocab.byte_token(static_cast<uint8_t>(c)) == kNoToken) {
      if (vocab.unk() != kNoToken) out->push_back(vocab.unk());
      return;
    }
  }
  for (char c : bytes) out->push_back(vocab.byte_token(static_cast<uint8_t>(c)));
}

void bpe_encode(const Vocab& vocab, std::string_view piece, BpeScratch* s,
                std::vector<TokenId>* out) {
  if (piece.empty()) return;
  const bool byte_level = vocab.model() == VocabModel::kBpe;

  // A piece that is one token as a whole (llama3's ignore_merges; runs of
  // newlines for gemma4, whose merges do not always reach them).
  if (byte_level && vocab.ignore_merges()) {
    s->encoded.clear();
    byte_level_encode(piece, &s->encoded);
    const TokenId id = vocab.find(s->encoded);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
  } else if (!byte_level && piece.find_first_not_of('\n') == std::string_view::npos) {
    const TokenId id = vocab.find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
  }

  auto& syms = s->symbols;
  syms.clear();
  s->heap.clear();
  for (size_t i = 0; i < piece.size();) {
    size_t len = 1;
    TokenId id;
    if (byte_level) {
      id = vocab.byte_token(static_cast<uint8_t>(piece[i]));
    } else {
      len = utf8_decode(piece, i, Utf8Invalid::kByteAboveUnicode).len;
      id = vocab.find(piece.substr(i, len));
      if (id != kNoToken && vocab.is_hidden(id)) id = kNoToken;
    }
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, -1, static_cast<uint32_t>(i), static_cast<uint32_t>(i + len)});
    if (idx > 0) syms[idx - 1].next = idx;
    i += len;
  }
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push_pair(vocab, s, i);

  while (!s->heap.empty()) {
    std::pop_heap(s->heap.begin(), s->heap.end(), bpe_worse);
    const BpeScratch::Pair p = s->heap.back();
    s->heap.pop_back();
    BpeScratch::Symbol& left = syms[p.left];
    // Stale: the left symbol was merged away or changed, or its neighbour did.
    if (left.id != p.left_id || left.next < 0 || syms[left.next].id != p.right_id) continue;
    const PairIndex::Entry* m = vocab.find_merge(p.left_id, p.right_id);
    BpeScratch::Symbol& right = syms[left.next];
    left.id = m->result;
    left.end = right.end;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = p.left;
    right.id = kNoToken;  // unreachable from the list now
    push_pair(vocab, s, left.prev);
    push_pair(vocab, s, p.left);
  }

  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const BpeScratch::Symbol& sym = syms[i];
    if (sym.id != kNoToken) {
      out->push_back(sym.id);
    } else if (byte_level) {
      // A byte whose character is not in the vocabulary (C0, C1, F5..FF in
      // some vocabularies): dropped as llama.cpp does, unless there is a
      // real <unk> (byte-level vocabularies often name <|endoftext|> as unk).
      if (vocab.unk() != kNoToken && vocab.type(vocab.unk()) == TokenType::kUnknown) {
        out->push_back(vocab.unk());
      }
    } else {
      append_byte_fallback(vocab, piece.substr(sym.begin, sym.end - sym.begin), out);
    }
  }
}

}  // namespace folio::tokenizer
