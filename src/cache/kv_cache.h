// KV cache interface: what a forward pass and its caller need from K/V
// storage, nothing more. The model never indexes the cache itself and never
// knows which cache it has. Per batch it asks for
//   - a plan (plan()): the slot of each new K/V row (slot mapping), each
//     token's sequence in the attention op's numbering, each of those
//     sequences' K/V length after the batch and, for paged caches, their
//     block tables; checked against the cache before anything is written;
//   - prepare(plan) before the forward writes (paged: copy-on-write block
//     copies), then apply(plan) after a successful forward, or discard(plan)
//     after a failed one (plan first, apply after success);
//   - per layer, the storage as a table of rows [D * n_kv_head, n_slots]
//     (written with kSetRows through the slot mapping) and the same memory in
//     the flash-attention layout (k_view / v_view, read by kFlashAttn with
//     the plan's kv_len and block table).
//
// Sequences are named by ids (Batch::seq_idx). The caller creates and frees
// them (add_sequence, fork_sequence, remove_sequence); an engine maps its
// requests to ids. A new sequence may start from cached K/V of a prompt
// prefix (take_cached_prefix) and feed only the rest.
//
// create_kv_cache builds the cache a geometry (cache/kv_geometry.h) and the
// options call for:
//   ContiguousKvCache (cache/contiguous_kv_cache.h): n_seq fixed slots of
//     n_ctx positions each.
//   PagedKvCache (cache/paged_kv_cache.h): blocks of one pool, memory follows
//     the tokens held, prefix sharing, copy-on-write forks.
//   HybridKvCache (cache/hybrid_kv_cache.h): geometries with recurrent (gated
//     DeltaNet) layers: a paged or contiguous cache for the attention layers
//     plus per-sequence recurrent state (conv_state / ssm_state,
//     KvPlan::recurrent).
#pragma once

#include "cache/cache_memory.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/batch.h"
#include "cache/block_hash.h"
#include "cache/kv_cache_manager.h"
#include "cache/kv_events.h"
#include "cache/kv_geometry.h"
#include "core/status.h"
#include "tensor/dtype.h"
#include "tensor/tensor_view.h"

namespace folio::cache {

// V as the first dv values of each row of k (KvLayerShape::v_in_k): the
// same memory and strides as k, [dv, n_kv_head, ...], no copy. dv must be a
// multiple of k's block (a Q8_0 row's first dv / 32 blocks are V's blocks).
inline TensorView v_of_k(const TensorView& k, int64_t dv) {
  TensorView v = k;
  v.ne[0] = dv;
  return v;
}

// Hybrid caches (cache/hybrid_kv_cache.h): one sequence's share of a batch in
// the recurrent (gated DeltaNet) layers. Its tokens are rows [row_begin,
// row_begin + n_tokens) of the batch in recurrent order (RecurrentPlan::order).
struct RecurrentStep {
  int32_t seq = -1;        // cache sequence id
  int32_t slot = -1;       // its state slot in every recurrent layer's pools
  int32_t row_begin = 0;   // first of its tokens in recurrent order
  int32_t n_tokens = 0;    // tokens it feeds this batch (consecutive positions)
  int32_t ckpt_begin = 0;  // its checkpoints: RecurrentPlan::checkpoints[ckpt_begin, + n_ckpt)
  int32_t n_ckpt = 0;
};

// A prefix checkpoint the forward saves: the recurrent state of step
// `step`'s sequence after its first `after` tokens of this batch (a KV block
// boundary) is copied into state slot `slot` (every recurrent layer). The
// cache registers it under `hash` (the block-chain hash of that prefix) when
// the plan is applied.
//
// A draft snapshot (`draft`, no hash) is the same copy, made in a step that
// feeds draft tokens, after each prefix that verify() may keep: verify()
// restores the one after the last accepted token. It is never registered.
struct StateCheckpoint {
  int32_t step = 0;
  int32_t after = 0;  // 1 .. steps[step].n_tokens
  int32_t slot = -1;
  BlockHash hash;
  bool draft = false;
};

struct RecurrentPlan {
  // Sequences in order of first appearance in the batch; steps with one
  // token (decode) next to each other run as one fused op.
  std::vector<RecurrentStep> steps;
  std::vector<int32_t> slots;  // [n_steps] steps[i].slot (the fused ops' slot ids)
  // [n_tokens] batch row of recurrent row r, and its inverse; both empty when
  // every sequence's tokens are already consecutive in the batch (identity).
  std::vector<int32_t> order;
  std::vector<int32_t> inverse;
  std::vector<StateCheckpoint> checkpoints;  // by step, then `after`
  // The cache's bookkeeping: tokens in recurrent order (prefix hashing) and
  // the cache state the plan was made against.
  std::vector<int32_t> tokens;
  uint64_t epoch = 0;

