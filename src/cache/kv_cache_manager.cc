#include "cache/kv_cache_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <unordered_map>

#include "core/check.h"

namespace folio::cache {
namespace {

// Positions are int32 in batches (pos, slot mapping).
constexpr int64_t kMaxSeqLen = std::numeric_limits<int32_t>::max();

}  // namespace

void CachePlan::clear() {
  epoch = 0;
  n_blocks_needed = 0;
  n_missing_blocks = 0;
  seqs.clear();
  blocks.clear();
  tokens.clear();
  slot_mapping.clear();
  copies.clear();
}

Result<KvCacheManager> KvCacheManager::create(const KvCacheManagerOptions& options) {
  if (options.window < 0) {
    return invalid_argument("kv cache manager: sliding window {} < 0", options.window);
  }
  FOLIO_ASSIGN_OR_RETURN(BlockPool pool, BlockPool::create(options.n_blocks, options.block_size));
  return KvCacheManager(std::move(pool), options);
}

KvCacheManager::KvCacheManager(BlockPool pool, const KvCacheManagerOptions& options)
    : pool_(std::move(pool)),
      hasher_(options.extra_key, options.hash_seed),
      prefix_caching_(options.enable_prefix_caching),
      window_(options.window) {}

int32_t KvCacheManager::window_start_block(int64_t len) const {
  if (window_ == 0 || len < window_) return 0;
  return static_cast<int32_t>((len - window_ + 1) / block_size());
}

void KvCacheManager::drop_out_of_window(Sequence& s) {
  const int32_t n =
      droppable(static_cast<int64_t>(s.tokens.size()) - s.n_unverified, s.table.size());
  // Oldest first: released hashed blocks join the free queue's LRU tail in
  // the order a later prefix would need them least.
  for (; s.n_dropped < n; ++s.n_dropped) {
    pool_.release(s.table[s.n_dropped]);
    s.table.set(s.n_dropped, kNullBlock);
  }
}

bool KvCacheManager::is_live(SeqId seq) const {
  return seq >= 0 && static_cast<size_t>(seq) < seqs_.size() &&
         seqs_[static_cast<size_t>(seq)].live;
}

const KvCacheManager::Sequence& KvCacheManager::live(SeqId seq) const {
  FOLIO_CHECK_MSG(is_live(seq), "sequence {} does not exist", seq);
  return seqs_[static_cast<size_t>(seq)];
}

KvCacheManager::Sequence& KvCacheManager::live(SeqId seq) {
  FOLIO_CHECK_MSG(is_live(seq), "sequence {} does not exist", seq);
  return seqs_[static_cast<size_t>(seq)];
}

Status KvCacheManager::check_live(SeqId seq, const char* what) const {
  if (!is_live(seq)) return invalid_argument("{}: sequence {} does not exist", what, seq);
  return Status();
}

SeqId KvCacheManager::create_sequence(std::string_view cache_salt) {
  SeqId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<SeqId>(seqs_.size());
    seqs_.emplace_back();
  }
  Sequence& s = seqs_[static_cast<size_t>(id)];
  s = Sequence{};
  s.live = true;
  s.root = hasher_.salted_root(cache_salt);
  ++n_live_;
  ++epoch_;
  return id;
}

Result<SeqId> KvCacheManager::fork(SeqId parent) {
  FOLIO_RETURN_IF_ERROR(check_live(parent, "fork"));
  if (seqs_[static_cast<size_t>(parent)].n_unverified > 0) {
    return invalid_argument("fork: sequence {} holds {} unverified positions (verify it first)",
                            parent, seqs_[static_cast<size_t>(parent)].n_unverified);
  }
  const SeqId child = create_sequence();
  // seqs_ may have grown: take references only now.
  const Sequence& p = seqs_[static_cast<size_t>(parent)];
  Sequence& c = seqs_[static_cast<size_t>(child)];
  c.root = p.root;
  c.table = p.table;
  c.n_dropped = p.n_dropped;
  c.tokens = p.tokens;
  c.hashes = p.hashes;
  for (const BlockId b : held(c)) pool_.touch(b);
  return child;
}

