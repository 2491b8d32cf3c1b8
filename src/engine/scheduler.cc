#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <utility>

#include "backend/backend.h"
#include "cache/batch.h"
#include "core/log.h"
#include "engine/schedule_planner.h"
#include "engine/sequence_state.h"
#include "engine/step_plan.h"
#include "model/hidden_states.h"

namespace folio {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

constexpr int kMaxChoices = 16;

// The planner's view of the scheduler's KV cache.
class SchedulerCacheView final : public ScheduleCache {
 public:
  explicit SchedulerCacheView(cache::KvCache& cache) : cache_(cache) {}
  bool has_block_pool() const override { return cache_.block_manager() != nullptr; }
  bool prefix_caching() const override {
    const cache::KvCacheManager* mgr = cache_.block_manager();
    return mgr != nullptr && mgr->prefix_caching();
  }
  int64_t block_size() const override { return cache_.block_size(); }
  int64_t free_blocks() const override {
    const cache::KvCacheManager* mgr = cache_.block_manager();
    return mgr != nullptr ? mgr->pool().n_free() : 0;
  }
  Result<int> add_sequence() override { return cache_.add_sequence(); }
  Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> tokens) override {
    return cache_.take_cached_prefix(seq, tokens);
  }
  void remove_sequence(int seq) override {
    const Status st = cache_.remove_sequence(seq);
    if (!st.ok()) FOLIO_LOG_ERROR("scheduler: removing sequence {}: {}", seq, st.to_string());
  }

 private:
  cache::KvCache& cache_;
};

int64_t scheduler_chunk_cap(const SchedulerOptions& o, int64_t n_ctx) {
  return o.chunk_cap > 0 ? o.chunk_cap : default_chunk_cap(o.max_batch_tokens, o.ubatch, n_ctx);
}

PlannerOptions scheduler_planner_options(const SchedulerOptions& o, int64_t n_ctx) {
  PlannerOptions p;
  p.max_seqs = o.max_seqs;
  p.max_batch_tokens = o.max_batch_tokens;
  p.ubatch = o.ubatch;
  p.chunk_cap = scheduler_chunk_cap(o, n_ctx);
  p.decode_first = o.decode_first;
  return p;
}

}  // namespace

struct Scheduler::Impl {
  struct Request;

  // One choice of a request: a sequence of its own once forked.
  struct Choice {
    enum class Where { kHeld, kWaiting, kRunning, kDone };
    Choice(Request* r, int i, SequenceState s) : req(r), index(i), state(std::move(s)) {}
    Request* req;
    int index;
    SequenceState state;
    Where where = Where::kHeld;  // kHeld: waits for choice 0's prefill to fork from
    bool has_token = false;      // a token was kept (ITL starts from it)
    // While its drafts are verified: the positions its cache sequence held
    // verified before the step (-1 otherwise).
    int64_t verify_base = -1;
    bool spec_begun = false;  // the proposer knows it (begin(), until release())
    Clock::time_point last_token;
    uint64_t spec_id() const { return req->id * kMaxChoices + static_cast<uint64_t>(index); }
    ChoiceResult result;
  };

  struct Request {
    uint64_t id = 0;
    int n = 1;
    int priority = 0;
    GenerationLimits limits;
    RequestCallbacks callbacks;
    Clock::time_point submitted;
    std::vector<std::unique_ptr<Choice>> choices;  // [n]
    bool forked = false;       // choices 1.. exist as sequences (or wait on their own)
    bool first_token = false;  // TTFT observed
    bool done = false;         // on_done delivered
    bool isolate = false;      // in a failed batch: runs alone until a forward succeeds
    bool speculative = true;   // its choices may carry drafts
    int n_done = 0;            // choices that ended
    RequestResult result;
  };

  Impl(const model::Model& m, const tokenizer::Tokenizer& t, model::ForwardContext& c,
       cache::KvCache& k, const SchedulerOptions& o)
      : model(m),
        tok(t),
        ctx(c),
        cache(k),
        options(o),
        kv_capacity(k.token_capacity()),
        cache_view(k),
        planner(scheduler_planner_options(o, k.n_ctx())) {
    metrics.update([&](ServingMetrics::Snapshot& m) { m.spec_enabled = o.spec.enabled(); });
  }

  // --- any thread (under mu) ---------------------------------------------------
  const model::Model& model;
  const tokenizer::Tokenizer& tok;
  model::ForwardContext& ctx;
  cache::KvCache& cache;
  const SchedulerOptions options;
  const int64_t kv_capacity;  // positions of one sequence alone (KvCache::token_capacity)
  // The vocabulary's byte trie for grammar-constrained requests, built by
  // the first one (any submitting thread).
  std::mutex trie_mu;
  std::shared_ptr<const grammar::VocabTrie> trie;
  // The same with control tokens' text, for requests that render them.
  std::shared_ptr<const grammar::VocabTrie> special_trie;
  ServingMetrics metrics;
  cache::KvEventLog* kv_log = nullptr;  // step thread: set when on_kv_events is