  bool empty() const { return steps.empty(); }
  void clear() {
    steps.clear();
    slots.clear();
    order.clear();
    inverse.clear();
    checkpoints.clear();
    tokens.clear();
    epoch = 0;
  }
};

// The pages of one more group of layers of a paged cache (the layers of one
// sliding window: see PagedKvCache), laid out as KvPlan's own fields are for
// the main group. Their slots and block tables differ from the main group's;
// the batch's attention sequences, seq_idx and kv_len are the same.
struct KvPagePlan {
  int32_t window = 0;           // the group's sliding window (tokens)
  std::vector<int32_t> slots;   // [n_tokens] table row of each token's K/V
  std::vector<int32_t> block_table;  // [n_attn_seq][max_blocks], kNullBlock padding
  int32_t max_blocks = 0;
  CachePlan pages;
};

// What a batch does to the cache; filled by plan() (vectors are reused).
// "Attention sequences" are the sequences the attention op sees, numbered
// 0..n-1: the cache's slots (contiguous) or the batch's sequences in order of
// first appearance (paged).
struct KvPlan {
  std::vector<int32_t> slots;    // [n_tokens] table row of each token's K/V
  std::vector<int32_t> seq_idx;  // [n_tokens] attention sequence of each token
  std::vector<int32_t> kv_len;   // [n_attn_seq] valid positions after the batch
  // Paged caches: [n_attn_seq][max_blocks] row s = block table of attention
  // sequence s after the batch, padded with the null block 0 (kFlashAttn's
  // I32 [max_blocks, n_attn_seq]). Empty for contiguous caches.
  std::vector<int32_t> block_table;
  int32_t max_blocks = 0;
  // Paged caches: the block-pool bookkeeping apply() / discard() commit and
  // the block copies prepare() performs. After plan() returned
  // kResourceExhausted for lack of memory, pages.n_missing_blocks says how
  // many blocks are short (a scheduler preempts that much).
  CachePlan pages;
  // Paged caches with sliding-window layers: the pages of each further layer
  // group (KvCache::kv_group(layer) - 1 indexes it); empty otherwise.
  std::vector<KvPagePlan> windowed;
  // Hybrid caches: the recurrent layers' work (empty otherwise).
  RecurrentPlan recurrent;
};

class KvCache {
 public:
  virtual ~KvCache() = default;

  virtual int n_layer() const = 0;
  virtual int64_t n_ctx() const = 0;  // positions one sequence can hold
  virtual DType type() const = 0;
  virtual size_t bytes() const = 0;  // memory allocated (K/V, recurrent state)
  // What the cache holds, for the load log: "256 blocks of 16 tokens (12.0
  // MiB)", "2 sequences of 4096 positions (64.0 MiB)", ...
  virtual std::string summary() const = 0;

  // --- sequences -------------------------------------------------------------
  virtual bool has_sequence(int seq) const = 0;
  // Positions held by an existing sequence (CHECKed).
  virtual int64_t seq_len(int seq) const = 0;
  // A new empty sequence; kResourceExhausted when the cache has no room for
  // another one.
  virtual Result<int> add_sequence() = 0;
  // A new sequence holding the same positions as `parent` (K/V shared or
  // copied); both continue independently.
  virtual Result<int> fork_sequence(int parent) = 0;
  // Frees the sequence and its memory; its id may be handed out again.
  virtual Status remove_sequence(int seq) = 0;
  // For an empty sequence about to be fed `prompt`: takes the K/V of the
  // longest prompt prefix the cache already holds (never the position of the
  // last prompt token, whose logits must be computed) and returns the
  // positions the sequence now holds; the caller feeds prompt[n:] from
  // position n. Caches without a prefix cache return 0.
  virtual Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> prompt) = 0;
  // Drops positions >= len of one sequence (len <= seq_len).
  virtual Status truncate(int seq, int64_t len) = 0;
  // Ends a speculation step: a sequence whose last applied batch ended in
  // draft tokens (Batch::unverified) keeps positions [0, len), len between
  // its length before the drafts and seq_len; the rejected positions leave
  // the cache, and only now do the accepted ones' full blocks enter the
  // prefix cache (hash and KV event). Caches that publish nothing truncate.
  virtual Status verify(int seq, int64_t len) { return truncate(seq, len); }
  // The largest length <= len (len <= seq_len) that truncate(seq, ·)
  // accepts: len itself for caches that truncate anywhere; hybrid caches
  // (recurrent state) only 0, the sequence's length or a checkpointed block
  // boundary.
  virtual int64_t truncation_point(int seq, int64_t len) const {
    (void)seq;
    return len;
  }
  // Empties every sequence (ids stay valid).
  virtual void clear() = 0;

