#include "engine/mtp_proposer.h"

#include <algorithm>
#include <cmath>

#include "cache/kv_cache.h"
#include "core/log.h"
#include "model/hidden_states.h"
#include "model/mtp_head.h"

namespace folio {

MtpProposer::MtpProposer(const MtpRef& mtp, float p_min)
    : m_(mtp),
      seqs_cache_(mtp.cache, "MTP"),
      p_min_(p_min),
      n_embd_(mtp.head->n_embd()),
      n_vocab_(static_cast<int32_t>(mtp.head->n_vocab())) {}

MtpProposer::~MtpProposer() {
  for (auto& [id, s] : seqs_) seqs_cache_.remove(s.head);
}

Status MtpProposer::begin(uint64_t id) {
  if (seqs_.count(id) != 0) return invalid_argument("MTP: sequence {} already begun", id);
  FOLIO_ASSIGN_OR_RETURN(const int seq, seqs_cache_.add());
  seqs_[id].head = seq;
  return Status();
}

void MtpProposer::release(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  seqs_cache_.remove(it->second.head);
  seqs_.erase(it);
}

void MtpProposer::push_target_state(const Work& w, int64_t pos) {
  const float* h = pos > 0 ? m_.hidden->row(w.target, pos - 1) : nullptr;
  if (h != nullptr) {
    states_.insert(states_.end(), h, h + n_embd_);
  } else {
    states_.resize(states_.size() + static_cast<size_t>(n_embd_), 0.0f);
  }
}

Status MtpProposer::propose(std::span<const DraftRequest> requests,
                            std::span<std::vector<int32_t>> out) {
  FOLIO_CHECK(out.size() == requests.size());
  for (std::vector<int32_t>& o : out) o.clear();
  work_.clear();
  const int64_t n_ctx = m_.cache->n_ctx();
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    auto it = seqs_.find(r.id);
    if (it == seqs_.end() || r.tokens.empty() || r.seq < 0) continue;
    Seq& s = it->second;
    const auto len = static_cast<int64_t>(r.tokens.size());
    // Chained drafts take positions len .. len + max_draft - 2.
    const int64_t k = std::min<int64_t>(r.max_draft, n_ctx - len + 1);
    if (k < 1 || !seqs_cache_.sync(s.head, s.held, r.tokens)) continue;
    Work w;
    w.seq = &s;
    w.out = i;
    w.target = r.seq;
    w.from = static_cast<int64_t>(s.held.size());
    w.last = len - 1;
    w.max_draft = static_cast<int>(k);
    work_.push_back(std::move(w));
  }
  FOLIO_RETURN_IF_ERROR(catch_up(requests, out));
  chain(out);
  return Status();
}

Status MtpProposer::catch_up(std::span<const DraftRequest> requests,
                             std::span<std::vector<int32_t>> out) {
  // Forwards of at most max_batch_tokens tokens, each sequence's positions
  // in order; the head's logits at a sequence's last one give its first draft.
  std::vector<size_t> active;
  std::vector<int64_t> n_fed;
  size_t next = 0;  // first work item not fully fed
  while (next < work_.size()) {
    batch_.clear();
    states_.clear();
    active.clear();
    n_fed.clear();
    int64_t budget = m_.max_batch_tokens;
    for (size_t wi = next; wi < work_.size() && budget > 0; ++wi) {
      Work& w = work_[wi];
      const int64_t n = std::min(w.last + 1 - w.from, budget);
      const std::span<const int32_t> t = requests[w.out].tokens;
      for (int64_t p = w.from; p < w.from + n; ++p) {
        batch_.add(t[static_cast<size_t>(p)], static_cast<int32_t>(p), w.seq->head, p == w.last);
        push_target_state(w, p);
      }
      budget -= n;
      active.push_back(wi);
      n_fed.push_back(n);
    }
    Result<model::MtpHead::Output> r = m_.head->forward(batch_, states_, *m_.cache, *m_.ctx);
    if (!r.ok()) {
      // The fed sequences may have lost positions: they start over next step.
      for (const size_t wi : active) {
        Seq& s = *work_[wi].seq;
        seqs_cache_.remove(s.head);
        s.held.clear();
      }
      for (std::vector<int32_t>& o : out) o.clear();
      work_.clear();
      return r.status().with_context("MTP: catching up");
    }
    int64_t row = 0;
    for (size_t j = 0; j < active.size(); ++j) {
      Work& w = work_[active[j]];
      const int64_t n = n_fed[j];
      const std::span<const int32_t> t = requests[w.out].tokens;
      w.seq->held.insert(w.seq->held.end(), t.begin() + w.from, t.begin() + w.from + n);
      w.from += n;
      if (w.from <= w.last) continue;
      next = std::max(next, active[j] + 1);
      // The target's states before L are consumed; the one at L pairs with
      // the token after it at the next step.
      m_.hidden->drop_before(w.target, w.last);
      float p = 1.0f;
      const int32_t id = greedy_draft(r->logits.row<const float>(row), n_vocab_, p_min_, &p);
      const float* g = r->hidden.row<const float>(row);
      ++row;
      if (p < p_min_) continue;
      out[w.out].push_back(id);
      w.state.assign(g, g + n_embd_);
    }
  }
  return Status();
}

void MtpProposer::chain(std::span<std::vector<int32_t>> out) {
  std::vector<size_t> active, still;
  for (size_t wi = 0; wi < work_.size(); ++wi) {
    const Work& w = work_[wi];
    if (!out[w.out].empty() && static_cast<int>(out[w.out].size()) < w.max_draft)
      active.push_back(wi);
  }
  std::vector<size_t> chained = active;
  while (!active.empty()) {
    batch_.clear();
    states_.clear();
    for (const size_t wi : active) {
      const Work& w = work_[wi];
      const std::vector<int32_t>& o = out[w.out];
      batch_.add(o.back(), static_cast<int32_t>(w.last + static_cast<int64_t>(o.size())),
                 w.seq->head, true);
      states_.insert(states_.end(), w.state.begin(), w.state.end());
    }
    Result<model::MtpHead::Output> r = m_.head->forward(batch_, states_, *m_.cache, *m_.ctx);
    if (!r.ok()) break;  // the proposals end here
    still.clear();
    for (size_t j = 0; j < active.size(); ++j) {
      Work& w = work_[active[j]];
      std::vector<int32_t>& o = out[w.out];
      float p = 1.0f;
      const int32_t id =
          greedy_draft(r->logits.row<const float>(static_cast<int64_t>(j)), n_vocab_, p_min_, &p);
      if (p < p_min_) continue;
      o.push_back(id);
      const float* g = r->hidden.row<const float>(static_cast<int64_t>(j));
      w.state.assign(g, g + n_embd_);
      if (static_cast<int>(o.size()) < w.max_draft) still.push_back(active[j]);
    }
    active.swap(still);
  }
  // The chained positions leave the head's cache: it holds verified ones only.
  for (const size_t wi : chained) {
    Seq& s = *work_[wi].seq;
    const Status st = m_.cache->truncate(s.head, static_cast<int64_t>(s.held.size()));
    if (!st.ok()) {
      FOLIO_LOG_ERROR("MTP: dropping chained positions: {}", st.to_string());
      seqs_cache_.remove(s.head);
      s.held.clear();
    }
  }
}

}  // namespace folio