  mutable std::mutex mu;
  std::condition_variable wake;  // step thread: arrivals, cancels, stop
  std::condition_variable idle;  // wait_idle
  std::vector<std::unique_ptr<Request>> incoming;
  std::vector<uint64_t> cancels;
  uint64_t next_id = 1;
  int64_t n_live = 0;            // accepted, on_done not yet delivered
  int64_t n_waiting_public = 0;  // requests queued on the step thread, none running
  bool started = false;
  bool stopping = false;
  std::thread thread;

  // --- step thread only ----------------------------------------------------------
  std::unordered_map<uint64_t, std::unique_ptr<Request>> live;
  std::vector<std::unique_ptr<Request>> finished;  // freed after the step that ended them
  std::vector<Choice*> waiting;                    // priority desc, then arrival, then choice
  std::vector<Choice*> running;                    // admission order
  uint64_t n_admitted = 0;
  // Planning (engine/schedule_planner.h): the queue as the planner sees it,
  // and the step it plans. plan's indices refer to the snapshots.
  SchedulerCacheView cache_view;
  SchedulePlanner planner;
  SchedulePlan plan;
  std::vector<PlanSequence> plan_running, plan_waiting;
  std::vector<Choice*> running_snapshot, waiting_snapshot, admitted_now;
  cache::Batch batch;
  // One sequence's share of a step.
  struct Entry {
    Choice* choice;
    int64_t held;  // positions its cache sequence holds
    int64_t n;     // tokens it feeds
  };
  std::vector<Entry> entries;
  std::vector<Entry> group;
  std::vector<Request*> isolated;
  // A sequence's logits rows in a forward: its first row and how many
  // (1 + its drafts).
  struct Output {
    Choice* choice;
    int64_t row;
    int64_t rows;
  };
  std::vector<Output> outputs;
  // Speculative decoding: the proposer (null: off; made by start()); true
  // after a step the pool could not hold with its drafts (the next one runs
  // without). spec_requests / proposals: one step's proposal, [speculating].
  std::unique_ptr<DraftProposer> proposer;
  bool skip_drafts = false;
  std::vector<DraftRequest> spec_requests;
  std::vector<Choice*> spec_choices;
  std::vector<std::vector<int32_t>> proposals;
  std::vector<int32_t> verifying;  // the drafts of the sequence being verified
  int64_t n_completed = 0;  // on_done delivered since the last publish
  SamplerWorkspace workspace;

  // --- queues ---------------------------------------------------------------------
  static bool before(const Choice* a, const Choice* b) {
    if (a->req->priority != b->req->priority) return a->req->priority > b->req->priority;
    if (a->req->id != b->req->id) return a->req->id < b->req->id;
    return a->index < b->index;
  }
  void push_waiting(Choice* c) {
    c->where = Choice::Where::kWaiting;
    waiting.insert(std::upper_bound(waiting.begin(), waiting.end(), c, before), c);
  }
  static void erase(std::vector<Choice*>& v, Choice* c) {
    auto it = std::find(v.begin(), v.end(), c);
    if (it != v.end()) v.erase(it);
  }
  // Running slots a choice takes: an unforked request reserves slots for its
  // choices (as many as max_seqs allows).
  int slots(const Choice* c) const {
    return !c->req->forked && c->index == 0 ? std::min(c->req->n, options.max_seqs) : 1;
  }
  int running_slots() const {
    int s = 0;
    for (const Choice* c : running) s += slots(c);
    return s;
  }
  // A choice as the planner sees it (`held`: positions its cache sequence
  // holds).
  PlanSequence plan_sequence(const Choice* c, int64_t held) const {
    PlanSequence s;
    s.request = c->req->id;
    s.priority = c->req->priority;
    s.admitted = c->state.admitted;
    s.held = held;
    s.tokens = c->state.tokens;
    s.decoding = c->state.decoding;
    s.n_draft = c->state.running() && c->state.decoding
                    ? static_cast<int64_t>(c->state.draft.size())
                    : 0;
    s.slots = slots(c);
    return s;
  }

  void release_sequence(Choice* c) {
    if (c->spec_begun) {
      proposer->release(c->spec_id());
      c->spec_begun = false;
    }
    if (!c->state.running()) return;
    if (c->verify_base >= 0) keep_verified(c);
    // The target's hidden states kept for an MTP head go with the sequence.
    if (model::HiddenStates* h = ctx.hidden_sink()) h->forget(c->state.seq);
    const Status st = cache.remove_sequence(c->state.seq);
    if (!st.ok())
      FOLIO_LOG_ERROR("scheduler: removing sequence {}: {}", c->state.seq, st.to_string());
    c->state.release();
    erase(running, c);
  }

