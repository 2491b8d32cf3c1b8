// SentencePiece BPE (model "llama"), as llama.cpp runs it: the text (spaces
// already replaced by U+2581) is split into UTF-8 characters; a max-heap holds
// every adjacent pair whose concatenation is a token, ordered by that token's
// score and then position; the best pair merges unless a side changed since
// it was pushed. Remaining symbols that are not tokens fall back to <0xXX>
// byte tokens (then unk). Control, unknown, unused and byte tokens are never
// formed from text.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace folio::tokenizer {

struct SpmScratch {
  struct Symbol {
    int32_t prev, next;
    uint32_t begin, end;  // bytes of the text; end == begin: merged away
  };
  struct Pair {
    float score;
    int32_t left, right;
    uint32_t size;  // bytes of the merged text when pushed
  };
  std::vector<Symbol> symbols;
  std::vector<Pair> heap;
};

void spm_encode(const Vocab& vocab, std::string_view text, SpmScratch* scratch,
                std::vector<TokenId>* out);

}  // namespace folio::tokenizer