Status KvCacheManager::free_sequence(SeqId seq) {
  FOLIO_RETURN_IF_ERROR(check_live(seq, "free_sequence"));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  pool_.release_reverse(held(s));
  s = Sequence{};
  free_ids_.push_back(seq);
  --n_live_;
  ++epoch_;
  return Status();
}

Status KvCacheManager::truncate(SeqId seq, int64_t len) {
  FOLIO_RETURN_IF_ERROR(check_live(seq, "truncate"));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  const auto old_len = static_cast<int64_t>(s.tokens.size());
  if (len < 0 || len > old_len) {
    return out_of_range("truncate: length {} outside [0, {}] for sequence {}", len, old_len, seq);
  }
  if (truncation_point(seq, len) != len) {
    return invalid_argument(
        "truncate: sequence {} no longer holds the sliding window (the {} positions) before "
        "position {}",
        seq, window_, len);
  }
  const int32_t bs = block_size();
  const int32_t keep = blocks_for(len, bs);
  pool_.release_reverse(s.table.ids().subspan(static_cast<size_t>(std::max(keep, s.n_dropped))));
  s.table.resize(keep);
  // Positions at or past the verified length stay unverified.
  s.n_unverified = std::max<int64_t>(0, len - (old_len - s.n_unverified));
  s.n_dropped = std::min(s.n_dropped, droppable(len - s.n_unverified, keep));  // 0 when len == 0
  s.tokens.resize(static_cast<size_t>(len));
  if (prefix_caching_) {
    s.hashes.resize(std::min(s.hashes.size(), static_cast<size_t>((len - s.n_unverified) / bs)));
  }
  // A kept block that becomes partial will be overwritten from offset len % bs:
  // held by this sequence alone, its registration is now a lie.
  if (len % bs != 0 && pool_.ref(s.table.back()) == 1) pool_.unregister(s.table.back());
  ++epoch_;
  return Status();
}

Status KvCacheManager::verify(SeqId seq, int64_t len) {
  FOLIO_RETURN_IF_ERROR(check_live(seq, "verify"));
  {
    const Sequence& s = seqs_[static_cast<size_t>(seq)];
    const auto n = static_cast<int64_t>(s.tokens.size());
    if (len < n - s.n_unverified || len > n) {
      return out_of_range("verify: length {} outside [{}, {}] for sequence {}", len,
                          n - s.n_unverified, n, seq);
    }
  }
  FOLIO_RETURN_IF_ERROR(truncate(seq, len));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  s.n_unverified = 0;
  if (prefix_caching_) register_full_blocks(s, static_cast<size_t>(len / block_size()));
  drop_out_of_window(s);
  ++epoch_;
  return Status();
}

void KvCacheManager::register_full_blocks(Sequence& s, size_t n_full) {
  const auto bs = static_cast<size_t>(block_size());
  for (size_t b = s.hashes.size(); b < n_full; ++b) {
    const auto toks = std::span<const int32_t>(s.tokens).subspan(b * bs, bs);
    const BlockHash h = hasher_.chain(parent_of(s, b), toks);
    s.hashes.push_back(h);
    const BlockId id = s.table[static_cast<int32_t>(b)];
    if (id == kNullBlock) continue;  // a cached prefix's block before the window
    if (pool_.is_hashed(id)) {
      FOLIO_CHECK_MSG(pool_.hash(id) == h, "cached block {} holds another prefix", id);
    } else if (pool_.register_hash(id, h)) {  // false: another block holds this prefix; keep ours
      pool_.events().stored(b > 0, parent_of(s, b), h, toks);
    }
  }
}

