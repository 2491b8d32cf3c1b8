#include "chat_context.h"

#include <algorithm>

namespace folio::tools {

int64_t reply_room(int64_t n_predict, int64_t n_ctx) {
  const int64_t room = n_predict < 0 ? n_ctx / 4 : std::min(n_predict, n_ctx / 2);
  return std::max<int64_t>(room, 1);
}

Result<ContextFit> fit_conversation(size_t n_pairs, int64_t n_ctx, int64_t room,
                                    const std::function<Result<int64_t>(size_t)>& prompt_tokens) {
  ContextFit fit;
  // Token counts shrink as pairs go, so the first k that fits is the fewest.
  for (size_t k = 0; k <= n_pairs; ++k) {
    FOLIO_ASSIGN_OR_RETURN(const int64_t n, prompt_tokens(k));
    fit.pairs_dropped = k;
    fit.n_prompt = n;
    if (n + room <= n_ctx) return fit;
  }
  // Generator::generate takes a prompt shorter than the context and samples
  // at least one token after it.
  if (fit.n_prompt < n_ctx) {
    fit.short_of_room = true;
    return fit;
  }
  return make_error(StatusCode::kOutOfRange,
                    "the message needs {} tokens with the system prompt; the context holds {}",
                    fit.n_prompt, n_ctx);
}

}  // namespace folio::tools
