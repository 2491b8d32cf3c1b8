// Context shifting for `folio chat`. Before each reply the conversation
// (system prompt, then user/assistant pairs, then the new user message) must
// fit the context together with room for the reply. When it does not, the
// oldest whole user/assistant pairs are left out, the system prompt always
// kept, and the shorter conversation is rendered again; the Generator keeps
// the KV cache's longest common prefix (the system prompt) and recomputes the
// rest. Pure logic over a token-count callback, unit-tested in
// tests/chat/chat_context_test.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/status.h"

namespace folio::tools {

// Tokens kept free for the reply: n_predict, at most half the context
// (a quarter when n_predict < 0, i.e. unbounded).
int64_t reply_room(int64_t n_predict, int64_t n_ctx);

struct ContextFit {
  size_t pairs_dropped = 0;    // oldest user/assistant pairs left out
  int64_t n_prompt = 0;        // prompt tokens without them
  bool short_of_room = false;  // fits, but with less than reply_room left for the reply
};

// n_pairs: user/assistant pairs before the last user message.
// prompt_tokens(k): the prompt's token count with the k oldest pairs left
// out (0 <= k <= n_pairs). Returns the fewest pairs to leave out so that the
// prompt plus `room` fits n_ctx; when none does, all pairs go and the prompt
// is still used while it is shorter than the context (short_of_room).
// Error kOutOfRange: the system prompt and the last user message alone fill
// the context.
Result<ContextFit> fit_conversation(size_t n_pairs, int64_t n_ctx, int64_t room,
                                    const std::function<Result<int64_t>(size_t)>& prompt_tokens);

}  // namespace folio::tools