  // --- one forward -----------------------------------------------------------
  // Checks `batch` against the cache and fills `plan`; mutates nothing.
  // Every token's sequence must exist and, per sequence, the batch's
  // positions must continue it (seq_len, seq_len + 1, ... in batch order).
  // kResourceExhausted: not enough memory (plan.pages.n_missing_blocks says
  // how much for paged caches; the contiguous cache: a sequence would outgrow
  // n_ctx).
  virtual Status plan(const Batch& batch, KvPlan& plan) const = 0;
  // Data movement the plan needs before the forward writes K/V (copies of
  // shared blocks); no bookkeeping changes.
  virtual void prepare(const KvPlan& plan) { (void)plan; }
  // Commits a plan whose forward pass succeeded (sequences grow).
  virtual void apply(const KvPlan& plan) = 0;
  // Forgets a prepared plan whose forward failed: sequences are unchanged,
  // and nothing the forward may have overwritten is reused as cached data.
  virtual void discard(const KvPlan& plan) { (void)plan; }

  // --- storage ---------------------------------------------------------------
  // Layer storage as rows: [D * n_kv_head, n_slots] (kSetRows destination).
  // A layer whose V lives in its K rows (KvLayerShape::v_in_k) has no V
  // table (empty): writing its K rows writes V.
  virtual TensorView k_table(int layer) const = 0;
  virtual TensorView v_table(int layer) const = 0;
  // The same memory in the flash-attention layout: paged() true: blocks
  // [D, n_kv_head, block_size, n_blocks] read through the plan's block
  // tables (KvLayout::kPaged of backend/op.h); false: [D, n_kv_head, n_ctx,
  // n_seq], one sequence per slot (KvLayout::kContiguous).
  virtual TensorView k_view(int layer) const = 0;
  virtual TensorView v_view(int layer) const = 0;
  virtual bool paged() const = 0;
  virtual int block_size() const { return 16; }  // paged layouts: positions per block
  // Which pages hold layer `layer`: 0, the plan's own slots and block table;
  // g > 0, KvPlan::windowed[g - 1] (sliding-window layers of a paged cache).
  virtual int kv_group(int layer) const {
    (void)layer;
    return 0;
  }
  // Block bookkeeping of a paged cache (free / used / cached blocks, lookup
  // of a prompt's cached prefix) for schedulers and metrics; nullptr when
  // the cache has no block pool. With sliding-window layers in pages of
  // their own, the main group's (the full-attention layers'): the windowed
  // pages are sized never to be the tighter limit (PagedKvCache).
  // windowed_manager() gives the others, for gauges.
  virtual const KvCacheManager* block_manager() const { return nullptr; }
  // block_manager()'s record of the prefix cache's changes (KV events for
  // routers, cache/kv_events.h); nullptr without a block pool.
  virtual KvEventLog* kv_events() { return nullptr; }
  // Bytes of one block of block_manager()'s pool (its layers, K and V), and
  // of the windowed groups' pages together; 0 without them.
  virtual size_t pool_block_bytes() const { return 0; }
  virtual size_t windowed_bytes() const { return 0; }
  // Group g's bookkeeping (1 <= g, see kv_group); nullptr past the last.
  virtual const KvCacheManager* windowed_manager(int g) const {
    (void)g;
    return nullptr;
  }
  // Positions the cache's memory can hold for one sequence while it holds
  // nothing else: with a block pool, its usable blocks x block_size (the
  // null block excluded); otherwise n_ctx (one fixed slot per sequence); 0
  // when no sequence fits at all (a hybrid cache without a recurrent-state
  // slot). A sequence is also limited to n_ctx() positions. The scheduler
  // refuses requests that could never fit (Scheduler::submit); the commands
  // refuse a pool smaller than one full context. Fixed once the cache is
  // built.
  virtual int64_t token_capacity() const {
    const KvCacheManager* m = block_manager();
    return m != nullptr ? int64_t{m->pool().n_usable()} * m->block_size() : n_ctx();
  }

