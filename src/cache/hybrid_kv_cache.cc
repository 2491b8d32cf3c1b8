#include "cache/hybrid_kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "cache/contiguous_kv_cache.h"
#include "cache/paged_kv_cache.h"
#include "core/aligned.h"

namespace folio::cache {

namespace {

// A checkpoint candidate of plan(): lower `rank` is kept first when free
// slots are short.
struct Candidate {
  int rank = 0;
  int32_t step = 0;
  int32_t after = 0;
  BlockHash hash;
};

}  // namespace

Result<std::unique_ptr<HybridKvCache>> HybridKvCache::create(const KvGeometry& geometry,
                                                             const KvCacheOptions& o) {
  if (std::none_of(geometry.layers.begin(), geometry.layers.end(),
                   [](const LayerGeometry& l) { return l.recurrent; })) {
    return invalid_argument("hybrid kv cache: {} has no recurrent layers", geometry.name);
  }
  if (o.max_seqs < 0 || o.max_seqs > (1 << 16) || o.max_checkpoints < -1 ||
      o.max_checkpoints > (1 << 16) || o.checkpoint_interval < 0 || o.draft_slots < 0 ||
      o.draft_slots > (1 << 16)) {
    return invalid_argument(
        "hybrid kv cache: max_seqs {}, max_checkpoints {}, checkpoint_interval {}, draft_slots {} "
        "out of range",
        o.max_seqs, o.max_checkpoints, o.checkpoint_interval, o.draft_slots);
  }
  KvGeometry attn_geometry;  // the attention layers alone, what the attention part holds
  attn_geometry.name = geometry.name;
  std::vector<RecurrentShape> rec_shapes;
  std::vector<int> attn_index(static_cast<size_t>(geometry.n_layer()), -1);
  std::vector<int> rec_index(static_cast<size_t>(geometry.n_layer()), -1);
  for (size_t l = 0; l < geometry.layers.size(); ++l) {
    const LayerGeometry& g = geometry.layers[l];
    if (g.recurrent) {
      const RecurrentShape& r = g.state;
      // No state at all (head_dim and n_heads 0) is a conv-only layer.
      const bool no_state = r.head_dim == 0 && r.n_heads == 0 && r.value_dim == 0;
      if (r.conv_taps < 1 || r.conv_channels < 1 || r.value_dim < 0 ||
          (!no_state && (r.head_dim < 1 || r.n_heads < 1))) {
        return invalid_argument(
            "hybrid kv cache: layer {} has recurrent state [{}, {}] / [{}, {}, {}]", l, r.conv_taps,
            r.conv_channels, r.head_dim, r.state_rows(), r.n_heads);
      }
      rec_index[l] = static_cast<int>(rec_shapes.size());
      rec_shapes.push_back(r);
      if (g.with_kv) {  // its attention's K/V too (parallel mixers)
        LayerGeometry kv;
        kv.kv = g.kv;
        attn_index[l] = attn_geometry.n_layer();
        attn_geometry.layers.push_back(kv);
      }
    } else if (g.stateless) {
      continue;  // an FFN-only layer: nothing to hold
    } else {
      attn_index[l] = attn_geometry.n_layer();
      attn_geometry.layers.push_back(g);
    }
  }
  if (attn_geometry.layers.empty()) {
    return unsupported("hybrid kv cache: {} has no attention layer", geometry.name);
  }
  const bool paged = o.storage == KvStorage::kPaged;
  std::unique_ptr<KvCache> attn;
  if (paged) {
    FOLIO_ASSIGN_OR_RETURN(attn, PagedKvCache::create(attn_geometry, o));
  } else {
    FOLIO_ASSIGN_OR_RETURN(attn, ContiguousKvCache::create(attn_geometry, o));
  }
  const int n_initial = o.n_seq;
  // A contiguous part's ids all exist from the start: one slot each, for good.
  const int max_seqs = paged ? std::max({o.max_seqs, n_initial, 1}) : n_initial;
  int max_ckpt = 0;
  if (paged && o.prefix_caching) {
    max_ckpt = o.max_checkpoints >= 0 ? o.max_checkpoints : std::min(2 * max_seqs + 2, 1 << 12);
  }
  FOLIO_ASSIGN_OR_RETURN(StatePool pool,
                         StatePool::create(max_seqs + max_ckpt + o.draft_slots));
  const uint64_t seed = paged ? o.hash_seed : 0;
  auto c = std::unique_ptr<HybridKvCache>(new HybridKvCache(
      std::move(pool), BlockHasher(fmt::format("{}/recurrent-state", geometry.name), seed)));
  c->attn_ = std::move(attn);
  c->paged_ = paged;
  c->attn_index_ = std::move(attn_index);
  c->rec_index_ = std::move(rec_index);
  c->max_checkpoints_ = max_ckpt;
  c->checkpoint_interval_ = o.checkpoint_interval;
  c->draft_slots_ = o.draft_slots;

  // One buffer: each recurrent layer's conv taps, then its state, 64-byte aligned.
  const auto n_slots = static_cast<size_t>(c->pool_.n_slots());
  std::vector<size_t> conv_off, ssm_off;
  size_t total = 0;
  for (const RecurrentShape& r : rec_shapes) {
    c->slot_bytes_ += r.conv_bytes() + r.state_bytes();
    conv_off.push_back(total);
    total += align_up(r.conv_bytes() * n_slots, 64);
    ssm_off.push_back(total);
    total += align_up(r.state_bytes() * n_slots, 64);
  }
  FOLIO_ASSIGN_OR_RETURN(c->buffer_,
                         alloc_cache_buffer(o.alloc, total, "hybrid kv cache: recurrent state"));
  char* base = static_cast<char*>(c->buffer_->data());
  const auto slots = static_cast<int64_t>(n_slots);
  for (size_t i = 0; i < rec_shapes.size(); ++i) {
    const RecurrentShape& r = rec_shapes[i];
    Layer layer;
    layer.conv = TensorView::contiguous(base + conv_off[i], DType::F32,
                                        {r.conv_taps, r.conv_channels, slots, 1});
    if (r.has_state()) {  // conv-only layers keep an empty state view
      layer.ssm = TensorView::contiguous(base + ssm_off[i], DType::F32,
                                         {r.head_dim, r.state_rows(), r.n_heads, slots});
    }
    c->layers_.push_back(layer);
  }
  for (int seq = 0; seq < n_initial; ++seq) FOLIO_RETURN_IF_ERROR(c->claim(seq));
  return c;
}

size_t HybridKvCache::bytes() const {
  return attn_->bytes() + (buffer_ == nullptr ? 0 : buffer_->size());
}

int HybridKvCache::attn_layer(int layer) const {
  FOLIO_CHECK_MSG(layer >= 0 && layer < n_layer() && attn_index_[static_cast<size_t>(layer)] >= 0,
                  "hybrid kv cache: layer {} is not an attention layer", layer);
  return attn_index_[static_cast<size_t>(layer)];
}

TensorView HybridKvCache::conv_state(int layer) const {
  if (layer < 0 || layer >= n_layer() || rec_index_[static_cast<size_t>(layer)] < 0) return {};
  return layers_[static_cast<size_t>(rec_index_[static_cast<size_t>(layer)])].conv;
}

TensorView HybridKvCache::ssm_state(int layer) const {
  if (layer < 0 || layer >= n_layer() || rec_index_[static_cast<size_t>(layer)] < 0) return {};
  return layers_[static_cast<size_t>(rec_index_[static_cast<size_t>(layer)])].ssm;
}

HybridKvCache::Seq& HybridKvCache::seq_state(int seq) {
  FOLIO_CHECK_MSG(seq >= 0 && static_cast<size_t>(seq) < seqs_.size() &&
                      seqs_[static_cast<size_t>(seq)].slot >= 0,
                  "hybrid kv cache: sequence {} has no state slot", seq);
  return seqs_[static_cast<size_t>(seq)];
}

const HybridKvCache::Seq& HybridKvCache::seq_state(int seq) const {
  return const_cast<HybridKvCache*>(this)->seq_state(seq);
}

int32_t HybridKvCache::slot_of(int seq) const {
  return seq_state(seq).slot;
}

bool HybridKvCache::state_lost(int seq) const {
  return seq_state(seq).lost;
}

Status HybridKvCache::claim(int seq) {
  if (static_cast<size_t>(seq) >= seqs_.size()) seqs_.resize(static_cast<size_t>(seq) + 1);
  Seq& s = seqs_[static_cast<size_t>(seq)];
  if (s.slot < 0) {
    FOLIO_ASSIGN_OR_RETURN(s.slot, pool_.acquire());
  }
  reset(s);
  return Status();
}

bool HybridKvCache::slot_for_sequence() const {
  return pool_.n_held() - n_snapshots_ < pool_.n_slots() - draft_slots_;
}

void HybridKvCache::release_snapshots(Seq& s) {
  for (const int32_t slot : s.snapshots) pool_.release(slot);
  n_snapshots_ -= static_cast<int32_t>(s.snapshots.size());
  s.snapshots.clear();
  s.drafts.clear();
}

void HybridKvCache::reset(Seq& s) {
  release_snapshots(s);
  s.zero = true;
  s.lost = false;
  s.branch = 0;
  s.hashes.clear();
  s.tail.clear();
}

void HybridKvCache::copy_slot(int32_t src, int32_t dst) {
  if (src == dst) return;
  for (const Layer& l : layers_) {
    copy_in_buffer(*buffer_, l.conv.row(0, dst), l.conv.row(0, src), l.conv.nb[2]);
    if (!l.ssm.empty()) {
      copy_in_buffer(*buffer_, l.ssm.row(0, 0, dst), l.ssm.row(0, 0, src), l.ssm.nb[3]);
    }
  }
}

void HybridKvCache::zero_slot(int32_t slot) {
  for (const Layer& l : layers_) {
    zero_in_buffer(*buffer_, l.conv.row(0, slot), l.conv.nb[2]);
    if (!l.ssm.empty()) zero_in_buffer(*buffer_, l.ssm.row(0, 0, slot), l.ssm.nb[3]);
  }
}

void HybridKvCache::prefix_hashes(std::span<const int32_t> tokens,
                                  std::vector<BlockHash>& out) const {
  out.clear();
  const auto bs = static_cast<size_t>(block_size());
  BlockHash parent = hasher_.root();
  for (size_t b = 0; b + bs <= tokens.size(); b += bs) {
    parent = hasher_.chain(parent, tokens.subspan(b, bs));
    out.push_back(parent);
  }
}

void HybridKvCache::extend_hashes(Seq& s, std::span<const int32_t> tokens) const {
  const auto bs = static_cast<size_t>(block_size());
  for (int32_t t : tokens) {
    s.tail.push_back(t);
    if (s.tail.size() == bs) {
      s.hashes.push_back(
          hasher_.chain(s.hashes.empty() ? hasher_.root() : s.hashes.back(), s.tail));
      s.tail.clear();
    }
  }
}

Result<int> HybridKvCache::add_sequence() {
  if (paged_ && !slot_for_sequence()) {
    return resource_exhausted(
        "hybrid kv cache: all {} recurrent-state slots for sequences are held ({} more are kept for "
        "draft snapshots)",
        pool_.n_slots() - draft_slots_, draft_slots_);
  }
  FOLIO_ASSIGN_OR_RETURN(const int seq, attn_->add_sequence());
  Status st = claim(seq);
  if (!st.ok()) {
    (void)attn_->remove_sequence(seq);
    return st;
  }
  ++epoch_;
  return seq;
}

Result<int> HybridKvCache::fork_sequence(int parent) {
  if (!has_sequence(parent)) {
    return invalid_argument("kv cache: no sequence {} to fork", parent);
  }
  const Seq p = seq_state(parent);  // a copy: claim() may grow seqs_
  if (p.lost) {
    return data_loss("kv cache: sequence {} lost its recurrent state in a failed forward", parent);
  }
  if (paged_ && !slot_for_sequence()) {
    return resource_exhausted(
        "hybrid kv cache: all {} recurrent-state slots for sequences are held ({} more are kept for "
        "draft snapshots)",
        pool_.n_slots() - draft_slots_, draft_slots_);
  }
  FOLIO_ASSIGN_OR_RETURN(const int child, attn_->fork_sequence(parent));
  Status st = claim(child);
  if (!st.ok()) {
    (void)attn_->remove_sequence(child);
    return st;
  }
  Seq& c = seq_state(child);
  copy_slot(p.slot, c.slot);
  c.zero = p.zero;
  c.hashes = p.hashes;
  c.tail = p.tail;
  ++epoch_;
  return child;
}

Status HybridKvCache::remove_sequence(int seq) {
  FOLIO_RETURN_IF_ERROR(attn_->remove_sequence(seq));
  Seq& s = seq_state(seq);
  if (paged_) {
    release_snapshots(s);
    pool_.release(s.slot);
    s = Seq{};
  } else {
    reset(s);  // contiguous ids keep their slot
  }
  ++epoch_;
  return Status();
}

Result<int64_t> HybridKvCache::take_cached_prefix(int seq, std::span<const int32_t> prompt) {
  if (!has_sequence(seq)) return invalid_argument("kv cache: no sequence {}", seq);
  if (seq_len(seq) != 0) {
    return invalid_argument(
        "kv cache: sequence {} holds {} positions; only an empty one takes a cached prefix", seq,
        seq_len(seq));
  }
  if (!checkpointing()) return int64_t{0};  // K/V alone would miss the recurrent state
  const KvCacheManager* m = attn_->block_manager();
  FOLIO_CHECK(m != nullptr);
  const int64_t bs = block_size();
  const int64_t n_hit = m->lookup(seq, prompt, /*leave_last_token=*/true).n_tokens / bs;
  std::vector<BlockHash> hashes;
  prefix_hashes(prompt.first(static_cast<size_t>(n_hit * bs)), hashes);
  int64_t j = n_hit;
  while (j > 0 && pool_.find(hashes[static_cast<size_t>(j) - 1]) < 0) --j;
  Seq& s = seq_state(seq);
  if (j < n_hit) s.branch = n_hit * bs;  // policy (c)
  if (j == 0) {
    ++stats_.prefix_misses;
    return int64_t{0};
  }
  Result<int64_t> taken =
      attn_->take_cached_prefix(seq, prompt.first(static_cast<size_t>(j * bs) + 1));
  if (!taken.ok()) return taken.status();
  FOLIO_CHECK_MSG(*taken == j * bs, "hybrid kv cache: took {} cached positions, expected {}",
                  *taken, j * bs);
  const int32_t ckpt = pool_.find(hashes[static_cast<size_t>(j) - 1]);
  copy_slot(ckpt, s.slot);
  pool_.touch(ckpt);
  s.hashes.assign(hashes.begin(), hashes.begin() + j);
  s.tail.clear();
  s.zero = false;
  s.lost = false;
  ++stats_.prefix_hits;
  stats_.prefix_hit_tokens += static_cast<uint64_t>(j * bs);
  ++epoch_;
  return j * bs;
}

Status HybridKvCache::truncate(int seq, int64_t len) {
  if (!has_sequence(seq)) return invalid_argument("kv cache: no sequence {}", seq);
  const int64_t cur = seq_len(seq);
  if (len < 0 || len > cur) {
    return invalid_argument("kv cache: cannot truncate sequence {} of {} positions to {}", seq, cur,
                            len);
  }
  if (len == cur) return Status();
  Seq& s = seq_state(seq);
  if (len == 0) {
    FOLIO_RETURN_IF_ERROR(attn_->truncate(seq, 0));
    reset(s);
    ++epoch_;
    return Status();
  }
  const int64_t bs = block_size();
  if (checkpointing() && len % bs == 0 && static_cast<size_t>(len / bs) <= s.hashes.size()) {
    const int32_t ckpt = pool_.find(s.hashes[static_cast<size_t>(len / bs) - 1]);
    if (ckpt >= 0) {
      FOLIO_RETURN_IF_ERROR(attn_->truncate(seq, len));
      copy_slot(ckpt, s.slot);
      pool_.touch(ckpt);
      release_snapshots(s);
      s.hashes.resize(static_cast<size_t>(len / bs));
      s.tail.clear();
      s.zero = false;
      s.lost = false;
      ++epoch_;
      return Status();
    }
  }
  return unsupported(
      "kv cache: sequence {} carries recurrent state; it can be truncated to 0, to its length {} "
      "or to a checkpointed block boundary, not to {}",
      seq, cur, len);
}

int64_t HybridKvCache::truncation_point(int seq, int64_t len) const {
  if (!has_sequence(seq) || len >= seq_len(seq)) return len;
  if (len <= 0 || !checkpointing()) return 0;
  const Seq& s = seq_state(seq);
  const int64_t bs = block_size();
  for (int64_t b = std::min<int64_t>(len / bs, static_cast<int64_t>(s.hashes.size())); b > 0; --b) {
    if (pool_.find(s.hashes[static_cast<size_t>(b) - 1]) >= 0) return b * bs;
  }
  return 0;
}

void HybridKvCache::clear() {
  attn_->clear();
  for (Seq& s : seqs_) {
    if (s.slot >= 0) reset(s);
  }
  ++epoch_;
}

Status HybridKvCache::plan(const Batch& batch, KvPlan& plan) const {
  RecurrentPlan& rp = plan.recurrent;
  rp.clear();
  FOLIO_RETURN_IF_ERROR(attn_->plan(batch, plan));  // checks sequences and positions
  const size_t n = batch.tokens.size();

  // Steps in order of first appearance; tokens of a step consecutive?
  std::vector<int32_t> step_of_seq;  // sequence id -> step, -1: none yet
  std::vector<int32_t> step_of(n);
  bool consecutive = true;
  for (size_t i = 0; i < n; ++i) {
    const int32_t seq = batch.seq_idx[i];
    if (static_cast<size_t>(seq) >= step_of_seq.size())
      step_of_seq.resize(static_cast<size_t>(seq) + 1, -1);
    int32_t& st = step_of_seq[static_cast<size_t>(seq)];
    if (st < 0) {
      const Seq& s = seq_state(seq);
      if (s.lost) {
        return data_loss(
            "kv cache: sequence {} lost its recurrent state in a failed forward; truncate it to 0 "
            "and recompute it",
            seq);
      }
      st = static_cast<int32_t>(rp.steps.size());
      rp.steps.push_back({seq, s.slot, 0, 0, 0, 0});
    } else if (step_of[i - 1] != st) {
      consecutive = false;
    }
    step_of[i] = st;
    ++rp.steps[static_cast<size_t>(st)].n_tokens;
  }
  // Draft tokens per step (the trailing ones of their sequence, which the
  // attention part's plan checked).
  std::vector<int32_t> n_draft(rp.steps.size(), 0);
  int32_t n_snap = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!batch.is_unverified(i)) continue;
    ++n_draft[static_cast<size_t>(step_of[i])];
    ++n_snap;
  }
  int32_t row = 0;
  for (RecurrentStep& st : rp.steps) {
    st.row_begin = row;
    row += st.n_tokens;
    rp.slots.push_back(st.slot);
  }
  if (!consecutive) {
    rp.order.resize(n);
    rp.inverse.resize(n);
    std::vector<int32_t> fill(rp.steps.size(), 0);
    for (size_t i = 0; i < n; ++i) {
      const auto st = static_cast<size_t>(step_of[i]);
      const int32_t r = rp.steps[st].row_begin + fill[st]++;
      rp.order[static_cast<size_t>(r)] = static_cast<int32_t>(i);
      rp.inverse[i] = r;
    }
  }
  rp.epoch = epoch_;
  if (!checkpointing() && n_snap == 0) return Status();

  // Tokens in recurrent order, and the checkpoint candidates of each step.
  rp.tokens.resize(n);
  for (size_t r = 0; r < n; ++r) {
    rp.tokens[r] = batch.tokens[rp.order.empty() ? r : static_cast<size_t>(rp.order[r])];
  }
  const int64_t bs = block_size();
  std::vector<Candidate> cands;
  std::vector<int32_t> block;
  for (size_t si = 0; si < rp.steps.size() && checkpointing(); ++si) {
    const RecurrentStep& st = rp.steps[si];
    const Seq& s = seq_state(st.seq);
    const int64_t before = seq_len(st.seq);
    // Only verified tokens reach the prefix cache; a step with drafts is a
    // decode step, not a prompt chunk (policy (a) is off).
    const int32_t n_verified = st.n_tokens - n_draft[si];
    const int64_t after_all = before + n_verified;
    const int64_t last = after_all / bs * bs;  // last boundary crossed, if > before
    if (last <= before) continue;
    BlockHash parent = s.hashes.empty() ? hasher_.root() : s.hashes.back();
    block = s.tail;
    for (int32_t k = 0; k < n_verified; ++k) {
      block.push_back(rp.tokens[static_cast<size_t>(st.row_begin + k)]);
      if (static_cast<int64_t>(block.size()) < bs) continue;
      parent = hasher_.chain(parent, block);
      block.clear();
      const int64_t b = before + k + 1;  // a boundary: the state after token k
      int rank = -1;
      if (b == s.branch) {
        rank = 0;
      } else if (n_verified > 1 && b == last) {
        rank = 1;
      } else if (checkpoint_interval_ > 0 && (b / bs) % checkpoint_interval_ == 0) {
        rank = 2;
      }
      if (rank < 0 || pool_.find(parent) >= 0) continue;
      bool dup = false;
      for (const Candidate& c : cands) dup |= c.hash == parent;
      if (!dup) cands.push_back({rank, static_cast<int32_t>(si), k + 1, parent});
    }
  }
  if (cands.empty() && n_snap == 0) return Status();
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
  // Draft snapshots first (apply() acquires their slots, in this order),
  // then as many prefix checkpoints as slots remain.
  std::vector<int32_t> free_slots;
  pool_.peek_free(n_snap + static_cast<int32_t>(cands.size()), free_slots);
  if (static_cast<int32_t>(free_slots.size()) < n_snap) {
    rp.clear();
    return resource_exhausted(
        "hybrid kv cache: {} draft tokens need as many free recurrent-state slots, {} are free "
        "(draft_slots {})",
        n_snap, pool_.n_free(), draft_slots_);
  }
  size_t next_free = 0;
  for (size_t si = 0; si < rp.steps.size(); ++si) {
    const int32_t n_verified = rp.steps[si].n_tokens - n_draft[si];
    for (int32_t a = n_verified; a < rp.steps[si].n_tokens; ++a) {
      StateCheckpoint c;
      c.step = static_cast<int32_t>(si);
      c.after = a;
      c.slot = free_slots[next_free++];
      c.draft = true;
      rp.checkpoints.push_back(c);
    }
  }
  cands.resize(std::min(cands.size(), free_slots.size() - next_free));
  for (size_t i = 0; i < cands.size(); ++i) {
    rp.checkpoints.push_back({cands[i].step, cands[i].after, free_slots[next_free + i],
                              cands[i].hash, false});
  }
  std::sort(rp.checkpoints.begin(), rp.checkpoints.end(),
            [](const StateCheckpoint& a, const StateCheckpoint& b) {
              return a.step != b.step ? a.step < b.step : a.after < b.after;
            });
  for (size_t i = 0; i < rp.checkpoints.size(); ++i) {
    RecurrentStep& st = rp.steps[static_cast<size_t>(rp.checkpoints[i].step)];
    if (st.n_ckpt == 0) st.ckpt_begin = static_cast<int32_t>(i);
    ++st.n_ckpt;
  }
  return Status();
}