  // --- request lifecycle ------------------------------------------------------------
  void enqueue(std::unique_ptr<Request> r) {
    Request* q = r.get();
    live.emplace(q->id, std::move(r));
    if (q->limits.max_tokens == 0) {  // nothing to generate
      for (auto& c : q->choices) end_choice(c.get(), StopReason::kLength);
      return;
    }
    push_waiting(q->choices[0].get());
  }

  // Delivers on_done and retires the request.
  void complete(Request* r, Status status) {
    FOLIO_CHECK(!r->done);
    r->done = true;
    RequestResult& res = r->result;
    res.status = std::move(status);
    res.prompt_tokens = static_cast<int64_t>(r->choices[0]->state.n_prompt);
    res.completion_tokens = 0;
    res.choices.clear();
    bool cancelled = false;
    uint64_t stopped = 0, length = 0, aborted = 0;
    for (auto& c : r->choices) {
      c->result.n_generated = c->state.n_generated;
      c->result.kept_tokens = c->state.kept_tokens();
      res.completion_tokens += c->state.n_generated;
      cancelled |= c->result.stop == StopReason::kCancelled;
      switch (c->result.stop) {
        case StopReason::kEndOfGeneration:
        case StopReason::kStopString: ++stopped; break;
        case StopReason::kLength:
        case StopReason::kContextFull: ++length; break;
        case StopReason::kCancelled: ++aborted; break;
      }
      res.choices.push_back(c->result);
    }
    const double e2e = seconds_between(r->submitted, Clock::now());
    metrics.update([&](ServingMetrics::Snapshot& m) {
      ++m.requests_finished;
      if (!res.status.ok()) {
        ++m.requests_failed;
      } else {
        if (cancelled) ++m.requests_cancelled;
        m.choices_stopped += stopped;
        m.choices_length += length;
        m.choices_aborted += aborted;
      }
      m.e2e.observe(e2e);
      m.request_prompt.observe(static_cast<double>(res.prompt_tokens));
      m.request_generation.observe(static_cast<double>(res.completion_tokens));
    });
    if (r->callbacks.on_done) r->callbacks.on_done(res);
    auto it = live.find(r->id);
    FOLIO_CHECK(it != live.end());
    finished.push_back(std::move(it->second));
    live.erase(it);
    ++n_completed;  // wait_idle sees it with the gauges (publish)
  }

  void end_choice(Choice* c, StopReason stop) {
    if (c->where == Choice::Where::kDone) return;
    if (stop != StopReason::kStopString && stop != StopReason::kCancelled)
      c->result.tail = c->state.finish(&stop);
    c->result.stop = stop;
    release_sequence(c);
    erase(waiting, c);
    c->where = Choice::Where::kDone;
    Request* r = c->req;
    if (++r->n_done == r->n) complete(r, Status());
  }

  // Ends every unfinished choice: kCancelled with an OK status (cancel, stop)
  // or the request fails with `status`.
  void end_request(Request* r, const Status& status) {
    if (r->done) return;
    for (auto& c : r->choices) {
      if (c->where == Choice::Where::kDone) continue;
      release_sequence(c.get());
      erase(waiting, c.get());
      c->result.stop = StopReason::kCancelled;
      c->where = Choice::Where::kDone;
      ++r->n_done;
    }
    complete(r, status);
  }

  void cancel_now(uint64_t id) {
    auto it = live.find(id);
    if (it != live.end()) end_request(it->second.get(), Status());
  }

  // --- one step ---------------------------------------------------------------------
  // The pool is short: the planner names the sequence to preempt (recompute
  // later). A sequence alone that still does not fit can never fit: its
  // generation ends (context full) or, still filling its prompt, its
  // request fails.
  void preempt(const Status& why) {
    plan_running.clear();
    for (const Choice* c : running) plan_running.push_back(plan_sequence(c, 0));
    const Preemption p = planner.plan_preemption(plan_running);
    Choice* c = running[p.index];
    switch (p.kind) {
      case Preemption::Kind::kEndContextFull:
        end_choice(c, StopReason::kContextFull);
        return;
      case Preemption::Kind::kFailRequest:
        end_request(c->req, why.with_context(
                                fmt::format("the KV cache cannot hold {} tokens of one sequence",
                                            c->state.tokens.size())));
        return;
      case Preemption::Kind::kPreempt:
        break;
    }
    release_sequence(c);
    push_waiting(c);
    metrics.update([](ServingMetrics::Snapshot& m) { ++m.preemptions; });
  }

  // Choice 0 of an unforked request has its prompt's logits: the other
  // choices share its blocks (fork) and sample from the same row. Choices
  // beyond max_seqs (or that the cache cannot fork) wait and prefill on
  // their own later, from the prefix cache.
  void fork_choices(Request* r) {
    Choice* c0 = r->choices[0].get();
    r->forked = true;
    int free_slots = options.max_seqs - running_slots();
    for (int i = 1; i < r->n; ++i) {
      Choice* c = r->choices[static_cast<size_t>(i)].get();
      if (free_slots <= 0) {
        push_waiting(c);
        continue;
      }
      Result<int> f = cache.fork_sequence(c0->state.seq);
      if (f.ok()) {
        --free_slots;
        c->state.admit(*f, n_admitted++);
        c->where = Choice::Where::kRunning;
        running.push_back(c);
      } else {  // no room for another sequence: it prefills on its own later
        push_waiting(c);
      }
    }
  }