  // --- recurrent state (hybrid caches, cache/hybrid_kv_cache.h) -------------
  // Recurrent layer `layer`'s state pools, indexed by the slots of
  // KvPlan::recurrent (empty views for caches and layers without them):
  // conv taps F32 [K - 1, channels, n_slots] (per channel the K - 1 most
  // recent inputs, oldest first) and the DeltaNet state F32 [S_k, S_v, H_v,
  // n_slots] (row v of head h holds S[v, :]; Mamba-2: [d_state, head dim,
  // heads, n_slots]; LFM2's short-conv layers: none, an empty view), as the
  // ops read them (backend/op.h, kSsmConvUpdate / kGatedDeltaNetUpdate /
  // kSsmScan / kSsmScanUpdate).
  virtual TensorView conv_state(int layer) const {
    (void)layer;
    return {};
  }
  virtual TensorView ssm_state(int layer) const {
    (void)layer;
    return {};
  }
};

enum class KvStorage : int { kContiguous, kPaged };

// How to build a cache; create_kv_cache reads the fields its choice needs.
struct KvCacheOptions {
  int64_t n_ctx = 4096;  // positions one sequence may hold (paged: a limit, not a reservation)
  // Sequences created up front, ids 0..n_seq-1. Contiguous: its fixed slots
  // (>= 1), all usable by index.
  int n_seq = 1;
  DType type = DType::F32;  // F32, F16, BF16 or Q8_0 (head dims multiples of 32)
  KvStorage storage = KvStorage::kContiguous;

  // Paged storage.
  int32_t block_size = kDefaultBlockSize;  // power of two in [8, 128]
  // Most tokens one forward adds, all sequences together (a scheduler's step
  // budget); 0: n_ctx. With max_seqs it sizes the pages of sliding-window
  // layers (PagedKvCache).
  int64_t max_step_tokens = 0;
  // Pool size, at most one of the two (--kv-blocks / --kv-memory):
  int32_t n_blocks = 0;    // physical blocks, the null block included
  int64_t memory_mib = 0;  // as many blocks as fit this many MiB (kv_blocks_for_budget)
  // Neither: n_seq * ceil(n_ctx / block_size) + 1 blocks (n_seq must be > 0).
  bool prefix_caching = true;
  uint64_t hash_seed = 0;  // 0: reproducible prefix hashes

  // Live sequences at most, for recurrent state slots and the pages of
  // sliding-window layers: at least n_seq (0: n_seq, at least 1). A paged
  // cache with either refuses a new sequence (kResourceExhausted) when
  // max_seqs are live; a contiguous one has exactly n_seq.
  // Recurrent state (geometries with recurrent layers).
  int max_seqs = 0;
  // Extra state slots for prefix checkpoints (paged storage with prefix
  // caching only; 0: hybrid prefix caching off); -1: 2 * max_seqs + 2, at
  // most 4096.
  int max_checkpoints = -1;
  // Also checkpoint every this many blocks (0: off).
  int checkpoint_interval = 32;
  // Extra state slots for speculative decoding on hybrid caches (either
  // storage): a step feeding a sequence k draft tokens holds k free slots
  // (the state after each verified-so-far prefix) until verify(). Slots of
  // prefix checkpoints are used too; a step that finds fewer free slots is
  // refused (kResourceExhausted) and the engines run it without drafts.
  int draft_slots = 0;

  // Where the storage lives (a device's memory); empty: host memory.
  CacheAllocator alloc;
};

// The cache `geometry` needs: hybrid (recurrent state beside a paged or
// contiguous attention part) when it has recurrent layers, else paged or
// contiguous as options.storage says. Host memory, zeroed.
Result<std::unique_ptr<KvCache>> create_kv_cache(const KvGeometry& geometry,
                                                 const KvCacheOptions& options);

// A --kv-type value: f32, f16, bf16 or q8_0.
Result<DType> parse_kv_type(std::string_view name);

}  // namespace folio::cache
