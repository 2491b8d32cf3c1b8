// PagedKvCache: the KV cache in blocks of one pool (DESIGN.md points 1-3),
// the KvCache interface over KvCacheManager.
//
// Storage, per attention layer, one region each for K and V:
//   K [Dk, n_kv_head, block_size, n_blocks], V [Dv, n_kv_head, block_size, n_blocks]
// (options.type). Slot = block * block_size + offset is a row of k_table /
// v_table ([D * n_kv_head, block_size * n_blocks]) in every layer;
// kFlashAttn reads k_view / v_view through each sequence's block table
// (KvLayout::kPaged). Block 0 is the pool's null block: it pads block-table
// rows and is never read as data.
//
// Memory follows the tokens held: a sequence takes blocks as it grows and
// returns them when truncated or removed; nothing is reserved per sequence.
// n_ctx is only a limit on one sequence's length.
//
// Prefix sharing: full blocks are registered under their prefix's chain hash
// once the forward that wrote them succeeded (apply). take_cached_prefix
// gives a new sequence every cached full block its prompt begins with (ref
// counted; also blocks of sequences still running); the forward then runs
// only the rest of the prompt. fork_sequence shares all blocks of the
// parent; a sequence that writes into a partial block others hold gets a
// copy first (prepare performs plan.pages.copies in every layer).
//
// Batches: plan() groups the batch's tokens by sequence (any interleaving;
// per sequence, positions continue it in batch order), asks the manager for
// the blocks of the whole batch at once and numbers the batch's sequences
// 0..n-1 for the attention op in order of first appearance, with one
// block-table row each. If the pool is short, plan() returns
// kResourceExhausted and plan.pages.n_missing_blocks; nothing changes (a
// scheduler preempts and plans again).
//
// Sliding-window layers (KvLayerShape::window > 0, smaller than n_ctx) keep
// their K/V in pages of their own: one group of layers per window size,
// each with its own KvCacheManager (window set: blocks that leave the
// window return to its pool) and storage; the full-attention layers form
// the main group (group 0; without any, the first window's layers). The
// managers run in lockstep: every sequence exists in each with the same id
// and tokens, and plan() plans the batch in each (KvPlan::windowed holds
// the further groups' slots and block tables). A prefix hit is the longest
// one every group can serve (a windowed group needs only the blocks of the
// window before the hit). The main group's pool is sized as options say
// (n_blocks, memory_mib, or n_seq contexts; a memory budget pays for the
// windowed pages first); a windowed group's holds, for each of max_seqs
// sequences, its window plus three blocks (the partial block, rounding,
// a copy-on-write copy), plus the blocks of one step's max_step_tokens,
// so it is never the tighter limit while max_seqs sequences live (more
// are refused). Gemma 3 (5 of 6 layers windowed, 512 tokens) at a 32k
// context thus holds about a sixth of the K/V a full cache would.
//
// K/V types: f32, f16, bf16 and q8_0 — whatever kFlashAttn reads
// (backend/op.h); bf16 rows are converted by the portable tiled kernel.
//
// Not thread-safe: one owner (the engine's step thread) plans, prepares,
// forwards and applies; the forward only reads the plan and the storage.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache/kv_cache.h"
#include "cache/kv_cache_manager.h"
#include "tensor/buffer.h"

namespace folio::cache {

class PagedKvCache final : public KvCache {
 public:
  // Sizes the pools, allocates K/V for every layer of `geometry` (attention
  // layers only; host memory, zeroed) and creates options.n_seq empty
  // sequences (n_seq may be 0 here).
  static Result<std::unique_ptr<PagedKvCache>> create(const KvGeometry& geometry,
                                                      const KvCacheOptions& options);

  int n_layer() const override { return static_cast<int>(layers_.size()); }
  int64_t n_ctx() const override { return n_ctx_; }
  DType type() const override { return type_; }
  size_t bytes() const override;
  std::string summary() const override;

  bool has_sequence(int seq) const override { return manager().is_live(seq); }
  int64_t seq_len(int seq) const override { return manager().seq_len(seq); }
  Result<int> add_sequence() override;
  Result<int> fork_sequence(int parent) override;
  Status remove_sequence(int seq) override;
  Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> prompt) override;
  Status verify(int seq, int64_t len) override;
  Status truncate(int seq, int64_t len) override;
  int64_t truncation_point(int seq, int64_t len) const override;
  void clear() override;

  Status plan(const Batch& batch, KvPlan& plan) const override;
  void prepare(const KvPlan& plan) override;
  void apply(const KvPlan& plan) override;
  void discard(const KvPlan& plan) override;

  TensorView k_table(int layer) const override;
  TensorView v_table(int layer) const override;
  TensorView k_view(int layer) const override { return layers_[static_cast<size_t>(layer)].k; }
  TensorView v_view(int layer) const override { return layers_[static_cast<size_t>(layer)].v; }
  bool paged() const override { return true; }
  int block_size() const override { return manager().block_size(); }
  int kv_group(int layer) const override { return layers_[static_cast<size_t>(layer)].group; }

  // Block bookkeeping for schedulers and metrics (pool(): free, used and
  // cached blocks; peak_used(); lookup() of a prompt without taking it):
  // the main group's, and group g's (0 <= g < n_groups()).
  const KvCacheManager& manager() const { return groups_[0].manager; }
  const KvCacheManager& manager(int g) const { return groups_[static_cast<size_t>(g)].manager; }
  const KvCacheManager* block_manager() const override { return &manager(); }
  KvEventLog* kv_events() override { return &groups_[0].manager.events(); }
  const KvCacheManager* windowed_manager(int g) const override {
    return g >= 1 && g < n_groups() ? &manager(g) : nullptr;
  }
  int n_groups() const { return static_cast<int>(groups_.size()); }
  int32_t n_blocks() const { return manager().pool().n_blocks(); }
  // One block of the main group, all its layers, K and V.
  size_t block_bytes() const { return groups_[0].block_bytes; }
  size_t pool_block_bytes() const override { return block_bytes(); }
  size_t windowed_bytes() const override;
  // When no block is in use: free queues back to ascending ids.
  [[nodiscard]] bool defrag();
  // Every group's invariants, and that they hold the same sequences.
  Status check_invariants() const;

 private:
  struct Layer {
    TensorView k;  // [Dk, n_kv_head, block_size, n_blocks of its group]
    TensorView v;  // [Dv, n_kv_head, block_size, n_blocks of its group]; v_in_k: a view of k's rows
    bool v_in_k = false;
    int group = 0;
  };
  struct Group {
    KvCacheManager manager;
    std::vector<int> layers;  // cache layers whose K/V these pages hold
    size_t block_bytes = 0;   // one block, these layers, K and V
    std::unique_ptr<Buffer> buffer;
  };
  PagedKvCache() = default;
  // The longest prefix of `prompt` every group holds (full blocks).
  int64_t common_prefix_hit(int seq, std::span<const int32_t> prompt) const;

  std::vector<Group> groups_;  // [0]: the main group
  int64_t n_ctx_ = 0;
  DType type_ = DType::F16;
  int max_seqs_ = 0;  // live sequences at most (windowed groups; 0: unbounded)
  std::vector<Layer> layers_;
};

}  // namespace folio::cache
