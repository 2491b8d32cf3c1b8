#include "engine/step_plan.h"

#include <algorithm>

namespace folio {

void compose_step(std::span<const StepSequence> seqs, const StepLimits& limits, StepPlan& plan) {
  plan.n_tokens.assign(seqs.size(), 0);
  plan.n_decode = 0;
  plan.n_draft = 0;
  plan.n_prefill = 0;
  const int64_t bs = std::max<int64_t>(limits.block_size, 1);
  const int64_t cap = std::max(limits.chunk_cap, bs);
  const int64_t T = std::max<int64_t>(limits.max_batch_tokens, 1);

  // Prefill chunks within `budget`, aligned to blocks unless they finish.
  auto fill = [&](int64_t budget) {
    for (size_t i = 0; i < seqs.size() && budget > 0; ++i) {
      const StepSequence& s = seqs[i];
      if (s.decoding) continue;
      const int64_t rest = s.total - s.held;
      int64_t k = std::min({rest, cap, budget});
      if (k < rest) k = std::max<int64_t>(0, (s.held + k) / bs * bs - s.held);
      if (k <= 0) continue;
      plan.n_tokens[i] = k;
      plan.n_prefill += k;
      budget -= k;
    }
  };
  auto decode = [&](int64_t budget) {
    for (size_t i = 0; i < seqs.size() && budget > 0; ++i) {
      if (!seqs[i].decoding) continue;
      plan.n_tokens[i] = 1;
      ++plan.n_decode;
      --budget;
    }
  };

  // Drafts of sequences that got their decode token, within `budget`.
  auto drafts = [&](int64_t budget) {
    for (size_t i = 0; i < seqs.size() && budget > 0; ++i) {
      if (plan.n_tokens[i] != 1 || !seqs[i].decoding || seqs[i].n_draft <= 0) continue;
      const int64_t k = std::min(seqs[i].n_draft, budget);
      plan.n_tokens[i] += k;
      plan.n_decode += k;
      plan.n_draft += k;
      budget -= k;
    }
  };

  int64_t prefill_budget = T;
  if (limits.decode_first) {
    const auto d = static_cast<int64_t>(
        std::count_if(seqs.begin(), seqs.end(), [](const StepSequence& s) { return s.decoding; }));
    decode(d);
    drafts(T - d);
    prefill_budget = std::max(limits.ubatch, T - plan.n_decode);
    fill(prefill_budget);
  } else {
    fill(T);
    decode(T - plan.n_prefill);
    drafts(T - plan.n_prefill - plan.n_decode);
  }

  if (plan.size() == 0) {  // only filling sequences, none with an aligned chunk
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (seqs[i].decoding) continue;
      const int64_t k =
          std::min({seqs[i].total - seqs[i].held, cap, std::max<int64_t>(prefill_budget, 1)});
      if (k <= 0) continue;
      plan.n_tokens[i] = k;
      plan.n_prefill = k;
      break;
    }
  }
}

size_t choose_victim(std::span<const PreemptionCandidate> running) {
  size_t v = 0;
  for (size_t i = 1; i < running.size(); ++i) {
    const PreemptionCandidate& c = running[i];
    const PreemptionCandidate& b = running[v];
    if (c.priority < b.priority || (c.priority == b.priority && c.admitted > b.admitted)) v = i;
  }
  return v;
}

int64_t default_chunk_cap(int64_t max_batch_tokens, int64_t ubatch, int64_t n_ctx) {
  const int64_t ctx_share = (4 * n_ctx + 99) / 100;  // ceil(0.04 * n_ctx)
  return std::min(max_batch_tokens, std::max(ubatch, ctx_share));
}

}  // namespace folio
