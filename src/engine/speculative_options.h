// SpeculativeOptions: how a generate loop speculates (--spec-type and its
// knobs, README "Speculative decoding"), and the per-sequence rule that
// turns speculation off where it does not pay (SpeculationTracker).
//
// Each decode step a speculating sequence carries up to draft_max proposed
// tokens that the target evaluates in the same forward as its last sampled
// token (logits for every position); the longest prefix the target's own
// sampling agrees with is kept, plus the target's next token. Proposals of
// fewer than draft_min tokens are not verified (a plain decode step runs).
// Proposers: n-gram lookup (engine/ngram_proposer.h), a draft model
// (engine/draft_model_proposer.h, loaded by the caller: DraftModelRef) and
// the target's own MTP head (engine/mtp_proposer.h: MtpRef).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/draft_proposer.h"

namespace folio {

namespace cache {
class KvCache;
}
namespace model {
class Model;
class ForwardContext;
class HiddenStates;
class MtpHead;
}  // namespace model

enum class SpecType { kNone, kNgram, kDraft, kMtp };

// The draft model of SpecType::kDraft, loaded beside the target (same
// vocabulary: check_draft_vocabulary) and borrowed by the engine, which uses
// it from its generate loop's thread only.
struct DraftModelRef {
  const model::Model* model = nullptr;
  // Its own cache, holding no sequence: two sequences for each speculating
  // target sequence (the verified tokens, and a scratch fork for the
  // proposal), plus one state slot each when the draft is hybrid.
  cache::KvCache* cache = nullptr;
  model::ForwardContext* ctx = nullptr;
  int64_t max_batch_tokens = 512;  // tokens per forward while catching up on new tokens
};

// The MTP head of SpecType::kMtp (model/mtp_head.h), made beside the target
// and borrowed by the engine, which uses it from its generate loop's thread
// only.
struct MtpRef {
  const model::MtpHead* head = nullptr;
  // Its own K/V cache, holding no sequence: one sequence per speculating
  // target sequence.
  cache::KvCache* cache = nullptr;
  model::ForwardContext* ctx = nullptr;  // its own
  // The target's final hidden states: the hidden sink of the engine's
  // ForwardContext (ForwardContext::set_hidden_sink).
  model::HiddenStates* hidden = nullptr;
  int64_t max_batch_tokens = 512;  // tokens per forward while catching up
};

struct SpeculativeOptions {
  SpecType type = SpecType::kNone;
  int ngram_min = 2;  // n-gram sizes looked up, longest first (--spec-ngram-n-min / -n-max)
  int ngram_max = 4;
  int draft_max = 8;  // tokens proposed per step at most (--draft-max)
  int draft_min = 1;  // fewer proposed: no speculation this step (--draft-min)
  // Scheduler: no drafts in a step where more sequences decode than this
  // (a large batch is compute-bound; verification costs more than it
  // saves). --spec-max-batch.
  int max_batch = 8;
  // A sequence pauses speculating once the share of its drafted tokens
  // accepted (an exponential average over its verifications) falls below
  // this (--spec-min-accept; 0: never pauses); SpeculationTracker.
  double min_accept = 0.2;
  // Draft model and MTP head: a proposal stops before a token the drafter
  // gives a probability below this (--draft-p-min; 0: never; llama.cpp's
  // default).
  float draft_p_min = 0.0f;
  DraftModelRef draft;  // kDraft: required
  MtpRef mtp;           // kMtp: required
  // Builds the proposer instead of the one `type` names (which must still
  // not be kNone): for programs embedding the engines; the tests use
  // proposers that know the target's output. Not a flag.
  std::function<std::unique_ptr<DraftProposer>()> make;

  bool enabled() const { return type != SpecType::kNone; }
  Status validate() const;
};

// "none", "ngram", "draft" or "mtp".
Result<SpecType> parse_spec_type(std::string_view name);
const char* spec_type_name(SpecType type);

// The proposer the options call for (nullptr for kNone). kInvalidArgument:
// kDraft without a draft model, kMtp without an MTP head.
Result<std::unique_ptr<DraftProposer>> make_proposer(const SpeculativeOptions& options);

// One sequence's speculation record: whether it speculates at its next
// decode step, and what its verifications drafted and accepted. After
// kWarmup verifications, an average acceptance below min_accept pauses it
// for kFirstPause decode steps, then it tries again with a fresh average;
// each further pause is twice as long (at most kMaxPause steps), since the
// text it writes may start (or stop) repeating its input at any point.
class SpeculationTracker {
 public:
  static constexpr int kWarmup = 4;  // verifications before the rule applies
  static constexpr int kFirstPause = 16;
  static constexpr int kMaxPause = 256;

  // Called once per decode step: whether this step may carry drafts (a
  // paused sequence counts the step instead).
  bool take_step();
  bool paused() const { return pause_left_ > 0; }
  // One verification: `drafted` tokens proposed, the first `accepted` kept.
  void record(int drafted, int accepted, double min_accept);

  int64_t drafted() const { return drafted_; }
  int64_t accepted() const { return accepted_; }

 private:
  int pause_left_ = 0;             // decode steps still paused
  int next_pause_ = kFirstPause;   // length of the next pause
  int verifications_ = 0;          // since the last pause
  double rate_ = 1.0;  // exponential average of accepted / drafted
  int64_t drafted_ = 0;
  int64_t accepted_ = 0;
};

// Counters of a generate loop's verifications (the run summary, /metrics).
struct SpeculationCounts {
  uint64_t drafts = 0;           // verifications (steps that carried drafts)
  uint64_t draft_tokens = 0;     // tokens proposed and verified
  uint64_t accepted_tokens = 0;  // of them, accepted
  std::vector<uint64_t> accepted_per_pos;  // [draft_max] accepted at draft position i

  void record(int drafted, int accepted);
  double acceptance() const {
    return draft_tokens > 0 ? static_cast<double>(accepted_tokens) / static_cast<double>(draft_tokens)
                            : 0.0;
  }
};

}  // namespace folio