  // Samples and applies one token; returns its id (-1 when sampling failed
  // and the request ended).
  int32_t sample(Choice* c, const float* row) {
    Request* r = c->req;
    c->state.decoding = true;
    Result<SampledToken> st = c->state.sample(row, workspace);
    if (!st.ok()) {
      end_request(r, st.status().with_context(fmt::format("sampling choice {}", c->index)));
      return -1;
    }
    const int32_t id = st->token;
    const Clock::time_point now = Clock::now();
    AcceptedToken acc = c->state.accept(st->token, tok.vocab(), r->limits);
    const bool ttft = !r->first_token;
    r->first_token = true;
    const bool itl = acc.kept && c->has_token;
    metrics.update([&](ServingMetrics::Snapshot& m) {
      if (ttft) {
        m.ttft.observe(seconds_between(r->submitted, now));
        m.request_prompt_tokens += c->state.n_prompt;
      }
      if (itl) m.itl.observe(seconds_between(c->last_token, now));
      if (acc.kept) ++m.generated_tokens;
    });
    if (acc.kept) {
      c->has_token = true;
      c->last_token = now;
      if (r->callbacks.on_token) {
        TokenEvent ev;
        ev.choice = c->index;
        ev.token = std::move(*st);
        ev.text = std::move(acc.text);
        ev.kept_tokens = c->state.kept_tokens();
        r->callbacks.on_token(ev);
      }
    }
    if (acc.stop) end_choice(c, *acc.stop);
    return id;
  }

  // Decoding sequences that may speculate get their drafts for this step
  // (every other running sequence none).
  void propose_drafts() {
    for (Choice* c : running) c->state.draft.clear();
    if (proposer == nullptr) return;
    if (skip_drafts) {
      skip_drafts = false;
      return;
    }
    const SpeculativeOptions& so = options.spec;
    const auto n_decoding =
        std::count_if(running.begin(), running.end(), [](const Choice* c) { return c->state.decoding; });
    if (n_decoding > so.max_batch) return;
    spec_requests.clear();
    spec_choices.clear();
    for (Choice* c : running) {
      SequenceState& st = c->state;
      if (!st.decoding || !c->req->speculative || !st.spec.take_step()) continue;
      // Positions stay below n_ctx, and a verification never yields more
      // tokens than max_tokens leaves (its accepted drafts plus one).
      int64_t k = std::min<int64_t>(so.draft_max, c->req->limits.n_ctx -
                                                      static_cast<int64_t>(st.tokens.size()));
      if (c->req->limits.max_tokens >= 0)
        k = std::min(k, c->req->limits.max_tokens - st.n_generated - 1);
      // Drafts stop where the reasoning budget forces a token: none while
      // it forces.
      if (st.free_tokens() >= 0) k = std::min(k, st.free_tokens());
      if (k < std::max(1, so.draft_min)) continue;
      if (!c->spec_begun) {
        const Status b = proposer->begin(c->spec_id());
        if (!b.ok()) {
          if (b.code() != StatusCode::kResourceExhausted)
            FOLIO_LOG_WARN("speculative decoding: {}", b.to_string());
          continue;
        }
        c->spec_begun = true;
      }
      spec_requests.push_back({c->spec_id(), st.tokens, static_cast<int>(k), st.seq});
      spec_choices.push_back(c);
    }
    if (spec_requests.empty()) return;
    proposals.resize(spec_requests.size());
    const Status p = proposer->propose(spec_requests, std::span<std::vector<int32_t>>(
                                                          proposals.data(), spec_requests.size()));
    if (!p.ok()) {  // this step runs without drafts
      FOLIO_LOG_WARN("speculative decoding: {}", p.to_string());
      return;
    }
    for (size_t i = 0; i < spec_choices.size(); ++i) {
      SequenceState& st = spec_choices[i]->state;
      if (static_cast<int64_t>(proposals[i].size()) >= std::max(1, so.draft_min))
        st.draft.swap(proposals[i]);
    }
  }

  // `c` ends while its drafts are verified: its cache sequence keeps the
  // drafts sampling accepted (their blocks enter the prefix cache as a run
  // without speculation would have put them there) before it is released.
  void keep_verified(Choice* c) {
    const std::vector<int32_t>& t = c->state.tokens;
    const int64_t held = cache.seq_len(c->state.seq);
    const int64_t last = static_cast<int64_t>(t.size()) - 1;  // never in the cache unspeculated
    int64_t keep = c->verify_base;
    while (keep < held && keep < last &&
           t[static_cast<size_t>(keep)] == verifying[static_cast<size_t>(keep - c->verify_base)])
      ++keep;
    c->verify_base = -1;
    const Status st = cache.verify(c->state.seq, keep);
    if (!st.ok()) FOLIO_LOG_ERROR("scheduler: keeping verified positions: {}", st.to_string());
  }

