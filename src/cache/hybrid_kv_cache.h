// HybridKvCache: the cache of a hybrid model (qwen3next, qwen35, qwen35moe:
// gated DeltaNet layers, granitehybrid: Mamba-2 layers, beside
// full-attention layers; DESIGN.md point 4), for
// geometries with recurrent layers, by composition:
//   - an attention part, a PagedKvCache or a ContiguousKvCache
//     (options.storage), holding K/V of the attention layers only (layer il
//     of the geometry is layer attn_index(il) of the part);
//   - recurrent storage for the recurrent layers, per layer
//       conv taps   F32 [K - 1, channels, n_slots]
//       state       F32 [S_k, S_v, H_v, n_slots] (Mamba-2: [d_state, head dim, heads])
//     (conv_state / ssm_state), one slot per live sequence handed out by a
//     StatePool. Layers choose which part they use: attention layers
//     read k_table / k_view / ..., recurrent layers the state pools through
//     the slots of KvPlan::recurrent; a recurrent layer with_kv (falcon-h1's
//     parallel mixers) is in both parts.
// Sequence ids, lengths, positions, memory limits and block bookkeeping are
// the attention part's (block_manager() is the paged part's manager); a
// sequence also holds one state slot for its whole life.
//
// The recurrent state of a sequence summarises all its tokens, so:
//   - fork_sequence copies the parent's state into the child's new slot;
//     remove_sequence releases the slot (reused by the next sequence);
//   - truncate(seq, len) works for len = seq_len (no-op), len = 0 (state
//     reset) and a block boundary for which a prefix checkpoint exists
//     (state restored from it); any other length is kUnsupported;
//   - take_cached_prefix returns a prefix only where a checkpoint of the
//     recurrent state for exactly that prefix exists (below);
//   - speculative decoding: a step feeding a sequence its token and k draft
//     tokens (Batch::unverified) saves k draft snapshots (StateCheckpoint
//     with `draft`), the state after its first 1 .. k tokens, into free
//     slots (draft_slots extra ones, else slots of prefix checkpoints);
//     apply() holds them for the sequence; verify(seq, len) copies the one
//     after the last accepted token into the sequence's slot (none when
//     every draft was accepted) and frees them. The recurrent layers save
//     snapshots like prefix checkpoints, so the restored state is the one
//     a run without drafts computes, bit for bit. A plan that finds fewer
//     than k free slots is refused with kResourceExhausted (the engines
//     then run the step without drafts). Prefix hashes (and checkpoints)
//     cover verified tokens only: draft tokens join the hash chain in
//     verify(), once accepted.
//
// Failed forwards (plan / prepare / apply / discard). Recurrent layers update
// each sequence's state in place, in its slot (the fused decode ops write
// straight into the pool), so nothing is copied per step. The price: a
// forward that fails after plan() leaves the states of the batch's sequences
// partly updated. discard() therefore marks every such sequence that held
// state (length > 0) as lost: plan() then refuses it with kDataLoss until it
// is truncated to 0 (or to a checkpoint) or removed, and the caller
// recomputes it (a scheduler treats it like a preempted sequence).
// Sequences of length 0 need nothing: prepare() zeroes the slot of every
// sequence that starts from the empty prefix, so a retry starts clean. The
// attention part's K/V follows its own contract (nothing committed before
// apply()). A plan that fails (kResourceExhausted, invalid batch) writes
// nothing.
//
// Prefix caching (paged attention part, max_checkpoints > 0). A checkpoint
// is a copy of the whole recurrent state (every recurrent layer) after
// exactly the first n * block_size tokens of a sequence, registered under
// the block-chain hash of those tokens (BlockHasher, the same chain
// the paged cache uses for its blocks). Policy: a forward saves one where a
// sequence's batch crosses a block boundary that is
//   (a) the last boundary a multi-token chunk (prompt prefill) crosses: the
//       end of the prompt's last full block, chunk by chunk;
//   (b) a multiple of checkpoint_interval blocks (long prompts, long
//       generations: a later turn of a conversation resumes near its end);
//   (c) the branch point found by take_cached_prefix: the KV cache held a
//       longer prefix of this prompt than any checkpoint, so another prompt
//       shares it (a system prompt); saving there lets the next prompt with
//       that prefix resume from it, like SGLang saving state where prefixes
//       branch.
// A checkpoint takes a free state slot (never one a sequence holds); state
// slots number max_seqs + max_checkpoints, so memory is bounded. Free slots
// holding checkpoints are evicted least recently used first, by sequences
// needing a slot and by newer checkpoints (StatePool). Only full
// blocks count, and at least the last prompt token is always computed.
// take_cached_prefix takes the longest prefix for which both the KV blocks
// are cached and a checkpoint exists, copies the checkpoint into the
// sequence's slot and returns its length. Checkpoints are saved inside the
// forward (the layer splits a sequence's tokens at the boundary) into slots
// the plan reserved, and registered by apply(); discard() forgets them.
// stats() reports them.
//
// Not thread-safe: one owner plans, prepares, forwards and applies.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache/block_hash.h"
#include "cache/kv_cache.h"
#include "cache/state_pool.h"
#include "tensor/buffer.h"

