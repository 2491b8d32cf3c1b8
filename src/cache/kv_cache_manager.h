// KvCacheManager: sequences, their block tables and the prefix cache over one
// BlockPool. Bookkeeping only: the K/V memory is owned elsewhere (paged KV
// storage, indexed by slot = block_id * block_size + offset), so every K/V
// data movement the manager decides (slot mapping, copy-on-write) is handed
// to the caller to perform.
//
// One step of the engine:
//   1. lookup(seq, prompt) tells the scheduler how many prompt tokens of a new
//      sequence are already cached (full blocks only; by default never the
//      block holding the last prompt token, whose logits must be computed).
//   2. plan(batch, plan) reserves blocks for every sequence of the batch. It
//      mutates nothing. Either the whole batch fits, and the plan holds the
//      exact physical blocks, the slot of every new token, each sequence's
//      block table after the step and the block copies to perform, or it
//      does not fit: plan.n_missing_blocks says how many blocks are short
//      (the scheduler then preempts and plans again).
//   3. The caller copies blocks (plan.copies, src -> dst, before anything is
//      written), builds block-table rows (write_block_table_row) and runs the
//      forward pass, writing new K/V rows through plan.slot_mapping.
//   4. apply(plan) commits: cached blocks are taken, new blocks popped from the
//      free queue (evicting their old hashes), tables and lengths grow, and
//      every block that became full gets its chain hash registered. If the
//      forward failed, discard(plan) instead drops the hashes of the blocks
//      the forward may have overwritten; nothing else changes.
//   Any other mutation between plan and apply invalidates the plan (checked).
//   Apply comes after the forward (as in cache/kv_cache.h) so that a block is
//   registered only once its K/V is written.
// When every sequence has ended, the pool is pristine: every block free with
// ref 0 (cached ones still hashed, warm for later prefixes).
//
// Decisions:
//   - A block that becomes full under a hash another block already holds
//     (two sequences computed the same prefix in the same step) stays with its
//     sequence, unregistered; the map keeps the first block. Swapping to the
//     cached block would save a block but replace K/V the sequence computed
//     itself with K/V from another batch.
//   - Copy-on-write is lazy: a sequence that writes into a partially filled
//     block it shares with others (after fork, or after truncating into a
//     shared full block) gets a fresh copy in the plan of that write. A shared
//     block that is read only is never copied. A block with other holders is
//     never written in place, even when all its holders write in the same
//     step (each gets a copy; the original returns to the free queue intact):
//     this costs one block in that rare step but keeps the state before
//     apply() valid whatever the forward wrote, which discard() relies on.
//   - A registered block that becomes partial (truncate) and is held by its
//     sequence alone loses its registration, since its tail is overwritten
//     next. Held by others as well, it stays registered (their copy is still
//     full) and the truncated sequence copies it on its next write.
//   - Sequences are freed tail block first (reverse order), so their least
//     shareable blocks are evicted first.
//   - Token ids of every sequence are kept (4 bytes a position) to hash blocks
//     as they fill and after truncation.
//
// Sliding window (options.window = W > 0, the pages of sliding-window layers):
// a token at position p attends to positions (p - W, p], so once a sequence
// holds len positions no later token reads a block that ends at or before
// position len - W. apply() releases those blocks (never the last one) and
// leaves kNullBlock in their table entries ("dropped"; the attention kernels
// never read a position outside the window, so they never read these
// entries). A released block keeps its hash: it is still the K/V of its
// prefix and serves later lookups until the free queue evicts it. Hence:
//   - lookup() needs only the blocks a continuation reads: a hit of n tokens
//     needs every block from window_start_block(n) up to n present, not the
//     blocks before it (which the taking sequence gets as dropped entries).
//     The valid hit lengths are not downward closed, so lookup() scans them
//     all and returns the longest.
//   - truncate(len) needs the window before len: len == 0 or no dropped
//     block at or after window_start_block(len) (truncation_point()).
// Memory per sequence is bounded by the window plus the tokens of one step.
//
// Costs: plan/apply O(tokens + blocks of the batch), lookup O(prefix blocks),
// truncate/free O(blocks released), fork O(length of the parent).
//
// Thread safety: none. The manager is owned by the scheduler thread; the
// forward pass only reads the plan and the tables it was given.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/block_hash.h"
#include "cache/block_pool.h"
#include "cache/block_table.h"
#include "core/status.h"