  // The forward verified `c`'s drafts: logits rows [row, row + rows) are
  // those of its last token and of each draft. Samples row after row while
  // the sampled token equals the draft it verifies, then keeps the verified
  // positions in the cache.
  void verify(Choice* c, const TensorView& logits, int64_t row, int64_t rows) {
    const int k = static_cast<int>(rows - 1);
    verifying.assign(c->state.draft.begin(), c->state.draft.end());
    FOLIO_CHECK(static_cast<int64_t>(verifying.size()) >= k);
    c->verify_base = cache.seq_len(c->state.seq) - k;  // positions verified before the step
    int accepted = 0;
    for (int i = 0; i <= k; ++i) {
      const int32_t id = sample(c, logits.row<const float>(row + i));
      const bool match = i < k && id == verifying[static_cast<size_t>(i)];
      if (match) ++accepted;
      if (!match || c->where != Choice::Where::kRunning) break;
    }
    c->state.draft.clear();
    if (c->spec_begun) proposer->accept(c->spec_id(), accepted);
    c->state.spec.record(k, accepted, options.spec.min_accept);  // may pause it
    metrics.update([&](ServingMetrics::Snapshot& m) { m.spec.record(k, accepted); });
    if (c->where != Choice::Where::kRunning) return;  // ended: keep_verified ran
    // The sequence holds its last token and the accepted drafts; the token
    // sampled after them is its next decode token.
    const int64_t keep = c->verify_base + accepted;
    FOLIO_CHECK(keep + 1 == static_cast<int64_t>(c->state.tokens.size()));
    c->verify_base = -1;
    const Status st = cache.verify(c->state.seq, keep);
    if (!st.ok()) end_request(c->req, st.with_context("speculative decoding: keeping the verified positions"));
  }

  // Runs `list` as one forward and samples the sequences that reached
  // their last known token. Returns the forward's status (nothing sampled
  // when it failed; the cache keeps its sequences, though a hybrid cache may
  // have lost their recurrent state: kDataLoss at their next plan).
  Status execute(std::span<const Entry> list) {
    batch.clear();
    outputs.clear();
    int64_t n_prefill = 0;
    int64_t n_rows = 0;
    for (const Entry& e : list) {
      if (!e.choice->state.decoding) n_prefill += e.n;
      const int64_t rows = e.choice->state.add_to_batch(batch, e.held, e.n);
      if (rows > 0) outputs.push_back({e.choice, n_rows, rows});
      n_rows += rows;
    }
    const Clock::time_point t0 = Clock::now();
    Result<TensorView> logits = model.forward(batch, cache, ctx);
    if (!logits.ok()) return logits.status();

    for (const auto& [c, row, rows] : outputs) {
      if (c->where != Choice::Where::kRunning) continue;  // its request failed this step
      if (rows > 1) {
        verify(c, *logits, row, rows);
        continue;
      }
      const float* lp = logits->row<const float>(row);
      Request* r = c->req;
      const bool fork = !r->forked && c->index == 0;
      if (fork) fork_choices(r);  // before choice 0 samples: the forks hold the prompt alone
      sample(c, lp);
      if (!fork) continue;
      for (auto& sib : r->choices) {
        if (sib.get() != c && sib->where == Choice::Where::kRunning && !r->done)
          sample(sib.get(), lp);
      }
    }
    const double dt = seconds_between(t0, Clock::now());
    const int64_t n_tokens = batch.size();
    StreamCounters stream;
    bool has_stream = false;
    for (const Backend* b : ctx.backends()) {
      const std::optional<StreamCounters> c = b->stream_counters();
      if (!c) continue;
      has_stream = true;
      stream.dispatches += c->dispatches;
      stream.barriers += c->barriers;
      stream.submits += c->submits;
    }
    metrics.update([&](ServingMetrics::Snapshot& m) {
      ++m.steps;
      m.device_stream = has_stream;
      m.device_dispatches = stream.dispatches;
      m.device_barriers = stream.barriers;
      m.device_submits = stream.submits;
      m.prompt_tokens += static_cast<uint64_t>(n_prefill);
      m.step_time.observe(dt);
      m.batch_tokens.observe(static_cast<double>(n_tokens));
    });
    return Status();
  }