void HybridKvCache::prepare(const KvPlan& plan) {
  attn_->prepare(plan);
  for (const RecurrentStep& st : plan.recurrent.steps) {
    if (seq_state(st.seq).zero) zero_slot(st.slot);
  }
}

void HybridKvCache::apply(const KvPlan& plan) {
  const RecurrentPlan& rp = plan.recurrent;
  FOLIO_CHECK_MSG(rp.epoch == epoch_, "hybrid kv cache: plan made against another cache state");
  attn_->apply(plan);
  // Draft snapshots: their slots were the first free ones the plan saw,
  // which acquire() hands out now; each sequence holds its own until verify().
  std::vector<int32_t> planned, got;
  for (const StateCheckpoint& c : rp.checkpoints) {
    if (c.draft) planned.push_back(c.slot);
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    Result<int32_t> slot = pool_.acquire();
    FOLIO_CHECK_MSG(slot.ok(), "hybrid kv cache: a planned draft snapshot slot is gone");
    got.push_back(*slot);
  }
  std::vector<int32_t> sorted_planned = planned;
  std::sort(sorted_planned.begin(), sorted_planned.end());
  std::sort(got.begin(), got.end());
  FOLIO_CHECK_MSG(sorted_planned == got,
                  "hybrid kv cache: draft snapshot slots differ from the plan's");
  for (const RecurrentStep& st : rp.steps) {
    Seq& s = seq_state(st.seq);
    s.zero = false;
    release_snapshots(s);  // none unless verify() was skipped
    for (int32_t k = 0; k < st.n_ckpt; ++k) {
      const StateCheckpoint& c = rp.checkpoints[static_cast<size_t>(st.ckpt_begin + k)];
      if (c.draft) s.snapshots.push_back(c.slot);
    }
    n_snapshots_ += static_cast<int32_t>(s.snapshots.size());
    const auto n_draft = static_cast<int32_t>(s.snapshots.size());
    if (checkpointing()) {
      const std::span<const int32_t> toks = std::span<const int32_t>(rp.tokens).subspan(
          static_cast<size_t>(st.row_begin), static_cast<size_t>(st.n_tokens));
      extend_hashes(s, toks.first(toks.size() - static_cast<size_t>(n_draft)));
      s.drafts.assign(toks.end() - n_draft, toks.end());
      if (s.branch > 0 && seq_len(st.seq) >= s.branch) s.branch = 0;
    }
  }
  for (const StateCheckpoint& c : rp.checkpoints) {
    if (c.draft) continue;
    pool_.store_checkpoint(c.slot, c.hash);
    ++stats_.checkpoints_saved;
  }
  ++epoch_;
}