int64_t KvCacheManager::truncation_point(SeqId seq, int64_t len) const {
  const Sequence& s = live(seq);
  FOLIO_CHECK(len >= 0 && len <= static_cast<int64_t>(s.tokens.size()));
  if (len == 0 || s.n_dropped <= droppable(len, blocks_for(len, block_size()))) return len;
  return 0;  // a shorter length needs even earlier blocks
}

PrefixHit KvCacheManager::lookup(SeqId seq, std::span<const int32_t> tokens,
                                 bool leave_last_token, int64_t max_tokens) const {
  const Sequence& s = live(seq);
  PrefixHit hit;
  if (!prefix_caching_) return hit;
  const int32_t bs = block_size();
  int64_t usable = std::min(static_cast<int64_t>(tokens.size()), std::max<int64_t>(max_tokens, 0));
  if (leave_last_token && usable == static_cast<int64_t>(tokens.size()) && usable > 0) --usable;
  const int64_t n_full = usable / bs;
  BlockHash parent = s.root;
  if (window_ == 0) {
    for (int64_t i = 0; i < n_full; ++i) {
      const BlockHash h = hasher_.chain(
          parent, tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs)));
      const BlockId b = pool_.find(h);
      if (b == kNullBlock) break;
      hit.blocks.push_back(b);
      parent = h;
    }
    hit.n_tokens = static_cast<int64_t>(hit.blocks.size()) * bs;
    return hit;
  }
  // With a window, k blocks are a hit when blocks [droppable(k * bs, k), k)
  // are all cached; `run` counts the cached blocks ending at block i.
  std::vector<BlockId> found(static_cast<size_t>(n_full), kNullBlock);
  int64_t best = 0;
  int64_t run = 0;
  for (int64_t i = 0; i < n_full; ++i) {
    const BlockHash h =
        hasher_.chain(parent, tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs)));
    found[static_cast<size_t>(i)] = pool_.find(h);
    run = found[static_cast<size_t>(i)] == kNullBlock ? 0 : run + 1;
    const int64_t k = i + 1;
    if (run >= k - droppable(k * bs, static_cast<int32_t>(k))) best = k;
    parent = h;
  }
  const int32_t skip = droppable(best * bs, static_cast<int32_t>(best));
  hit.blocks.assign(found.begin(), found.begin() + best);
  std::fill(hit.blocks.begin(), hit.blocks.begin() + skip, kNullBlock);
  hit.n_tokens = best * bs;
  return hit;
}