  // Plans the step (engine/schedule_planner.h) and applies the plan to the
  // requests: admitted choices run, refused requests fail. Returns false
  // when nothing runs.
  bool plan_step() {
    propose_drafts();
    plan_running.clear();
    for (const Choice* c : running)
      plan_running.push_back(plan_sequence(c, cache.seq_len(c->state.seq)));
    plan_waiting.clear();
    for (const Choice* c : waiting) plan_waiting.push_back(plan_sequence(c, 0));
    running_snapshot = running;
    waiting_snapshot = waiting;
    planner.plan({plan_running, plan_waiting, n_admitted}, cache_view, plan);
    n_admitted = plan.next_admission;

    admitted_now.clear();
    for (const SchedulePlan::Admission& a : plan.admissions) {
      Choice* c = waiting_snapshot[a.waiting];
      Request* r = c->req;
      erase(waiting, c);
      const bool first = !c->state.ever_admitted && c->index == 0;
      c->state.admit(a.seq, a.order);
      c->where = Choice::Where::kRunning;
      running.push_back(c);
      admitted_now.push_back(c);
      if (first) r->result.cached_prompt_tokens = std::min<int64_t>(a.cached, c->state.n_prompt);
      metrics.update([&](ServingMetrics::Snapshot& m) {
        m.prefix_queried_tokens += c->state.tokens.size();
        m.prefix_hit_tokens += static_cast<uint64_t>(a.cached);
      });
    }
    for (const SchedulePlan::Refusal& f : plan.refused)
      end_request(waiting_snapshot[f.waiting]->req, f.status);
    if (running.empty()) return false;

    entries.clear();
    for (const SchedulePlan::Piece& p : plan.pieces) {
      Choice* c = p.admitted ? admitted_now[p.index] : running_snapshot[p.index];
      entries.push_back({c, p.held, p.n});
      // The drafts the step's budget took (the rest are dropped).
      const int64_t past = p.held + p.n - static_cast<int64_t>(c->state.tokens.size());
      c->state.draft.resize(static_cast<size_t>(std::max<int64_t>(past, 0)));
    }
    FOLIO_CHECK(!entries.empty());
    return true;
  }

  void run_step() {
    if (!plan_step()) return;

    // Requests of an earlier failed batch run alone, the others together.
    group.clear();
    isolated.clear();
    for (const Entry& e : entries) {
      Request* r = e.choice->req;
      if (!r->isolate) {
        group.push_back(e);
      } else if (std::find(isolated.begin(), isolated.end(), r) == isolated.end()) {
        isolated.push_back(r);
      }
    }
    if (!group.empty()) {
      const Status st = execute(group);
      if (!st.ok() && !handle_failure(group, st)) return;
    }
    for (Request* r : isolated) {
      if (r->done) continue;
      group.clear();
      for (const Entry& e : entries) {
        if (e.choice->req == r && e.choice->where == Choice::Where::kRunning) group.push_back(e);
      }
      if (group.empty()) continue;
      const Status st = execute(group);
      if (st.ok()) {
        r->isolate = false;
      } else if (!handle_failure(group, st)) {
        return;
      }
    }
  }

  // A forward of `list` failed. A short pool preempts (and ends the step:
  // returns false). Otherwise the failure is pinned on a request by running
  // each alone: a batch of one request fails it, a batch of several marks
  // them all isolate for the next step. A sequence whose state the failed
  // forward lost (kDataLoss, hybrid caches) is recomputed like a preempted
  // one.
  bool handle_failure(std::span<const Entry> list, const Status& st) {
    if (st.code() == StatusCode::kResourceExhausted) {
      // Drafts first: the step runs again without them before anyone is
      // preempted.
      const bool drafts = std::any_of(list.begin(), list.end(), [](const Entry& e) {
        return !e.choice->state.draft.empty();
      });
      if (drafts) {
        skip_drafts = true;
        return false;
      }
      preempt(st);
      return false;
    }
    std::vector<Request*> reqs;
    for (const Entry& e : list) {
      if (std::find(reqs.begin(), reqs.end(), e.choice->req) == reqs.end())
        reqs.push_back(e.choice->req);
    }
    if (st.code() == StatusCode::kDataLoss) {
      for (const Entry& e : list) {
        if (e.choice->where != Choice::Where::kRunning) continue;
        release_sequence(e.choice);
        push_waiting(e.choice);
        e.choice->req->isolate = true;
      }
      return true;
    }
    if (reqs.size() == 1) {
      end_request(reqs[0], st.with_context("forward"));
      return true;
    }
    FOLIO_LOG_WARN("scheduler: a step of {} requests failed ({}); running each alone", reqs.size(),
                   st.to_string());
    for (Request* r : reqs) r->isolate = true;
    return true;
  }

  // Block gauges, read from the pool (step thread; no lock needed). Cached
  // blocks are counted by walking the free queue: O(free blocks).
  struct BlockGauges {
    int64_t total = 0, used = 0, free = 0, cached = 0;
    double usage = 0;
    int64_t window_total = 0, window_used = 0;  // sliding-window layers' pages
    int64_t block_size = 0;
  };
  BlockGauges block_gauges() const {
    BlockGauges g;
    if (const cache::KvCacheManager* mgr = cache.block_manager()) {
      const cache::BlockPool& pool = mgr->pool();
      g.total = pool.n_usable();
      g.used = pool.n_used();
      g.free = pool.n_free();
      for (cache::BlockId b = pool.front(); b != cache::kNullBlock; b = pool.next(b))
        g.cached += pool.is_hashed(b) ? 1 : 0;
      g.usage = g.total > 0 ? static_cast<double>(g.used) / static_cast<double>(g.total) : 0.0;
      g.block_size = cache.block_size();
    }
    for (int k = 1; const cache::KvCacheManager* w = cache.windowed_manager(k); ++k) {
      g.window_total += w->pool().n_usable();
      g.window_used += w->pool().n_used();
    }
    return g;
  }