Status HybridKvCache::verify(int seq, int64_t len) {
  if (!has_sequence(seq)) return invalid_argument("verify: sequence {} does not exist", seq);
  Seq& s = seq_state(seq);
  const int64_t cur = seq_len(seq);
  const auto n_draft = static_cast<int64_t>(s.snapshots.size());
  if (n_draft == 0) return truncate(seq, len);
  if (len < cur - n_draft || len > cur) {
    return out_of_range("verify: length {} outside [{}, {}] for sequence {}", len, cur - n_draft,
                        cur, seq);
  }
  FOLIO_RETURN_IF_ERROR(attn_->verify(seq, len));
  const int64_t accepted = len - (cur - n_draft);
  // snapshots[i]: the state after the verified tokens and i drafts; none
  // is needed when all are kept.
  if (accepted < n_draft) copy_slot(s.snapshots[static_cast<size_t>(accepted)], s.slot);
  if (checkpointing()) {
    extend_hashes(s, std::span<const int32_t>(s.drafts).first(static_cast<size_t>(accepted)));
  }
  release_snapshots(s);
  ++epoch_;
  return Status();
}

void HybridKvCache::discard(const KvPlan& plan) {
  const RecurrentPlan& rp = plan.recurrent;
  FOLIO_CHECK_MSG(rp.epoch == epoch_, "hybrid kv cache: plan made against another cache state");
  attn_->discard(plan);
  for (const RecurrentStep& st : rp.steps) {
    Seq& s = seq_state(st.seq);
    if (!s.zero) s.lost = true;  // its state may be partly updated
  }
  for (const StateCheckpoint& c : rp.checkpoints) pool_.drop_checkpoint(c.slot);
  ++epoch_;
}

