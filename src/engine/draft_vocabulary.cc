#include "engine/draft_vocabulary.h"

namespace folio {

Status check_draft_vocabulary(const tokenizer::Vocab& target, int64_t n_logits_target,
                              const tokenizer::Vocab& draft, int64_t n_logits_draft) {
  constexpr const char* kWhy = "the draft model's vocabulary differs from the target's";
  if (target.model() != draft.model())
    return invalid_argument("{}: another tokenizer model", kWhy);
  if (target.size() != draft.size()) {
    return invalid_argument("{}: {} tokens in the target, {} in the draft", kWhy, target.size(),
                            draft.size());
  }
  if (n_logits_target != n_logits_draft) {
    return invalid_argument("{}: the target scores {} tokens, the draft {}", kWhy, n_logits_target,
                            n_logits_draft);
  }
  if (target.bos() != draft.bos() || target.eos() != draft.eos() ||
      target.add_bos() != draft.add_bos()) {
    return invalid_argument("{}: BOS / EOS tokens (target {} / {}, draft {} / {}) or BOS policy",
                            kWhy, target.bos(), target.eos(), draft.bos(), draft.eos());
  }
  for (int32_t id = 0; id < target.size(); ++id) {
    if (target.text(id) != draft.text(id)) {
      return invalid_argument("{}: token {} is '{}' in the target, '{}' in the draft", kWhy, id,
                              target.text(id), draft.text(id));
    }
  }
  return Status();
}

}  // namespace folio