  // Publishes the gauges; the caller holds mu (`g` from block_gauges()).
  void publish_gauges(const BlockGauges& g) {
    int64_t n_running = 0;
    for (const auto& [id, r] : live) {
      for (const auto& c : r->choices) {
        if (c->where == Choice::Where::kRunning) {
          ++n_running;
          break;
        }
      }
    }
    n_waiting_public = static_cast<int64_t>(live.size()) - n_running;
    const int64_t n_waiting = n_waiting_public + static_cast<int64_t>(incoming.size());
    metrics.update([&](ServingMetrics::Snapshot& m) {
      m.requests_running = n_running;
      m.requests_waiting = n_waiting;
      m.kv_blocks_total = g.total;
      m.kv_blocks_used = g.used;
      m.kv_blocks_free = g.free;
      m.kv_blocks_cached = g.cached;
      m.kv_usage = g.usage;
      m.kv_window_blocks_total = g.window_total;
      m.kv_window_blocks_used = g.window_used;
      m.kv_block_size = g.block_size;
    });
  }

  // Hands the prefix cache's changes since the last call to on_kv_events.
  void deliver_kv_events() {
    if (kv_log == nullptr || kv_log->empty()) return;
    options.on_kv_events(kv_log->take());
  }

  void loop() {
    std::vector<std::unique_ptr<Request>> arrivals;
    std::vector<uint64_t> to_cancel;
    if (options.on_kv_events) {
      kv_log = cache.kv_events();
      if (kv_log != nullptr) {  // delivered with the first step's events
        kv_log->set_enabled(true);
        kv_log->all_cleared();
      }
    }
    for (;;) {
      const BlockGauges blocks = block_gauges();
      {
        std::unique_lock<std::mutex> lock(mu);
        publish_gauges(blocks);
        n_live -= n_completed;
        n_completed = 0;
        if (n_live == 0) idle.notify_all();
        wake.wait(lock, [&] {
          return stopping || !incoming.empty() || !cancels.empty() || !live.empty();
        });
        if (stopping) break;
        arrivals.swap(incoming);
        to_cancel.swap(cancels);
      }
      for (auto& r : arrivals) enqueue(std::move(r));
      arrivals.clear();
      for (uint64_t id : to_cancel) cancel_now(id);
      to_cancel.clear();
      if (!live.empty()) run_step();
      deliver_kv_events();
      finished.clear();
    }
    shutdown();
    deliver_kv_events();
  }

  // Every request still queued or running ends kCancelled.
  void shutdown() {
    std::vector<std::unique_ptr<Request>> arrivals;
    {
      std::lock_guard<std::mutex> lock(mu);
      arrivals.swap(incoming);
      cancels.clear();
    }
    for (auto& r : arrivals) {
      Request* q = r.get();
      live.emplace(q->id, std::move(r));
    }
    while (!live.empty()) end_request(live.begin()->second.get(), Status());
    finished.clear();
    const BlockGauges blocks = block_gauges();
    std::lock_guard<std::mutex> lock(mu);
    publish_gauges(blocks);
    n_live -= n_completed;
    n_completed = 0;
    idle.notify_all();
  }
};

Scheduler::Scheduler(const model::Model& model, const tokenizer::Tokenizer& tok,
                     model::ForwardContext& ctx, cache::KvCache& cache, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(model, tok, ctx, cache, options)), options_(options) {}

Scheduler::~Scheduler() {
  stop();
}

Status Scheduler::start() {
  const SchedulerOptions& o = options_;
  if (o.max_seqs < 1) return invalid_argument("max_seqs must be >= 1, got {}", o.max_seqs);
  if (o.max_batch_tokens < 1)
    return invalid_argument("max_batch_tokens must be >= 1, got {}", o.max_batch_tokens);
  if (o.ubatch < 1) return invalid_argument("ubatch must be >= 1, got {}", o.ubatch);
  if (o.chunk_cap < 0) return invalid_argument("chunk_cap must be >= 0, got {}", o.chunk_cap);
  if (o.max_waiting < 0) return invalid_argument("max_waiting must be >= 0, got {}", o.max_waiting);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->started || impl_->stopping)
    return invalid_argument("scheduler: start() called twice or after stop()");
  if (o.spec.enabled()) {
    FOLIO_RETURN_IF_ERROR(o.spec.validate());
    FOLIO_ASSIGN_OR_RETURN(impl_->proposer, make_proposer(o.spec));
  }
  impl_->started = true;
  impl_->thread = std::thread([impl = impl_.get()] { impl->loop(); });
  return Status();
}