namespace folio::cache {

using SeqId = int32_t;

struct KvCacheManagerOptions {
  int32_t n_blocks = 0;  // physical blocks, the null block included
  int32_t block_size = kDefaultBlockSize;
  bool enable_prefix_caching = true;
  // Everything besides token ids that changes K/V contents: model identity
  // (file hash or name + size), KV dtype, rope/context settings, ... Blocks
  // are shared only between sequences whose extra key and salt match.
  std::string extra_key;
  uint64_t hash_seed = 0;  // 0: reproducible hashes; a server may pass a random value
  // Sliding window in tokens (see above); 0: full attention, nothing dropped.
  int32_t window = 0;
};

// One sequence's share of a batch.
struct SeqAppend {
  SeqId seq = -1;
  // Token ids appended to the sequence this step, the cached prefix included.
  std::span<const int32_t> tokens;
  // Empty sequences only: the first n_cached tokens (a multiple of the block
  // size, all found by lookup) are taken from the prefix cache; their K/V is
  // not computed. The remaining tokens are computed by the forward.
  int64_t n_cached = 0;
  // The last n_unverified tokens are speculative drafts: their K/V is
  // written, but no block holding one is hashed (nor published as a KV
  // event) until verify() keeps the accepted ones.
  int64_t n_unverified = 0;
};

// K/V of physical block src must be copied into block dst (every layer).
struct BlockCopy {
  BlockId src = kNullBlock;
  BlockId dst = kNullBlock;
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

struct PrefixHit {
  int64_t n_tokens = 0;         // cached tokens from position 0 (a multiple of block_size)
  std::vector<BlockId> blocks;  // [n_tokens / block_size] cached physical blocks
};

// What a plan does to one sequence (same order as the batch).
struct SeqStep {
  SeqId seq = -1;
  int64_t len_before = 0;  // positions held before the step
  int64_t n_cached = 0;    // prefix tokens taken from the cache
  int64_t len_after = 0;   // len_before + all tokens of the entry
  int64_t n_unverified = 0;  // trailing draft tokens (SeqAppend::n_unverified)
  // Block table after the step: the first `keep` entries of the current table,
  // then blocks[tail_begin, tail_begin + tail_count) of the plan: the
  // copy-on-write destination (if cow), the cached blocks, the new blocks.
  int32_t keep = 0;
  int32_t tail_begin = 0;
  int32_t tail_count = 0;
  int32_t n_cached_blocks = 0;
  int32_t token_begin = 0;       // first of this entry's tokens in CachePlan::tokens
  int32_t slot_begin = 0;        // first of this entry's slots in CachePlan::slot_mapping
  bool cow = false;              // the current last block is copied into blocks[tail_begin]
  bool unregister_last = false;  // the current last block is written while registered
  // Tokens whose K/V the forward computes (positions len_before + n_cached ...).
  int64_t n_computed() const { return len_after - len_before - n_cached; }
};

struct CachePlan {
  uint64_t epoch = 0;
  int32_t n_blocks_needed = 0;   // free-queue blocks the batch takes (new + revived cached)
  int32_t n_missing_blocks = 0;  // > 0: the batch does not fit; nothing below is filled
  std::vector<SeqStep> seqs;     // [n_entries]
  std::vector<BlockId> blocks;   // table tails, see SeqStep
  std::vector<int32_t> tokens;   // every entry's tokens, in batch order
  // [n computed tokens] slot of each computed token, entries in batch order,
  // positions ascending within an entry.
  std::vector<int32_t> slot_mapping;
  std::vector<BlockCopy> copies;  // to perform before the forward writes

  bool fits() const { return n_missing_blocks == 0; }
  void clear();
};

class KvCacheManager {
 public:
  static Result<KvCacheManager> create(const KvCacheManagerOptions& options);

  const BlockPool& pool() const { return pool_; }
  // The prefix cache's changes (see cache/kv_events.h); off until enabled.
  KvEventLog& events() { return pool_.events(); }
  int32_t block_size() const { return pool_.block_size(); }
  bool prefix_caching() const { return prefix_caching_; }
  int32_t window() const { return window_; }
  // The first logical block a token at position >= len may read: 0 without
  // a window, else block (len - W + 1) / block_size.
  int32_t window_start_block(int64_t len) const;
  // Most blocks in use at once since creation.
  int32_t peak_used() const { return peak_used_; }

  // A new empty sequence (no blocks). `cache_salt` isolates its cache entries
  // from sequences with another salt (LoRA adapter, tenant).
  SeqId create_sequence(std::string_view cache_salt = {});
  // A new sequence sharing every block of `parent` (ref counts); the first
  // write into a shared partial block copies it (see SeqStep::cow).
  Result<SeqId> fork(SeqId parent);
  // Releases the sequence's blocks, tail first.
  Status free_sequence(SeqId seq);
  // Keeps positions [0, len): releases exactly the blocks no longer needed.
  Status truncate(SeqId seq, int64_t len);
  // Ends the speculation of a sequence whose last step appended unverified
  // drafts: keeps positions [0, len) (len at least its verified length, at
  // most seq_len), releases the rejected positions' blocks, and registers
  // (and publishes) the hashes of the full blocks below len, which are now
  // verified. A sequence without unverified positions: truncate(seq, len).
  Status verify(SeqId seq, int64_t len);
  // Trailing positions of a live sequence appended unverified (CHECKed).
  int64_t n_unverified(SeqId seq) const { return live(seq).n_unverified; }

