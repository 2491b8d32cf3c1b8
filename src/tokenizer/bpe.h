// BPE by merge rank over one pre-tokenized piece (models gpt2 and gemma4).
//
// Symbols start as single bytes (gpt2: each byte's byte-level character
// token) or single UTF-8 characters (gemma4: the character's token, if any).
// A min-heap holds every adjacent pair that has a merge, ordered by rank and
// then position; popping the best pair merges it unless one side changed
// since it was pushed, and the new symbol's two neighbour pairs are pushed.
// O(n log n) in the piece length. Symbols without a token fall back to bytes:
// gemma4 <0xXX> tokens (else unk, else dropped); a gpt2 byte whose character
// the vocabulary lacks is dropped (or an unk token of type unknown).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace folio::tokenizer {

// Reusable buffers (one per thread).
struct BpeScratch {
  struct Symbol {
    TokenId id;
    int32_t prev, next;
    uint32_t begin, end;  // bytes of the piece this symbol covers
  };
  struct Pair {
    int32_t rank;
    int32_t left;  // symbol index
    TokenId left_id, right_id;
  };
  std::vector<Symbol> symbols;
  std::vector<Pair> heap;
  std::string encoded;
};

// Appends the tokens of `piece` (raw bytes for gpt2; the U+2581-escaped text
// for gemma4).
void bpe_encode(const Vocab& vocab, std::string_view piece, BpeScratch* scratch,
                std::vector<TokenId>* out);

// Appends the byte tokens of `bytes`, or one unk token if the vocabulary lacks
// one of them (nothing if it has no unk either).
void append_byte_fallback(const Vocab& vocab, std::string_view bytes, std::vector<TokenId>* out);

}  // namespace folio::tokenizer