HybridCacheStats HybridKvCache::stats() const {
  HybridCacheStats st = stats_;
  st.state_slots = pool_.n_slots();
  st.slots_held = pool_.n_held();
  st.checkpoints_cached = pool_.n_checkpoints();
  st.checkpoints_evicted = pool_.n_evicted();
  st.slot_bytes = slot_bytes_;
  return st;
}

std::string HybridKvCache::summary() const {
  std::string s = fmt::format(
      "K/V {}, recurrent state {} slots of {:.2f} MiB ({} sequences, {} checkpoints",
      attn_->summary(), pool_.n_slots(), static_cast<double>(slot_bytes_) / (1024.0 * 1024.0),
      pool_.n_slots() - max_checkpoints_ - draft_slots_, max_checkpoints_);
  if (draft_slots_ > 0) s += fmt::format(", {} draft snapshots", draft_slots_);
  return s + ")";
}

Status HybridKvCache::check_invariants() const {
  FOLIO_RETURN_IF_ERROR(pool_.check_invariants());
  std::vector<uint8_t> used(static_cast<size_t>(pool_.n_slots()), 0);
  int32_t n_live = 0;
  for (size_t seq = 0; seq < seqs_.size(); ++seq) {
    const Seq& s = seqs_[seq];
    if (s.slot < 0) continue;
    if (!attn_->has_sequence(static_cast<int>(seq)) && paged_) {
      return internal_error("hybrid kv cache: slot {} held for dead sequence {}", s.slot, seq);
    }
    if (!pool_.is_held(s.slot)) {
      return internal_error("hybrid kv cache: sequence {} has slot {}, not held", seq, s.slot);
    }
    if (used[static_cast<size_t>(s.slot)]++ != 0) {
      return internal_error("hybrid kv cache: slot {} held by two sequences", s.slot);
    }
    ++n_live;
    for (const int32_t snap : s.snapshots) {
      if (!pool_.is_held(snap) || used[static_cast<size_t>(snap)]++ != 0) {
        return internal_error("hybrid kv cache: draft snapshot slot {} of sequence {} not held once",
                              snap, seq);
      }
      ++n_live;
    }
    if (checkpointing() && attn_->has_sequence(static_cast<int>(seq))) {
      const int64_t len =
          attn_->seq_len(static_cast<int>(seq)) - static_cast<int64_t>(s.snapshots.size());
      const auto bs = static_cast<size_t>(block_size());
      if (s.hashes.size() != static_cast<size_t>(len) / bs ||
          s.tail.size() != static_cast<size_t>(len) % bs) {
        return internal_error(
            "hybrid kv cache: sequence {} of {} positions has {} hashes + {} tokens", seq, len,
            s.hashes.size(), s.tail.size());
      }
    }
  }
  if (n_live != pool_.n_held()) {
    return internal_error("hybrid kv cache: {} live sequences and snapshots, {} held slots", n_live,
                          pool_.n_held());
  }
  if (paged_) {
    if (const auto* p = dynamic_cast<const PagedKvCache*>(attn_.get())) {
      FOLIO_RETURN_IF_ERROR(p->check_invariants());
    }
  }
  return Status();
}

}  // namespace folio::cache
