#include "engine/draft_model_proposer.h"

#include <algorithm>
#include <cmath>

#include "cache/kv_cache.h"
#include "core/log.h"
#include "model/model.h"

namespace folio {

DraftModelProposer::DraftModelProposer(const DraftModelRef& draft, float p_min)
    : d_(draft),
      seqs_cache_(draft.cache, "draft model"),
      p_min_(p_min),
      n_vocab_(static_cast<int32_t>(draft.model->config().n_vocab)) {}

DraftModelProposer::~DraftModelProposer() {
  for (auto& [id, s] : seqs_) {
    drop_fork(s);
    seqs_cache_.remove(s.main);
  }
}

void DraftModelProposer::drop_fork(Seq& s) {
  seqs_cache_.remove(s.fork);
  s.fed.clear();
}

Status DraftModelProposer::begin(uint64_t id) {
  if (seqs_.count(id) != 0) return invalid_argument("draft model: sequence {} already begun", id);
  FOLIO_ASSIGN_OR_RETURN(const int seq, seqs_cache_.add());
  seqs_[id].main = seq;
  return Status();
}

void DraftModelProposer::release(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  drop_fork(it->second);
  seqs_cache_.remove(it->second.main);
  seqs_.erase(it);
}

void DraftModelProposer::accept(uint64_t id, int accepted) {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second.fork < 0) return;
  Seq& s = it->second;
  const auto kept =
      static_cast<size_t>(std::clamp<int64_t>(accepted, 0, static_cast<int64_t>(s.fed.size())));
  // The fork holds held + fed; keeping its first `kept` drafts saves feeding
  // them again, where the cache can cut there.
  const auto len = static_cast<int64_t>(s.held.size() + kept);
  if (kept > 0 && (kept == s.fed.size() || d_.cache->truncation_point(s.fork, len) == len) &&
      d_.cache->truncate(s.fork, len).ok()) {
    seqs_cache_.remove(s.main);
    s.main = s.fork;
    s.fork = -1;
    s.held.insert(s.held.end(), s.fed.begin(), s.fed.begin() + static_cast<std::ptrdiff_t>(kept));
    s.fed.clear();
    return;
  }
  drop_fork(s);
}

Status DraftModelProposer::propose(std::span<const DraftRequest> requests,
                                   std::span<std::vector<int32_t>> out) {
  FOLIO_CHECK(out.size() == requests.size());
  for (std::vector<int32_t>& o : out) o.clear();
  work_.clear();
  // Proposals the target did not verify (their steps ran without drafts).
  for (auto& [id, s] : seqs_) drop_fork(s);
  const int64_t n_ctx = d_.cache->n_ctx();
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    auto it = seqs_.find(r.id);
    if (it == seqs_.end() || r.tokens.empty()) continue;
    Seq& s = it->second;
    const auto len = static_cast<int64_t>(r.tokens.size());
    // Fed drafts take positions len .. len + max_draft - 2.
    const int64_t k = std::min<int64_t>(r.max_draft, n_ctx - len);
    if (k < 1 || !seqs_cache_.sync(s.main, s.held, r.tokens)) continue;
    Work w;
    w.seq = &s;
    w.out = i;
    w.from = static_cast<int64_t>(s.held.size());
    w.len = len;
    w.max_draft = static_cast<int>(k);
    work_.push_back(w);
  }
  FOLIO_RETURN_IF_ERROR(catch_up(requests, out));
  draft(out);
  return Status();
}

Status DraftModelProposer::catch_up(std::span<const DraftRequest> requests,
                                    std::span<std::vector<int32_t>> out) {
  // Forwards of at most max_batch_tokens tokens, each sequence's tokens in
  // order; the logits of a sequence's last token give its first draft.
  size_t next = 0;  // first work item not fully fed
  while (next < work_.size()) {
    batch_.clear();
    active_.clear();
    n_fed_.clear();
    int64_t budget = d_.max_batch_tokens;
    for (size_t wi = next; wi < work_.size() && budget > 0; ++wi) {
      Work& w = work_[wi];
      const int64_t n = std::min(w.len - w.from, budget);
      const std::span<const int32_t> t = requests[w.out].tokens;
      for (int64_t p = w.from; p < w.from + n; ++p) {
        batch_.add(t[static_cast<size_t>(p)], static_cast<int32_t>(p), w.seq->main, p + 1 == w.len);
      }
      budget -= n;
      active_.push_back(wi);
      n_fed_.push_back(n);
    }
    Result<TensorView> logits = d_.model->forward(batch_, *d_.cache, *d_.ctx);
    if (!logits.ok()) {
      // The fed sequences may have lost state: they start over next step.
      for (const size_t wi : active_) {
        Seq& s = *work_[wi].seq;
        seqs_cache_.remove(s.main);
        s.held.clear();
      }
      for (std::vector<int32_t>& o : out) o.clear();
      work_.clear();
      return logits.status().with_context("draft model: catching up");
    }
    int64_t row = 0;
    for (size_t j = 0; j < active_.size(); ++j) {
      Work& w = work_[active_[j]];
      const int64_t n = n_fed_[j];
      const std::span<const int32_t> t = requests[w.out].tokens;
      w.seq->held.insert(w.seq->held.end(), t.begin() + w.from, t.begin() + w.from + n);
      w.from += n;
      if (w.from < w.len) continue;
      next = std::max(next, active_[j] + 1);
      float p = 1.0f;
      const int32_t id = greedy_draft(logits->row<const float>(row++), n_vocab_, p_min_, &p);
      if (p < p_min_) continue;
      out[w.out].push_back(id);
      w.drafting = w.max_draft > 1;
    }
  }
  return Status();
}

void DraftModelProposer::draft(std::span<std::vector<int32_t>> out) {
  active_.clear();
  for (size_t wi = 0; wi < work_.size(); ++wi) {
    Work& w = work_[wi];
    if (!w.drafting) continue;
    Result<int> fork = d_.cache->fork_sequence(w.seq->main);
    if (!fork.ok()) continue;  // no room: this proposal stays one token
    w.seq->fork = *fork;
    w.seq->fed.clear();
    active_.push_back(wi);
  }
  std::vector<size_t> still;
  while (!active_.empty()) {
    batch_.clear();
    for (const size_t wi : active_) {
      const Work& w = work_[wi];
      batch_.add(out[w.out].back(),
                 static_cast<int32_t>(w.len + static_cast<int64_t>(w.seq->fed.size())), w.seq->fork,
                 true);
    }
    Result<TensorView> logits = d_.model->forward(batch_, *d_.cache, *d_.ctx);
    if (!logits.ok()) {  // the proposals end here; the forks may have lost state
      for (const size_t wi : active_) drop_fork(*work_[wi].seq);
      return;
    }
    still.clear();
    for (size_t j = 0; j < active_.size(); ++j) {
      const Work& w = work_[active_[j]];
      std::vector<int32_t>& o = out[w.out];
      w.seq->fed.push_back(o.back());
      float p = 1.0f;
      const int32_t id =
          greedy_draft(logits->row<const float>(static_cast<int64_t>(j)), n_vocab_, p_min_, &p);
      if (p < p_min_) continue;
      o.push_back(id);
      if (static_cast<int>(o.size()) < w.max_draft) still.push_back(active_[j]);
    }
    active_.swap(still);
  }
}

}  // namespace folio