void Scheduler::stop() {
  bool join = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    join = impl_->started;
  }
  impl_->wake.notify_all();
  if (join) {
    impl_->thread.join();
  } else {
    impl_->shutdown();  // never started: end what was queued on this thread
  }
}

Result<uint64_t> Scheduler::submit(GenerationRequest request, RequestCallbacks callbacks) {
  const int32_t n_vocab = static_cast<int32_t>(impl_->model.config().n_vocab);
  const int64_t n_ctx = impl_->cache.n_ctx();
  const std::vector<int32_t>& prompt = request.prompt;
  if (prompt.empty()) return invalid_argument("empty prompt: nothing to continue");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= n_vocab) {
      return invalid_argument("prompt token {} at index {} outside the vocabulary [0, {})",
                              prompt[i], i, n_vocab);
    }
  }
  if (request.n < 1 || request.n > kMaxChoices)
    return invalid_argument("n must be in [1, {}], got {}", kMaxChoices, request.n);
  FOLIO_RETURN_IF_ERROR(request.params.validate(n_vocab));
  // A request the KV cache could never hold, even alone, is refused here
  // rather than failing (or stopping short as "length") once running.
  FOLIO_RETURN_IF_ERROR(check_request_fits(static_cast<int64_t>(prompt.size()),
                                           request.params.max_tokens, n_ctx, impl_->kv_capacity));

  auto r = std::make_unique<Impl::Request>();
  r->n = request.n;
  r->priority = request.priority;
  r->limits.max_tokens = request.params.max_tokens;
  r->limits.n_ctx = n_ctx;
  r->limits.ignore_eos = request.ignore_eos;
  r->callbacks = std::move(callbacks);
  r->speculative = request.speculative;
  for (int i = 0; i < request.n; ++i) {
    SamplingParams p = request.params;
    if (p.seed) p.seed = *p.seed + static_cast<uint64_t>(i);
    FOLIO_ASSIGN_OR_RETURN(Sampler s, Sampler::create(std::move(p), n_vocab));
    r->choices.push_back(
        std::make_unique<Impl::Choice>(r.get(), i,
                                       SequenceState(prompt, std::move(s), &impl_->tok,
                                                     request.render_special, request.params.stop)));
  }
  if (request.grammar) {
    std::shared_ptr<const grammar::VocabTrie> trie;
    {
      std::lock_guard<std::mutex> lock(impl_->trie_mu);
      // A lazy grammar reads control tokens as their text where the output
      // shows them (its triggers and markup are often control tokens).
      const bool special = request.render_special && !request.grammar_triggers.empty();
      std::shared_ptr<const grammar::VocabTrie>& cached =
          special ? impl_->special_trie : impl_->trie;
      if (!cached) {
        FOLIO_ASSIGN_OR_RETURN(cached, build_vocab_trie(impl_->tok, special));
      }
      trie = cached;
    }
    for (auto& c : r->choices) {
      c->state.constrain(
          std::make_unique<GrammarConstraint>(request.grammar, trie, request.grammar_triggers));
    }
  }
  if (request.reasoning_budget) {
    const ReasoningBudgetSpec& b = *request.reasoning_budget;
    if (b.tokens < 0) return invalid_argument("reasoning budget must be >= 0, got {}", b.tokens);
    if (b.forced.empty())
      return invalid_argument("reasoning budget: no tokens to close the block with");
    for (const int32_t t : b.forced) {
      if (t < 0 || t >= n_vocab)
        return invalid_argument("reasoning budget: closing token {} outside the vocabulary [0, {})",
                                t, n_vocab);
    }
    for (auto& c : r->choices) c->state.limit_reasoning(request.reasoning_budget);
  }
  r->forked = request.n == 1;

  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return resource_exhausted("the scheduler is stopping");
    const int64_t queued = impl_->n_waiting_public + static_cast<int64_t>(impl_->incoming.size());
    if (queued >= options_.max_waiting) {
      return resource_exhausted("{} requests are waiting (limit {}); try again later", queued,
                                options_.max_waiting);
    }
    id = impl_->next_id++;
    r->id = id;
    r->submitted = Clock::now();
    impl_->incoming.push_back(std::move(r));
    ++impl_->n_live;
    impl_->metrics.update([](ServingMetrics::Snapshot& m) {
      ++m.requests_total;
      ++m.requests_waiting;
    });
  }
  impl_->wake.notify_one();
  return id;
}

void Scheduler::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->cancels.push_back(id);
  }
  impl_->wake.notify_one();
}

ServingMetrics::Snapshot Scheduler::metrics() const {
  return impl_->metrics.snapshot();
}

int64_t Scheduler::effective_chunk_cap() const {
  return impl_->planner.options().chunk_cap;
}

void Scheduler::wait_idle() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle.wait(lock, [&] { return impl_->n_live == 0; });
}

}  // namespace folio
