// check_draft_vocabulary: whether a draft model can propose tokens for a
// target (speculative decoding, -md FILE). Draft token ids index the
// target's logits, so the two must agree on every id: the same tokenizer
// model, vocabulary size and logits width, the same text for every token,
// and the same BOS / EOS ids and BOS policy (llama.cpp's
// common_speculative_are_compatible checks the same things, allowing a
// small size difference that folio's verification cannot). The error names
// the first difference.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace folio {

// n_logits_*: the models' output widths (ModelConfig::n_vocab).
Status check_draft_vocabulary(const tokenizer::Vocab& target, int64_t n_logits_target,
                              const tokenizer::Vocab& draft, int64_t n_logits_draft);

}  // namespace folio