Status KvCacheManager::plan(std::span<const SeqAppend> batch, CachePlan& out) const {
  out.clear();
  out.epoch = epoch_;
  const int32_t bs = block_size();

  // Validate every entry before looking at the pool.
  std::vector<SeqId> ids;
  ids.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqAppend& a = batch[i];
    if (!is_live(a.seq))
      return invalid_argument("batch entry {}: sequence {} does not exist", i, a.seq);
    const Sequence& s = seqs_[static_cast<size_t>(a.seq)];
    const auto n = static_cast<int64_t>(a.tokens.size());
    if (a.n_cached < 0 || a.n_cached > n) {
      return invalid_argument("batch entry {}: n_cached {} outside [0, {}]", i, a.n_cached, n);
    }
    if (a.n_cached > 0) {
      if (!prefix_caching_) {
        return invalid_argument("batch entry {}: n_cached {} but prefix caching is off", i,
                                a.n_cached);
      }
      if (!s.tokens.empty()) {
        return invalid_argument(
            "batch entry {}: n_cached {} for sequence {} of length {} (only "
            "empty sequences take cached prefixes)",
            i, a.n_cached, a.seq, s.tokens.size());
      }
      if (a.n_cached % bs != 0) {
        return invalid_argument(
            "batch entry {}: n_cached {} is not a multiple of the block size {}", i, a.n_cached,
            bs);
      }
    }
    if (a.n_unverified < 0 || a.n_unverified > n - a.n_cached) {
      return invalid_argument("batch entry {}: n_unverified {} outside [0, {}]", i,
                              a.n_unverified, n - a.n_cached);
    }
    if (s.n_unverified > 0) {
      return invalid_argument(
          "batch entry {}: sequence {} still holds {} unverified positions (verify it first)", i,
          a.seq, s.n_unverified);
    }
    if (n > kMaxSeqLen - static_cast<int64_t>(s.tokens.size())) {
      return out_of_range("batch entry {}: sequence {} would hold {} + {} positions (max {})", i,
                          a.seq, s.tokens.size(), n, kMaxSeqLen);
    }
    ids.push_back(a.seq);
  }
  std::sort(ids.begin(), ids.end());
  if (const auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    return invalid_argument("batch holds sequence {} more than once", *dup);
  }

  // Pass 1: cached prefixes. Every reuse of a cached block is counted before
  // any copy-on-write decision: a new holder makes a block shared.
  std::unordered_map<BlockId, int32_t> touches;  // cached block -> new holders in this batch
  int32_t n_revived = 0;                         // distinct free blocks taken back
  std::vector<BlockId> cached;                   // cached blocks, entries in batch order
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqAppend& a = batch[i];
    BlockHash parent = seqs_[static_cast<size_t>(a.seq)].root;
    const auto n_cached_blocks = static_cast<int32_t>(a.n_cached / bs);
    const int32_t skip = droppable(a.n_cached, n_cached_blocks);
    for (int64_t k = 0; k < n_cached_blocks; ++k) {
      const BlockHash h = hasher_.chain(
          parent, a.tokens.subspan(static_cast<size_t>(k * bs), static_cast<size_t>(bs)));
      parent = h;
      if (k < skip) {  // before the window: taken as a dropped entry
        cached.push_back(kNullBlock);
        continue;
      }
      const BlockId b = pool_.find(h);
      if (b == kNullBlock) {
        out.clear();
        return invalid_argument(
            "batch entry {}: block {} of the {} cached tokens is not in the "
            "prefix cache",
            i, k, a.n_cached);
      }
      int32_t& d = touches[b];
      if (d == 0 && pool_.ref(b) == 0) ++n_revived;
      ++d;
      cached.push_back(b);
    }
  }

  // Pass 2: per-entry shape and block counts.
  out.seqs.resize(batch.size());
  int32_t n_pops = 0;
  int32_t tail_total = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqAppend& a = batch[i];
    const Sequence& s = seqs_[static_cast<size_t>(a.seq)];
    SeqStep& st = out.seqs[i];
    st.seq = a.seq;
    st.len_before = static_cast<int64_t>(s.tokens.size());
    st.n_cached = a.n_cached;
    st.len_after = st.len_before + static_cast<int64_t>(a.tokens.size());
    st.n_unverified = a.n_unverified;
    st.keep = s.table.size();
    st.n_cached_blocks = static_cast<int32_t>(a.n_cached / bs);
    const int64_t len0 = st.len_before + a.n_cached;  // positions held before computing
    if (st.n_computed() > 0 && len0 % bs != 0) {
      // Writing into the partial last block: a block others hold (now or
      // from this batch on) is never written; the writer gets a copy, also
      // when every holder writes in this step. Until apply() the pre-plan
      // state therefore stays valid, whatever the forward did.
      const BlockId last = s.table.back();
      const auto it = touches.find(last);
      const int32_t holders = pool_.ref(last) + (it == touches.end() ? 0 : it->second);
      if (holders > 1) {
        st.cow = true;
        --st.keep;
        ++n_pops;
      } else if (pool_.is_hashed(last)) {
        st.unregister_last = true;
      }
    }
    const int32_t n_new = blocks_for(st.len_after, bs) - blocks_for(len0, bs);
    n_pops += n_new;
    st.tail_count = (st.cow ? 1 : 0) + st.n_cached_blocks + n_new;
    tail_total += st.tail_count;
  }

  const int64_t needed = static_cast<int64_t>(n_revived) + n_pops;
  if (needed > pool_.n_free()) {
    const auto needed32 =
        static_cast<int32_t>(std::min<int64_t>(needed, std::numeric_limits<int32_t>::max()));
    out.clear();
    out.epoch = epoch_;
    out.n_blocks_needed = needed32;
    out.n_missing_blocks = static_cast<int32_t>(needed32 - pool_.n_free());
    return Status();
  }
  out.n_blocks_needed = static_cast<int32_t>(needed);

  // Pass 3: physical blocks. apply() takes the cached blocks out of the free
  // queue first, then pops from its front: the same order, simulated here.
  BlockId cursor = pool_.front();
  auto pop = [&]() {
    while (cursor != kNullBlock && touches.contains(cursor)) cursor = pool_.next(cursor);
    FOLIO_CHECK(cursor != kNullBlock);
    const BlockId b = cursor;
    cursor = pool_.next(cursor);
    return b;
  };
  out.blocks.reserve(static_cast<size_t>(tail_total));
  size_t cached_at = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqAppend& a = batch[i];
    const Sequence& s = seqs_[static_cast<size_t>(a.seq)];
    SeqStep& st = out.seqs[i];
    st.tail_begin = static_cast<int32_t>(out.blocks.size());
    if (st.cow) {
      const BlockId dst = pop();
      out.blocks.push_back(dst);
      out.copies.push_back(BlockCopy{s.table.back(), dst});
    }
    for (int32_t k = 0; k < st.n_cached_blocks; ++k) out.blocks.push_back(cached[cached_at++]);
    while (static_cast<int32_t>(out.blocks.size()) < st.tail_begin + st.tail_count) {
      out.blocks.push_back(pop());
    }
    st.token_begin = static_cast<int32_t>(out.tokens.size());
    out.tokens.insert(out.tokens.end(), a.tokens.begin(), a.tokens.end());
    st.slot_begin = static_cast<int32_t>(out.slot_mapping.size());
    for (int64_t p = st.len_before + st.n_cached; p < st.len_after; ++p) {
      const auto logical = static_cast<int32_t>(p / bs);
      const BlockId b = logical < st.keep
                            ? s.table[logical]
                            : out.blocks[static_cast<size_t>(st.tail_begin + logical - st.keep)];
      out.slot_mapping.push_back(slot_of(b, static_cast<int32_t>(p % bs), bs));
    }
  }
  return Status();
}

