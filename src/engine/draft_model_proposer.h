// DraftModelProposer: speculation with a smaller model of the same
// vocabulary (-md FILE, --spec-type draft). Its own KV cache (paged; with a
// state pool when the draft is hybrid) holds, for each speculating target
// sequence, a draft sequence of the tokens the target verified. Each step,
// for all requests together:
//   1. catch-up: every draft sequence is fed the tokens the target added
//      since the last step (accepted drafts and the newly sampled token;
//      the whole prompt the first time), in forwards of at most
//      DraftModelRef::max_batch_tokens tokens; the logits of each one's last
//      token give its first draft;
//   2. drafting: each draft sequence is forked (blocks shared copy-on-write,
//      recurrent state copied) and the forks are fed their last draft, one
//      token per sequence per forward, all sequences in one forward, until
//      each has max_draft tokens or its draft's top probability falls below
//      p_min (that token is not proposed, as llama.cpp's
//      common_speculative_gen_draft). Drafts are greedy (argmax; the first
//      of equal logits).
// accept(id, n) then rolls the proposal back to what the target kept: the
// fork, truncated to its first n fed drafts where the cache allows (paged
// caches anywhere; hybrid ones only when n covers every fed draft), becomes
// the sequence's draft sequence, else it is removed and the next catch-up
// feeds the accepted drafts again. Rejected draft positions never stay in
// the draft cache. A sequence whose tokens no longer continue what its draft
// sequence holds (a new chat turn) is truncated to the common prefix
// (KvCache::truncation_point) first.
//
// Failures: a catch-up forward that fails resets the draft sequences it fed
// (they prefill again next step) and propose() returns its status with no
// drafts; a drafting forward that fails ends those proposals where they
// are. begin() fails with kResourceExhausted when the draft cache has no
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

class DraftModelProposer final : public DraftProposer {
 public:
  // `draft`: every pointer non-null (borrowed); its cache holds no sequence.
  DraftModelProposer(const DraftModelRef& draft, float p_min);
  ~DraftModelProposer() override;  // removes every draft sequence it holds
  DraftModelProposer(const DraftModelProposer&) = delete;
  DraftModelProposer& operator=(const DraftModelProposer&) = delete;

  Status begin(uint64_t id) override;
  Status propose(std::span<const DraftRequest> requests,
                 std::span<std::vector<int32_t>> out) override;
  void accept(uint64_t id, int accepted) override;
  void release(uint64_t id) override;

  // Sequences begun and not released.
  size_t n_sequences() const { return seqs_.size(); }

 private:
  struct Seq {
    int main = -1;              // draft cache sequence of the verified tokens (-1: none yet)
    std::vector<int32_t> held;  // the tokens `main` holds
    int fork = -1;              // the last proposal's scratch sequence (-1: none)
    std::vector<int32_t> fed;   // the drafts fed into `fork` after `held`
  };
  // One request's work in a step.
  struct Work {
    Seq* seq = nullptr;
    size_t out = 0;     // its index in requests / out
    int64_t from = 0;   // catch-up: next position to feed
    int64_t len = 0;    // its tokens' count
    int max_draft = 0;  // proposal length at most
    bool drafting = false;
  };

  void drop_fork(Seq& s);
  Status catch_up(std::span<const DraftRequest> requests, std::span<std::vector<int32_t>> out);
  void draft(std::span<std::vector<int32_t>> out);

  DraftModelRef d_;
  ProposerSequences seqs_cache_;  // the draft cache's sequences
  float p_min_;
  int32_t n_vocab_;
  std::unordered_map<uint64_t, Seq> seqs_;
  std::vector<Work> work_;
  std::vector<size_t> active_;  // indices into work_
  std::vector<int64_t> n_fed_;  // catch-up: tokens of active_[i] in the batch
  cache::Batch batch_;
};

}  // namespace folio