namespace folio::cache {

struct HybridCacheStats {
  int32_t state_slots = 0;         // max_seqs + max_checkpoints
  int32_t slots_held = 0;          // by live sequences
  int32_t checkpoints_cached = 0;  // free slots holding a checkpoint now
  uint64_t checkpoints_saved = 0;
  uint64_t checkpoints_evicted = 0;
  uint64_t prefix_hits = 0;        // take_cached_prefix calls that restored a checkpoint
  uint64_t prefix_hit_tokens = 0;  // positions they skipped
  uint64_t prefix_misses = 0;      // calls that found no usable checkpoint
  size_t slot_bytes = 0;           // one slot: every recurrent layer's conv taps and state
};

class HybridKvCache final : public KvCache {
 public:
  // Allocates both parts for `geometry` (which must have recurrent and
  // attention layers), state zeroed.
  static Result<std::unique_ptr<HybridKvCache>> create(const KvGeometry& geometry,
                                                       const KvCacheOptions& options);

  int n_layer() const override { return static_cast<int>(attn_index_.size()); }
  int64_t n_ctx() const override { return attn_->n_ctx(); }
  DType type() const override { return attn_->type(); }
  size_t bytes() const override;  // K/V plus recurrent state
  // "K/V 32 blocks of 16 tokens (0.1 MiB), recurrent state 6 slots of 0.40
  // MiB (2 sequences, 4 checkpoints)"; with draft slots "(2 sequences, 4
  // checkpoints, 8 draft snapshots)"
  std::string summary() const override;

  bool has_sequence(int seq) const override { return attn_->has_sequence(seq); }
  int64_t seq_len(int seq) const override { return attn_->seq_len(seq); }
  Result<int> add_sequence() override;
  Result<int> fork_sequence(int parent) override;
  Status remove_sequence(int seq) override;
  Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> prompt) override;
  Status truncate(int seq, int64_t len) override;
  Status verify(int seq, int64_t len) override;
  int64_t truncation_point(int seq, int64_t len) const override;
  void clear() override;

  Status plan(const Batch& batch, KvPlan& plan) const override;
  void prepare(const KvPlan& plan) override;
  void apply(const KvPlan& plan) override;
  void discard(const KvPlan& plan) override;

  TensorView k_table(int layer) const override { return attn_->k_table(attn_layer(layer)); }
  TensorView v_table(int layer) const override { return attn_->v_table(attn_layer(layer)); }
  TensorView k_view(int layer) const override { return attn_->k_view(attn_layer(layer)); }
  TensorView v_view(int layer) const override { return attn_->v_view(attn_layer(layer)); }
  bool paged() const override { return attn_->paged(); }
  int block_size() const override { return attn_->block_size(); }
  const KvCacheManager* block_manager() const override { return attn_->block_manager(); }
  KvEventLog* kv_events() override { return attn_->kv_events(); }
  const KvCacheManager* windowed_manager(int g) const override {
    return attn_->windowed_manager(g);
  }
  size_t pool_block_bytes() const override { return attn_->pool_block_bytes(); }
  size_t windowed_bytes() const override { return attn_->windowed_bytes(); }
  int kv_group(int layer) const override { return attn_->kv_group(attn_layer(layer)); }
  // The attention part's, when a sequence can also get a recurrent-state
  // slot (StatePool::create makes at least one; checked all the same).
  int64_t token_capacity() const override {
    return pool_.n_slots() > 0 ? attn_->token_capacity() : 0;
  }