int32_t KvCacheManager::planned_table_size(const CachePlan& plan, size_t i) const {
  FOLIO_CHECK(plan.fits() && i < plan.seqs.size());
  return plan.seqs[i].keep + plan.seqs[i].tail_count;
}

void KvCacheManager::write_block_table_row(const CachePlan& plan, size_t i,
                                           std::span<int32_t> row) const {
  FOLIO_CHECK_MSG(plan.epoch == epoch_, "stale plan (epoch {}, manager at {})", plan.epoch, epoch_);
  const int32_t n = planned_table_size(plan, i);
  FOLIO_CHECK_MSG(row.size() >= static_cast<size_t>(n), "row of {} for a table of {}", row.size(),
                  n);
  const SeqStep& st = plan.seqs[i];
  const BlockTable& t = live(st.seq).table;
  for (int32_t k = 0; k < st.keep; ++k) row[static_cast<size_t>(k)] = t[k];
  for (int32_t k = 0; k < st.tail_count; ++k) {
    row[static_cast<size_t>(st.keep + k)] = plan.blocks[static_cast<size_t>(st.tail_begin + k)];
  }
  std::fill(row.begin() + n, row.end(), kNullBlock);
}

void KvCacheManager::apply(const CachePlan& plan) {
  FOLIO_CHECK_MSG(plan.epoch == epoch_, "stale plan (epoch {}, manager at {})", plan.epoch, epoch_);
  FOLIO_CHECK_MSG(plan.fits(), "apply of a plan missing {} blocks", plan.n_missing_blocks);
  const int32_t bs = block_size();
  auto tail = [&](const SeqStep& st, int32_t k) {
    return plan.blocks[static_cast<size_t>(st.tail_begin + k)];
  };
  // 1. Cached blocks first: they must not be popped below.
  for (const SeqStep& st : plan.seqs) {
    for (int32_t k = 0; k < st.n_cached_blocks; ++k) {
      if (tail(st, k) != kNullBlock) pool_.touch(tail(st, k));
    }
  }
  // 2. New blocks, in the order plan() simulated.
  for (const SeqStep& st : plan.seqs) {
    if (st.cow) FOLIO_CHECK(pool_.allocate() == tail(st, 0));
    for (int32_t k = (st.cow ? 1 : 0) + st.n_cached_blocks; k < st.tail_count; ++k) {
      FOLIO_CHECK(pool_.allocate() == tail(st, k));
    }
  }
  // 3. Copy-on-write sources lose one holder. When every holder copied, the
  //    source returns to the free queue intact (and stays cached if hashed).
  //    After the pops, so that they match the plan.
  for (const SeqStep& st : plan.seqs) {
    if (st.cow) pool_.release(live(st.seq).table.back());
  }
  // 4. Tables, tokens, hashes of blocks that became full.
  for (const SeqStep& st : plan.seqs) {
    Sequence& s = live(st.seq);
    if (st.unregister_last) pool_.unregister(s.table.back());
    s.table.resize(st.keep);
    for (int32_t k = 0; k < st.tail_count; ++k) s.table.push_back(tail(st, k));
    if (st.n_cached_blocks > 0) s.n_dropped = droppable(st.n_cached, st.n_cached_blocks);
    const auto tok = std::span<const int32_t>(plan.tokens)
                         .subspan(static_cast<size_t>(st.token_begin),
                                  static_cast<size_t>(st.len_after - st.len_before));
    s.tokens.insert(s.tokens.end(), tok.begin(), tok.end());
    // Blocks holding a draft token stay unhashed until verify().
    s.n_unverified = st.n_unverified;
    if (prefix_caching_) {
      register_full_blocks(s, static_cast<size_t>((st.len_after - st.n_unverified) / bs));
    }
    // After registration: a block leaving the window stays cached.
    drop_out_of_window(s);
  }
  note_usage();
  ++epoch_;
}

