// MtpProposer: speculation with the target model's own MTP head (--spec
// mtp; model/mtp_head.h). The head guesses the token after next from the
// target's final hidden state at a position and the token that follows it,
// so it needs what the target computed: the target's ForwardContext keeps
// the final hidden state of every position it runs (MtpRef::hidden, its
// hidden sink), and the head keeps its own one-layer K/V cache, one
// sequence per speculating target sequence, holding only verified
// positions. Each step, for all requests together:
//   1. catch-up: each head sequence is fed the positions the target
//      verified since the last step, up to the newly sampled token at
//      position L (the whole prompt the first time), token p paired with
//      the target's state at p - 1, in forwards of at most
//      MtpRef::max_batch_tokens tokens; the head's logits at L give draft 1
//      (greedy: argmax, the first of equal logits);
//   2. chaining: draft i at position L + i, paired with the head's own
//      state at L + i - 1, gives draft i + 1: one forward per draft
//      position for all sequences, until each has max_draft tokens or its
//      draft's top probability falls below p_min (--draft-p-min; that token
//      is not proposed, as llama.cpp's MTP drafting). The
//      chained positions then leave the head's cache again (truncated to
//      L + 1), so it never holds an unverified position between steps.
// Nothing is kept per proposal, so accept() has nothing to roll back: the
// next catch-up starts from what the target verified. A sequence whose
// tokens no longer continue what its head sequence holds (a new chat turn)
// is truncated to the common prefix first. A target state the sink does
// not hold (positions a prefix cache supplied without computing them) is
// taken as zeros: the guesses get worse, the output stays the target's.
//
// Failures: a catch-up forward that fails resets the head sequences it fed
// (they start again next step) and propose() returns its status with no
// drafts; a chaining forward that fails ends those proposals where they
// are. begin() fails with kResourceExhausted when the head's cache has no
// room for another sequence.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cache/batch.h"
#include "engine/draft_proposer.h"
#include "engine/proposer_sequences.h"
#include "engine/speculative_options.h"

namespace folio {

class MtpProposer final : public DraftProposer {
 public:
  // `mtp`: every pointer non-null (borrowed); its cache holds no sequence.
  MtpProposer(const MtpRef& mtp, float p_min);
  ~MtpProposer() override;  // removes every head sequence it holds
  MtpProposer(const MtpProposer&) = delete;
  MtpProposer& operator=(const MtpProposer&) = delete;

  Status begin(uint64_t id) override;
  Status propose(std::span<const DraftRequest> requests,
                 std::span<std::vector<int32_t>> out) override;
  void accept(uint64_t id, int accepted) override {}
  void release(uint64_t id) override;

  size_t n_sequences() const { return seqs_.size(); }

 private:
  struct Seq {
    int head = -1;              // the head cache's sequence (-1: none yet)
    std::vector<int32_t> held;  // the tokens it holds (positions 0 ..)
  };
  // One request's work in a step.
  struct Work {
    Seq* seq = nullptr;
    size_t out = 0;    // its index in requests / out
    int target = -1;   // the target cache sequence (hidden states)
    int64_t from = 0;  // catch-up: next position to feed
    int64_t last = 0;  // L: position of the newly sampled token
    int max_draft = 0;
    std::vector<float> state;  // [E] the head's state at the last drafted position
  };

  // Appends the state row paired with position `pos` of `w` (the target's
  // at pos - 1, zeros where absent).
  void push_target_state(const Work& w, int64_t pos);
  Status catch_up(std::span<const DraftRequest> requests, std::span<std::vector<int32_t>> out);
  void chain(std::span<std::vector<int32_t>> out);

  MtpRef m_;
  ProposerSequences seqs_cache_;  // the head cache's sequences
  float p_min_;
  int64_t n_embd_;
  int32_t n_vocab_;
  std::unordered_map<uint64_t, Seq> seqs_;
  std::vector<Work> work_;
  cache::Batch batch_;
  std::vector<float> states_;  // [E, batch_.size()] the rows paired with batch_'s tokens
};

}  // namespace folio
