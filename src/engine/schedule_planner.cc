#include "engine/schedule_planner.h"

#include <algorithm>

#include "core/check.h"

namespace folio {

namespace {

// Length of the common prefix of two token lists.
size_t planner_common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

int64_t SchedulePlanner::next_step_blocks(const PlanSequence& s, int64_t held,
                                          int64_t block_size) const {
  const int64_t bs = block_size;
  const auto total = static_cast<int64_t>(s.tokens.size());
  const int64_t k = s.decoding ? 1 + s.n_draft : std::min(options_.chunk_cap, total - held);
  return (held + k + bs - 1) / bs - (held + bs - 1) / bs;
}

bool SchedulePlanner::refused(uint64_t request) const {
  return std::find(refused_requests_.begin(), refused_requests_.end(), request) !=
         refused_requests_.end();
}

void SchedulePlanner::plan(const ScheduleQueue& queue, ScheduleCache& cache, SchedulePlan& plan) {
  plan.admissions.clear();
  plan.refused.clear();
  plan.pieces.clear();
  plan.step.n_tokens.clear();
  plan.step.n_decode = 0;
  plan.step.n_prefill = 0;
  plan.next_admission = queue.next_admission;
  refused_requests_.clear();
  live_.clear();
  for (const PlanSequence& s : queue.running) live_.push_back(&s);
  if (admit_next_) admit(queue, cache, plan);
  admit_next_ = true;
  compose(queue, cache, plan);
}

void SchedulePlanner::admit(const ScheduleQueue& queue, ScheduleCache& cache, SchedulePlan& plan) {
  const bool pool = cache.has_block_pool();
  const bool prefix_sharing = pool && cache.prefix_caching();
  const int64_t bs = cache.block_size();
  int64_t reserved = 0;  // blocks the running sequences take next step
  if (pool) {
    for (const PlanSequence& s : queue.running) reserved += next_step_blocks(s, s.held, bs);
  }
  auto refuse = [&](size_t i, Status status) {
    const uint64_t request = queue.waiting[i].request;
    plan.refused.push_back({i, std::move(status)});
    refused_requests_.push_back(request);
    std::erase_if(live_, [&](const PlanSequence* s) { return s->request == request; });
  };

  for (size_t i = 0; i < queue.waiting.size(); ++i) {
    const PlanSequence& c = queue.waiting[i];
    if (refused(c.request)) continue;  // its request ends with the refusal
    int used = 0;
    for (const PlanSequence* s : live_) used += s->slots;
    if (used + c.slots > options_.max_seqs) break;
    if (prefix_sharing) {
      const bool pending = std::any_of(live_.begin(), live_.end(), [&](const PlanSequence* s) {
        return !s->decoding &&
               planner_common_prefix(s->tokens, c.tokens) >= static_cast<size_t>(bs);
      });
      if (pending) break;
    }
    Result<int> seq = cache.add_sequence();
    if (!seq.ok()) {
      if (seq.status().code() == StatusCode::kResourceExhausted && !live_.empty()) break;
      refuse(i, seq.status().with_context("admission"));
      continue;
    }
    Result<int64_t> cached = cache.take_cached_prefix(*seq, c.tokens);
    if (!cached.ok()) {
      cache.remove_sequence(*seq);
      refuse(i, cached.status().with_context("prefix lookup"));
      continue;
    }
    if (pool) {
      const int64_t need = next_step_blocks(c, *cached, bs);
      if (!live_.empty() && need > cache.free_blocks() - reserved) {
        cache.remove_sequence(*seq);  // the cached blocks it took stay cached
        break;
      }
      reserved += need;
    }
    plan.admissions.push_back({i, *seq, *cached, plan.next_admission++});
    live_.push_back(&c);
  }
}

void SchedulePlanner::compose(const ScheduleQueue& queue, const ScheduleCache& cache,
                              SchedulePlan& plan) {
  // Step order: priority, then admission order.
  order_.clear();
  for (size_t i = 0; i < queue.running.size(); ++i) {
    if (!refused(queue.running[i].request)) order_.push_back({false, i, queue.running[i].held, 0});
  }
  for (size_t k = 0; k < plan.admissions.size(); ++k) {
    const SchedulePlan::Admission& a = plan.admissions[k];
    if (!refused(queue.waiting[a.waiting].request)) order_.push_back({true, k, a.cached, 0});
  }
  if (order_.empty()) return;
  auto seq_of = [&](const SchedulePlan::Piece& p) -> const PlanSequence& {
    return p.admitted ? queue.waiting[plan.admissions[p.index].waiting] : queue.running[p.index];
  };
  auto order_of = [&](const SchedulePlan::Piece& p) {
    return p.admitted ? plan.admissions[p.index].order : queue.running[p.index].admitted;
  };
  std::stable_sort(order_.begin(), order_.end(),
                   [&](const SchedulePlan::Piece& a, const SchedulePlan::Piece& b) {
                     const int pa = seq_of(a).priority, pb = seq_of(b).priority;
                     if (pa != pb) return pa > pb;
                     return order_of(a) < order_of(b);
                   });
  step_in_.clear();
  for (const SchedulePlan::Piece& p : order_) {
    const PlanSequence& s = seq_of(p);
    StepSequence in;
    in.held = p.held;
    in.total = static_cast<int64_t>(s.tokens.size());
    in.decoding = !p.admitted && s.decoding;  // an admitted sequence fills first
    in.n_draft = in.decoding ? s.n_draft : 0;
    step_in_.push_back(in);
  }
  StepLimits limits;
  limits.max_batch_tokens = options_.max_batch_tokens;
  limits.ubatch = options_.ubatch;
  limits.chunk_cap = options_.chunk_cap;
  limits.decode_first = options_.decode_first;
  limits.block_size = cache.has_block_pool() ? cache.block_size() : 1;
  compose_step(step_in_, limits, plan.step);
  for (size_t i = 0; i < order_.size(); ++i) {
    if (plan.step.n_tokens[i] == 0) continue;
    SchedulePlan::Piece p = order_[i];
    p.n = plan.step.n_tokens[i];
    plan.pieces.push_back(p);
  }
  FOLIO_CHECK(!plan.pieces.empty());
}

Preemption SchedulePlanner::plan_preemption(std::span<const PlanSequence> running) {
  FOLIO_CHECK(!running.empty());
  if (running.size() == 1) {
    return {
        running[0].decoding ? Preemption::Kind::kEndContextFull : Preemption::Kind::kFailRequest,
        0};
  }
  victims_.clear();
  for (const PlanSequence& s : running) victims_.push_back({s.priority, s.admitted});
  admit_next_ = false;
  return {Preemption::Kind::kPreempt, choose_victim(victims_)};
}

Status check_request_fits(int64_t n_prompt, int64_t max_tokens_param, int64_t n_ctx,
                          int64_t kv_capacity) {
  if (n_prompt >= n_ctx) {
    return out_of_range("prompt of {} tokens does not fit the context of {} tokens", n_prompt,
                        n_ctx);
  }
  if (max_tokens_param > 0 && n_prompt + max_tokens_param > n_ctx) {
    return out_of_range("prompt of {} tokens plus max_tokens {} exceeds the context of {} tokens",
                        n_prompt, max_tokens_param, n_ctx);
  }
  // A choice's sequence holds at most its prompt and every generated token
  // but the last (sampled from the one before it, never fed back): prompt +
  // max_tokens - 1 positions, n_ctx - 1 when max_tokens is unset (generation
  // stops when the context is full). The choices of a request need not run
  // at once (choices beyond max_seqs wait, and the pool preempts siblings
  // like any other sequence), so one sequence alone must fit. Alone, a
  // sequence takes exactly ceil(positions / block_size) blocks: it writes
  // only into its own last block, so nothing is copied on write.
  const int64_t max_tokens = max_tokens_param < 0 ? n_ctx - n_prompt : max_tokens_param;
  if (max_tokens <= 0 || n_prompt + max_tokens - 1 <= kv_capacity) return Status();
  if (n_prompt > kv_capacity) {
    return invalid_argument(
        "prompt of {} tokens does not fit the KV cache, which holds {} tokens of one sequence",
        n_prompt, kv_capacity);
  }
  const int64_t need = n_prompt + max_tokens - 1;
  const int64_t most = kv_capacity - n_prompt + 1;
  if (max_tokens_param < 0) {
    return invalid_argument(
        "prompt of {} tokens, generating up to the context of {} tokens, needs {} KV cache "
        "positions for one sequence, but the KV cache holds {}: set max_tokens to at most {}",
        n_prompt, n_ctx, need, kv_capacity, most);
  }
  return invalid_argument(
      "prompt of {} tokens plus max_tokens {} needs {} KV cache positions for one sequence, "
      "but the KV cache holds {}: set max_tokens to at most {}",
      n_prompt, max_tokens, need, kv_capacity, most);
}

}  // namespace folio
