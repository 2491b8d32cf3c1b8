// WordPiece (BERT's tokenizer; tokenizer.ggml.model "bert"), as llama.cpp
// runs it on a GGUF vocabulary. The converter stores a word-initial piece
// with a U+2581 prefix ("▁play") and a continuation piece without BERT's "##"
// ("ing"); [CLS]-style specials keep their text.
//
// Normalisation, per code point: the first code point of its NFD
// decomposition (accents of precomposed letters drop: "é" -> "e"), then
// whitespace ends a word; NUL, U+FFFD, invalid UTF-8 and other C* code
// points are dropped; the rest is lowercased; punctuation, ASCII symbols and
// CJK ideographs are words of their own. Each word, with a U+2581 prefix,
// is cut greedily into the longest vocabulary texts from the left; a word
// with a part no text matches becomes the one unknown token.
//
// Differences from Hugging Face's BertTokenizer, inherited from llama.cpp:
// combining marks that follow a base letter stay (HF strips every mark of
// category Mn when it strips accents), text is lowercased even for cased
// vocabularies, words longer than 100 characters are not turned into
// [UNK]. Unassigned code points (Unicode 14) are dropped like controls,
// where llama.cpp keeps them.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace folio::tokenizer {

// Appends the tokens of `text` (no [CLS] / [SEP]: Tokenizer adds them).
void wpm_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

}  // namespace folio::tokenizer