  bool is_live(SeqId seq) const;
  int32_t n_sequences() const { return n_live_; }
  // For live sequences only (CHECKed).
  int64_t seq_len(SeqId seq) const { return static_cast<int64_t>(live(seq).tokens.size()); }
  const BlockTable& block_table(SeqId seq) const { return live(seq).table; }
  std::span<const int32_t> tokens(SeqId seq) const { return live(seq).tokens; }

  // Largest length <= len (len <= seq_len) that truncate() accepts: len,
  // or 0 when a window before len was dropped.
  int64_t truncation_point(SeqId seq, int64_t len) const;

  // Cached full blocks for `tokens` read from position 0 with `seq`'s salt,
  // at most max_tokens of them; without a window it stops at the first miss
  // (with one, see above; hit.blocks holds kNullBlock for the blocks before
  // the window). leave_last_token: never count the block holding the last
  // token (at least one token must be computed to get logits).
  PrefixHit lookup(SeqId seq, std::span<const int32_t> tokens, bool leave_last_token = true,
                   int64_t max_tokens = std::numeric_limits<int64_t>::max()) const;

  // Plans `batch` (one entry per sequence at most). Invalid input is an error
  // and fills nothing; a batch that does not fit is OK with
  // plan.n_missing_blocks > 0. Mutates nothing.
  Status plan(std::span<const SeqAppend> batch, CachePlan& plan) const;
  // Writes entry i's block table after the step into `row`, padded with
  // kNullBlock; row.size() must be at least its length.
  void write_block_table_row(const CachePlan& plan, size_t i, std::span<int32_t> row) const;
  // Block-table length of entry i after the step.
  int32_t planned_table_size(const CachePlan& plan, size_t i) const;
  // Commits a fitting plan made against the current state (CHECKed).
  void apply(const CachePlan& plan);
  // Forgets a fitting plan whose forward failed: registered blocks the
  // forward may have written (free blocks it would have popped, a registered
  // last block it appended to) lose their hashes. Nothing else changes.
  void discard(const CachePlan& plan);

  // When no block is in use: free queue back to ascending ids (cached hashes
  // survive, see BlockPool::defrag). False when blocks are in use.
  [[nodiscard]] bool defrag();
  // Drops every cached hash (blocks in use stay in use).
  void clear_prefix_cache();

  // Pool invariants plus: every block's ref equals the number of table
  // entries holding it, tables and hash chains match the sequence lengths
  // and tokens, and every hashed full block carries its sequence's hash.
  Status check_invariants() const;
  // Pool dump plus every live sequence (tables, tokens, hashes).
  std::string debug_dump() const;

 private:
  struct Sequence {
    bool live = false;
    BlockHash root;  // parent hash of block 0 (extra key + salt)
    BlockTable table;               // entries [0, n_dropped) are kNullBlock
    int32_t n_dropped = 0;          // leading blocks released out of the window
    std::vector<int32_t> tokens;    // [len] token id of each position held
    // [(len - n_unverified) / block_size] chain hash of each full verified block
    std::vector<BlockHash> hashes;
    int64_t n_unverified = 0;  // trailing positions appended as drafts, not yet verified
  };

  KvCacheManager(BlockPool pool, const KvCacheManagerOptions& options);
  const Sequence& live(SeqId seq) const;
  Sequence& live(SeqId seq);
  Status check_live(SeqId seq, const char* what) const;
  BlockHash parent_of(const Sequence& s, size_t block) const {
    return block == 0 ? s.root : s.hashes[block - 1];
  }
  void note_usage() { peak_used_ = std::max(peak_used_, pool_.n_used()); }
  // Blocks the sequence holds (its table without the dropped entries).
  static std::span<const BlockId> held(const Sequence& s) {
    return s.table.ids().subspan(static_cast<size_t>(s.n_dropped));
  }
  // Leading blocks a sequence of len positions in `n_table` blocks may drop.
  int32_t droppable(int64_t len, int32_t n_table) const {
    return n_table == 0 ? 0 : std::min(window_start_block(len), n_table - 1);
  }
  // Releases the blocks of `s` that fell out of the window (of its verified
  // length: rejected drafts never move the window).
  void drop_out_of_window(Sequence& s);
  // Hashes the full blocks of `s` below n_full that have no hash yet and
  // registers (publishes) them.
  void register_full_blocks(Sequence& s, size_t n_full);

  BlockPool pool_;
  BlockHasher hasher_;
  bool prefix_caching_ = true;
  int32_t window_ = 0;
  std::vector<Sequence> seqs_;   // indexed by SeqId
  std::vector<SeqId> free_ids_;  // dead ids, reused last-freed first
  int32_t n_live_ = 0;
  int32_t peak_used_ = 0;
  uint64_t epoch_ = 0;  // bumped by every mutation; plans carry the value they saw
};

}  // namespace folio::cache