  TensorView conv_state(int layer) const override;
  TensorView ssm_state(int layer) const override;

  // The attention part and the slot bookkeeping, for tests and metrics.
  const KvCache& attention() const { return *attn_; }
  const StatePool& state_pool() const { return pool_; }
  // State slot of a live sequence.
  int32_t slot_of(int seq) const;
  // True when a failed forward lost the sequence's recurrent state.
  bool state_lost(int seq) const;
  HybridCacheStats stats() const;
  Status check_invariants() const;

 private:
  struct Layer {
    TensorView conv;  // [K - 1, channels, n_slots]
    TensorView ssm;   // [S_k, S_v, H_v, n_slots]; empty for conv-only layers (short conv)
  };
  struct Seq {
    int32_t slot = -1;   // -1: not a live sequence
    bool zero = true;    // the state is the empty prefix's: prepare() zeroes the slot
    bool lost = false;   // a failed forward may have changed the state
    int64_t branch = 0;  // policy (c): checkpoint at this length (0: none)
    // Prefix hashing (checkpointing on): chain hash of each full block and
    // the tokens of the partial last block.
    std::vector<BlockHash> hashes;
    std::vector<int32_t> tail;
    // Speculation: the slots holding the state after the first 1 .. k
    // tokens of the last step (held from apply() to verify()), and that
    // step's draft tokens, not yet in the hash chain.
    std::vector<int32_t> snapshots;
    std::vector<int32_t> drafts;
  };

  HybridKvCache(StatePool pool, BlockHasher hasher)
      : pool_(std::move(pool)), hasher_(std::move(hasher)) {}
  int attn_layer(int layer) const;
  bool checkpointing() const { return max_checkpoints_ > 0; }
  Seq& seq_state(int seq);
  const Seq& seq_state(int seq) const;
  Status claim(int seq);                     // a fresh record with a slot for `seq`
  void reset(Seq& s);                        // back to the empty prefix
  void release_snapshots(Seq& s);            // frees s's draft snapshot slots
  // A new sequence may take a slot: fewer than n_slots - draft_slots are
  // held by sequences (draft snapshots aside).
  bool slot_for_sequence() const;
  void copy_slot(int32_t src, int32_t dst);  // every recurrent layer
  void zero_slot(int32_t slot);
  // Chain hashes of the full blocks of tokens[0, n) (from the root).
  void prefix_hashes(std::span<const int32_t> tokens, std::vector<BlockHash>& out) const;
  // Adds `tokens` to s's hash chain.
  void extend_hashes(Seq& s, std::span<const int32_t> tokens) const;

  std::unique_ptr<KvCache> attn_;
  bool paged_ = true;
  std::vector<int> attn_index_;  // [n_layer] layer of the attention part, -1: none
  std::vector<int> rec_index_;   // [n_layer] recurrent layer index, -1: none
  std::vector<Layer> layers_;    // [n_recurrent]
  std::unique_ptr<Buffer> buffer_;
  size_t slot_bytes_ = 0;
  StatePool pool_;
  BlockHasher hasher_;
  int max_checkpoints_ = 0;
  int checkpoint_interval_ = 0;
  int draft_slots_ = 0;
  int32_t n_snapshots_ = 0;  // slots held as draft snapshots, all sequences
  std::vector<Seq> seqs_;  // by sequence id
  uint64_t epoch_ = 0;     // bumped by every mutation; plans carry the value they saw
  HybridCacheStats stats_;
};

}  // namespace folio::cache