void KvCacheManager::discard(const CachePlan& plan) {
  FOLIO_CHECK_MSG(plan.epoch == epoch_, "stale plan (epoch {}, manager at {})", plan.epoch, epoch_);
  FOLIO_CHECK(plan.fits());
  for (const SeqStep& st : plan.seqs) {
    // The forward wrote into this registered block's tail.
    if (st.unregister_last) pool_.unregister(live(st.seq).table.back());
    for (int32_t k = 0; k < st.tail_count; ++k) {
      const bool cached = k >= (st.cow ? 1 : 0) && k < (st.cow ? 1 : 0) + st.n_cached_blocks;
      const BlockId b = plan.blocks[static_cast<size_t>(st.tail_begin + k)];
      if (!cached && b != kNullBlock && pool_.is_free(b)) pool_.unregister(b);
    }
  }
  ++epoch_;
}

bool KvCacheManager::defrag() {
  if (!pool_.defrag()) return false;
  ++epoch_;
  return true;
}

void KvCacheManager::clear_prefix_cache() {
  pool_.clear_cache();
  ++epoch_;
}

Status KvCacheManager::check_invariants() const {
  FOLIO_RETURN_IF_ERROR(pool_.check_invariants());
  const int32_t bs = block_size();
  std::vector<int32_t> refs(static_cast<size_t>(pool_.n_blocks()), 0);
  int32_t n_live = 0;
  for (size_t id = 0; id < seqs_.size(); ++id) {
    const Sequence& s = seqs_[id];
    if (!s.live) {
      if (!s.table.empty() || !s.tokens.empty())
        return internal_error("dead sequence {} holds data", id);
      continue;
    }
    ++n_live;
    const auto len = static_cast<int64_t>(s.tokens.size());
    if (s.table.size() != blocks_for(len, bs)) {
      return internal_error("sequence {}: {} positions in a table of {} blocks", id, len,
                            s.table.size());
    }
    if (s.n_unverified < 0 || s.n_unverified > len)
      return internal_error("sequence {}: {} unverified of {} positions", id, s.n_unverified, len);
    const int64_t verified = len - s.n_unverified;
    const size_t n_full = prefix_caching_ ? static_cast<size_t>(verified / bs) : 0;
    if (s.hashes.size() != n_full) {
      return internal_error("sequence {}: {} chain hashes for {} full blocks", id, s.hashes.size(),
                            n_full);
    }
    // Every block out of the window is released (memory follows the window).
    if (s.n_dropped != droppable(verified, s.table.size())) {
      return internal_error("sequence {}: {} blocks dropped of {} ({} positions, window {})", id,
                            s.n_dropped, s.table.size(), len, window_);
    }
    for (int32_t k = 0; k < s.table.size(); ++k) {
      const BlockId b = s.table[k];
      if (k < s.n_dropped) {
        if (b != kNullBlock) return internal_error("sequence {}: dropped entry {} holds {}", id, k, b);
        continue;
      }
      if (b <= kNullBlock || b >= pool_.n_blocks())
        return internal_error("sequence {}: block {}", id, b);
      ++refs[static_cast<size_t>(b)];
      if (static_cast<size_t>(k) >= n_full) continue;
      const BlockHash h = hasher_.chain(
          parent_of(s, static_cast<size_t>(k)),
          std::span<const int32_t>(s.tokens).subspan(
              static_cast<size_t>(k) * static_cast<size_t>(bs), static_cast<size_t>(bs)));
      if (!(h == s.hashes[static_cast<size_t>(k)])) {
        return internal_error("sequence {}: chain hash of block {} does not match its tokens", id,
                              k);
      }
      if (pool_.is_hashed(b) && !(pool_.hash(b) == h)) {
        return internal_error(
            "sequence {}: full block {} (physical {}) registered under another hash", id, k, b);
      }
    }
  }
  if (n_live != n_live_)
    return internal_error("{} live sequences, counter says {}", n_live, n_live_);
  for (BlockId b = 1; b < pool_.n_blocks(); ++b) {
    if (refs[static_cast<size_t>(b)] != pool_.ref(b)) {
      return internal_error("block {}: ref {} but held by {} table entries", b, pool_.ref(b),
                            refs[static_cast<size_t>(b)]);
    }
  }
  return Status();
}

std::string KvCacheManager::debug_dump() const {
  std::string out = pool_.debug_dump();
  out += fmt::format("KvCacheManager epoch={} n_live={} peak_used={} prefix_caching={}\n", epoch_,
                     n_live_, peak_used_, prefix_caching_);
  for (size_t id = 0; id < seqs_.size(); ++id) {
    const Sequence& s = seqs_[id];
    if (!s.live) continue;
    out += fmt::format("  seq {}: len={} root={}\n    table: {}\n    tokens: {}\n    hashes:", id,
                       s.tokens.size(), to_string(s.root), fmt::join(s.table.ids(), " "),
                       fmt::join(s.tokens, " "));
    for (const BlockHash& h : s.hashes)
      fmt::format_to(std::back_inserter(out), " {}", to_string(h));
    out += "\n";
  }
  out += fmt::format("  free ids: {}\n", fmt::join(free_ids_, " "));
  return out;
}

}  // namespace folio::cache
