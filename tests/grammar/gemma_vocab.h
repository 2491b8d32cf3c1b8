// The default model's vocabulary (Gemma 3, 262144 tokens) as the grammar
// layer sees it: the bytes the detokenizer emits for each token alone
// (U+2581 -> space, <0xNN> -> the byte, control tokens empty) and the
// end-of-generation ids. Loaded once per test binary; a missing model is a
// test failure (tests/default_model.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "default_model.h"
#include "grammar/vocab_trie.h"
#include "tokenizer/tokenizer.h"

namespace folio::grammar::testing {

struct ModelVocab {
  std::vector<std::string> tokens;  // [n_vocab] bytes per token
  std::vector<int32_t> eog;
  std::shared_ptr<const VocabTrie> trie;
};

inline const ModelVocab* gemma_vocab() {
  static const ModelVocab* cached = []() -> const ModelVocab* {
    Result<tokenizer::Tokenizer> tok =
        tokenizer::Tokenizer::open(folio::testing::default_model_path());
    if (!tok.ok()) {
      ADD_FAILURE() << tok.status().to_string() << " (" << folio::testing::kDefaultModelHint << ")";
      return nullptr;
    }
    auto* v = new ModelVocab();
    const tokenizer::Vocab& vocab = tok->vocab();
    for (int32_t id = 0; id < vocab.size(); ++id) {
      v->tokens.push_back(tok->piece(id));
      if (vocab.is_eog(id)) v->eog.push_back(id);
    }
    Result<std::shared_ptr<const VocabTrie>> trie = VocabTrie::build(v->tokens, v->eog);
    if (!trie.ok()) {
      ADD_FAILURE() << trie.status().to_string();
      return nullptr;
    }
    v->trie = trie.value();
    return v;
  }();
  return cached;
}

}  // namespace folio::grammar::testing
