#include "cache/paged_kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "cache/block_table.h"
#include "cache/kv_sizing.h"
#include "core/aligned.h"

namespace folio::cache {

namespace {

constexpr int64_t kMaxCtx = int64_t{1} << 30;
constexpr int kMaxInitialSeqs = 1 << 16;

// A 2-D view of a [D, H, block_size, n_blocks] layer: rows of D * H elements.
TensorView as_table(const TensorView& t) {
  return TensorView::contiguous(t.data, t.dtype, {t.ne[0] * t.ne[1], t.ne[2] * t.ne[3]});
}

// Copies physical block src of a [D, H, block_size, n_blocks] layer into dst.
void copy_block(Buffer& buf, const TensorView& t, BlockId src, BlockId dst) {
  copy_in_buffer(buf, t.row(0, 0, dst), t.row(0, 0, src), t.nb[3]);
}

// Blocks of the main group's pool (the null block included).
Result<int32_t> main_pool_blocks(const KvCacheOptions& o, std::span<const KvLayerShape> shapes,
                                 size_t windowed_bytes) {
  if (o.n_blocks < 0) return invalid_argument("paged kv cache: n_blocks {} < 0", o.n_blocks);
  if (o.memory_mib < 0) return invalid_argument("paged kv cache: memory {} MiB < 0", o.memory_mib);
  if (o.n_blocks > 0 && o.memory_mib > 0) {
    return invalid_argument(
        "paged kv cache: give the pool size as blocks ({}) or as memory ({} MiB), not both",
        o.n_blocks, o.memory_mib);
  }
  if (o.n_blocks > 0) return o.n_blocks;
  if (o.memory_mib > 0) {
    const int64_t windowed_mib = static_cast<int64_t>((windowed_bytes + (size_t{1} << 20) - 1) >> 20);
    if (windowed_mib >= o.memory_mib) {
      return resource_exhausted(
          "paged kv cache: the sliding-window layers take {} MiB of the {} MiB budget, leaving "
          "nothing for the full-attention layers",
          windowed_mib, o.memory_mib);
    }
    return kv_blocks_for_budget(o.memory_mib - windowed_mib, shapes, o.type, o.block_size);
  }
  if (o.n_seq == 0) {
    return invalid_argument(
        "paged kv cache: no pool size (n_blocks or memory_mib) and no sequences to size it for");
  }
  const int64_t n = int64_t{o.n_seq} * blocks_for(o.n_ctx, o.block_size) + 1;
  if (n > std::numeric_limits<int32_t>::max() / o.block_size) {
    return invalid_argument(
        "paged kv cache: {} sequences of {} positions exceed the int32 slot range", o.n_seq,
        o.n_ctx);
  }
  return static_cast<int32_t>(n);
}

// Blocks of a windowed group's pool (see the header): never the tighter
// limit while max_seqs sequences live.
int64_t windowed_pool_blocks(const KvCacheOptions& o, int32_t window, int max_seqs) {
  const int32_t bs = o.block_size;
  const int64_t per_seq =
      std::min<int64_t>(blocks_for(window - 1, bs) + 3, blocks_for(o.n_ctx, bs) + 1);
  const int64_t step = o.max_step_tokens > 0 ? std::min(o.max_step_tokens, o.n_ctx) : o.n_ctx;
  return int64_t{max_seqs} * per_seq + blocks_for(step, bs) + 1;
}

}  // namespace

Result<std::unique_ptr<PagedKvCache>> PagedKvCache::create(const KvGeometry& geometry,
                                                           const KvCacheOptions& o) {
  if (geometry.hybrid()) {
    return invalid_argument("paged kv cache: {} has recurrent layers (a hybrid cache holds them)",
                            geometry.name);
  }
  if (!is_kv_dtype(o.type)) {
    return unsupported("paged kv cache: type {} is not supported (f32, f16, bf16, q8_0)",
                       dtype_name(o.type));
  }
  FOLIO_RETURN_IF_ERROR(validate_block_size(o.block_size));
  if (o.n_ctx <= 0 || o.n_ctx > kMaxCtx) {
    return invalid_argument("paged kv cache: n_ctx {} is out of range [1, 2^30]", o.n_ctx);
  }
  if (o.n_seq < 0 || o.n_seq > kMaxInitialSeqs) {
    return invalid_argument("paged kv cache: n_seq {} is out of range [0, {}]", o.n_seq,
                            kMaxInitialSeqs);
  }
  if (o.max_seqs < 0 || o.max_seqs > kMaxInitialSeqs || o.max_step_tokens < 0) {
    return invalid_argument("paged kv cache: max_seqs {} or max_step_tokens {} out of range",
                            o.max_seqs, o.max_step_tokens);
  }
  const std::vector<KvLayerShape> shapes = geometry.attention_shapes();
  for (const KvLayerShape& s : shapes) {
    if (s.window < 0) return invalid_argument("paged kv cache: sliding window {} < 0", s.window);
  }

  // Layer groups: full attention (and windows that cover the context) first,
  // then one per window size, ascending.
  auto group_window = [&](const KvLayerShape& s) {
    return s.window >= o.n_ctx ? 0 : s.window;
  };
  std::vector<int32_t> windows;
  for (const KvLayerShape& s : shapes) windows.push_back(group_window(s));
  std::sort(windows.begin(), windows.end());
  windows.erase(std::unique(windows.begin(), windows.end()), windows.end());
  if (windows.empty()) return invalid_argument("paged kv cache: {} has no attention layers", geometry.name);
  std::vector<std::vector<KvLayerShape>> group_shapes(windows.size());
  std::vector<int> layer_group;
  for (const KvLayerShape& s : shapes) {
    const auto g = static_cast<int>(std::lower_bound(windows.begin(), windows.end(),
                                                     group_window(s)) - windows.begin());
    group_shapes[static_cast<size_t>(g)].push_back(s);
    layer_group.push_back(g);
  }

  const int max_seqs = std::max({o.max_seqs, o.n_seq, 1});
  std::vector<int64_t> group_blocks(windows.size(), 0);
  std::vector<size_t> group_block_bytes(windows.size(), 0);
  size_t windowed_bytes = 0;
  for (size_t g = 0; g < windows.size(); ++g) {
    FOLIO_ASSIGN_OR_RETURN(group_block_bytes[g],
                           kv_block_bytes(group_shapes[g], o.type, o.block_size));
    if (g == 0) continue;
    group_blocks[g] = windowed_pool_blocks(o, windows[g], max_seqs);
    if (group_blocks[g] > std::numeric_limits<int32_t>::max() / o.block_size) {
      return invalid_argument("paged kv cache: {} sequences' sliding windows exceed the int32 slot range",
                              max_seqs);
    }
    windowed_bytes += static_cast<size_t>(group_blocks[g]) * group_block_bytes[g];
  }
  FOLIO_ASSIGN_OR_RETURN(group_blocks[0], main_pool_blocks(o, group_shapes[0], windowed_bytes));

  auto kv = std::unique_ptr<PagedKvCache>(new PagedKvCache());
  kv->n_ctx_ = o.n_ctx;
  kv->type_ = o.type;
  kv->max_seqs_ = windows.size() > 1 ? max_seqs : 0;
  kv->layers_.resize(shapes.size());
  for (size_t g = 0; g < windows.size(); ++g) {
    const auto n_blocks = static_cast<int32_t>(group_blocks[g]);
    KvCacheManagerOptions mo;
    mo.n_blocks = n_blocks;
    mo.block_size = o.block_size;
    mo.enable_prefix_caching = o.prefix_caching;
    mo.window = windows[g];
    // Blocks are shared only within this cache (one model, one KV type), so
    // the key just names them for dumps.
    mo.extra_key = fmt::format("{}/{}", geometry.name, dtype_name(o.type));
    mo.hash_seed = o.hash_seed;
    FOLIO_ASSIGN_OR_RETURN(KvCacheManager manager, KvCacheManager::create(mo));
    kv->groups_.push_back(Group{std::move(manager), {}, group_block_bytes[g], nullptr});
    Group& group = kv->groups_.back();

    // One buffer per group, K then V of each of its layers, each 64-byte aligned.
    const auto slots = static_cast<size_t>(n_blocks) * static_cast<size_t>(o.block_size);
    std::vector<size_t> k_off, v_off;
    size_t total = 0;
    for (size_t l = 0; l < shapes.size(); ++l) {
      if (layer_group[l] != static_cast<int>(g)) continue;
      const auto hkv = static_cast<size_t>(shapes[l].n_kv_head);
      group.layers.push_back(static_cast<int>(l));
      k_off.push_back(total);
      total += align_up(row_size(o.type, shapes[l].head_dim_k) * hkv * slots, 64);
      v_off.push_back(total);
      if (!shapes[l].v_in_k) total += align_up(row_size(o.type, shapes[l].head_dim_v) * hkv * slots, 64);
    }
    FOLIO_ASSIGN_OR_RETURN(group.buffer, alloc_cache_buffer(o.alloc, total, "paged kv cache"));
    char* base = static_cast<char*>(group.buffer->data());
    for (size_t i = 0; i < group.layers.size(); ++i) {
      const KvLayerShape& s = shapes[static_cast<size_t>(group.layers[i])];
      Layer& layer = kv->layers_[static_cast<size_t>(group.layers[i])];
      layer.k = TensorView::contiguous(base + k_off[i], o.type,
                                       {s.head_dim_k, s.n_kv_head, o.block_size, n_blocks});
      layer.v = s.v_in_k ? v_of_k(layer.k, s.head_dim_v)
                         : TensorView::contiguous(base + v_off[i], o.type,
                                                  {s.head_dim_v, s.n_kv_head, o.block_size, n_blocks});
      layer.v_in_k = s.v_in_k;
      layer.group = static_cast<int>(g);
    }
  }
  for (int s = 0; s < o.n_seq; ++s) {
    for (Group& g : kv->groups_) FOLIO_CHECK(g.manager.create_sequence() == s);
  }
  return kv;
}

size_t PagedKvCache::bytes() const {
  size_t n = 0;
  for (const Group& g : groups_) n += g.buffer == nullptr ? 0 : g.buffer->size();
  return n;
}

size_t PagedKvCache::windowed_bytes() const {
  size_t n = 0;
  for (size_t g = 1; g < groups_.size(); ++g) n += groups_[g].buffer->size();
  return n;
}

std::string PagedKvCache::summary() const {
  auto mib = [](size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  // K/V bytes a token takes in the full-attention layers' pages.
  const double token_kib =
      static_cast<double>(groups_[0].block_bytes) / block_size() / 1024.0;
  if (groups_.size() == 1) {
    return fmt::format("{} blocks of {} tokens ({:.1f} MiB, {:.2f} KiB per token)", n_blocks(),
                       block_size(), mib(bytes()), token_kib);
  }
  std::string out;
  for (const Group& g : groups_) {
    const int32_t w = g.manager.window();
    if (!out.empty()) out += " + ";
    out += fmt::format("{} blocks for {} {} layers ({:.1f} MiB)", g.manager.pool().n_blocks(),
                       g.layers.size(),
                       w == 0 ? std::string("full-attention")
                              : fmt::format("sliding-window ({} tokens)", w),
                       mib(g.buffer == nullptr ? 0 : g.buffer->size()));
  }
  return fmt::format("{} tokens a block: {}; {:.1f} MiB, {:.2f} KiB per token in full-attention layers",
                     block_size(), out, mib(bytes()), token_kib);
}

Result<int> PagedKvCache::add_sequence() {
  if (max_seqs_ > 0 && manager().n_sequences() >= max_seqs_) {
    return resource_exhausted(
        "kv cache: {} sequences live, the most its sliding-window pages are sized for",
        max_seqs_);
  }
  const int id = groups_[0].manager.create_sequence();
  for (size_t g = 1; g < groups_.size(); ++g) FOLIO_CHECK(groups_[g].manager.create_sequence() == id);
  return id;
}

Result<int> PagedKvCache::fork_sequence(int parent) {
  if (!manager().is_live(parent)) return invalid_argument("fork: sequence {} does not exist", parent);
  if (max_seqs_ > 0 && manager().n_sequences() >= max_seqs_) {
    return resource_exhausted(
        "kv cache: {} sequences live, the most its sliding-window pages are sized for",
        max_seqs_);
  }
  FOLIO_ASSIGN_OR_RETURN(const int id, groups_[0].manager.fork(parent));
  for (size_t g = 1; g < groups_.size(); ++g) {
    Result<SeqId> child = groups_[g].manager.fork(parent);
    FOLIO_CHECK(child.ok() && *child == id);
  }
  return id;
}

Status PagedKvCache::remove_sequence(int seq) {
  FOLIO_RETURN_IF_ERROR(groups_[0].manager.free_sequence(seq));
  for (size_t g = 1; g < groups_.size(); ++g) FOLIO_CHECK(groups_[g].manager.free_sequence(seq).ok());
  return Status();
}

int64_t PagedKvCache::truncation_point(int seq, int64_t len) const {
  int64_t point = len;
  for (const Group& g : groups_) point = std::min(point, g.manager.truncation_point(seq, point));
  return point;
}

Status PagedKvCache::truncate(int seq, int64_t len) {
  if (!manager().is_live(seq)) return invalid_argument("truncate: sequence {} does not exist", seq);
  if (len < 0 || len > manager().seq_len(seq)) {
    return out_of_range("truncate: length {} outside [0, {}] for sequence {}", len,
                        manager().seq_len(seq), seq);
  }
  // Checked in every group before any changes.
  if (truncation_point(seq, len) != len) {
    return invalid_argument(
        "truncate: sequence {} no longer holds the sliding window before position {} (truncate "
        "to {} instead)",
        seq, len, truncation_point(seq, len));
  }
  for (Group& g : groups_) FOLIO_CHECK(g.manager.truncate(seq, len).ok());
  return Status();
}

Status PagedKvCache::verify(int seq, int64_t len) {
  if (!manager().is_live(seq)) return invalid_argument("verify: sequence {} does not exist", seq);
  for (Group& g : groups_) FOLIO_RETURN_IF_ERROR(g.manager.verify(seq, len));
  return Status();
}

void PagedKvCache::clear() {
  int found = 0;
  for (int seq = 0; found < manager().n_sequences(); ++seq) {
    if (!manager().is_live(seq)) continue;
    ++found;
    FOLIO_CHECK(truncate(seq, 0).ok());
  }
}

int64_t PagedKvCache::common_prefix_hit(int seq, std::span<const int32_t> prompt) const {
  // A windowed group's valid hit lengths are not downward closed: shrink
  // until every group serves the same length.
  int64_t n = manager().lookup(seq, prompt, /*leave_last_token=*/true).n_tokens;
  for (bool changed = true; changed && n > 0;) {
    changed = false;
    for (const Group& g : groups_) {
      const int64_t m = g.manager.lookup(seq, prompt, /*leave_last_token=*/true, n).n_tokens;
      if (m < n) {
        n = m;
        changed = true;
      }
    }
  }
  return n;
}

Result<int64_t> PagedKvCache::take_cached_prefix(int seq, std::span<const int32_t> prompt) {
  if (!manager().is_live(seq)) return invalid_argument("kv cache: no sequence {}", seq);
  if (manager().seq_len(seq) != 0) {
    return invalid_argument(
        "kv cache: sequence {} holds {} positions; only an empty one takes a cached prefix", seq,
        manager().seq_len(seq));
  }
  const int64_t n = common_prefix_hit(seq, prompt);
  if (n == 0) return int64_t{0};
  // Taking cached blocks revives at most blocks of the free queue itself, so
  // the plan always fits; no K/V moves.
  const SeqAppend take{seq, prompt.first(static_cast<size_t>(n)), n};
  for (Group& g : groups_) {
    CachePlan p;
    FOLIO_RETURN_IF_ERROR(g.manager.plan(std::span(&take, 1), p));
    FOLIO_CHECK(p.fits() && p.slot_mapping.empty() && p.copies.empty());
    g.manager.apply(p);
  }
  return n;
}

namespace {

// Slots and block-table rows of one group's plan, for the batch's tokens
// (seq_idx: attention sequence of each token, rank: its index among that
// sequence's tokens).
void fill_pages(const KvCacheManager& m, const CachePlan& pages, std::span<const int32_t> seq_idx,
                std::span<const int32_t> rank, std::vector<int32_t>& slots,
                std::vector<int32_t>& block_table, int32_t& max_blocks) {
  slots.resize(seq_idx.size());
  for (size_t i = 0; i < seq_idx.size(); ++i) {
    const SeqStep& st = pages.seqs[static_cast<size_t>(seq_idx[i])];
    slots[i] = pages.slot_mapping[static_cast<size_t>(st.slot_begin + rank[i])];
  }
  const size_t n_seqs = pages.seqs.size();
  max_blocks = 1;
  for (size_t g = 0; g < n_seqs; ++g) max_blocks = std::max(max_blocks, m.planned_table_size(pages, g));
  block_table.assign(n_seqs * static_cast<size_t>(max_blocks), kNullBlock);
  for (size_t g = 0; g < n_seqs; ++g) {
    m.write_block_table_row(pages, g,
                            std::span<int32_t>(block_table)
                                .subspan(g * static_cast<size_t>(max_blocks),
                                         static_cast<size_t>(max_blocks)));
  }
}

}  // namespace

Status PagedKvCache::plan(const Batch& batch, KvPlan& plan) const {
  const size_t n = batch.tokens.size();
  plan.slots.clear();
  plan.seq_idx.resize(n);
  plan.kv_len.clear();
  plan.block_table.clear();
  plan.max_blocks = 0;
  plan.pages.clear();
  plan.windowed.resize(groups_.size() - 1);

  // Group the tokens by sequence, in order of first appearance; rank = index
  // of a token among its sequence's tokens.
  const KvCacheManager& main = manager();
  std::vector<int32_t> group_of;  // cache sequence id -> attention sequence, -1: none yet
  std::vector<int32_t> group_seq, count, drafts;
  std::vector<int32_t> rank(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t s = batch.seq_idx[i];
    if (!main.is_live(s)) {
      return invalid_argument("kv cache: token {} has sequence {}, which does not exist", i, s);
    }
    if (static_cast<size_t>(s) >= group_of.size()) group_of.resize(static_cast<size_t>(s) + 1, -1);
    int32_t& g = group_of[static_cast<size_t>(s)];
    if (g < 0) {
      g = static_cast<int32_t>(group_seq.size());
      group_seq.push_back(s);
      count.push_back(0);
      drafts.push_back(0);
    }
    // Draft tokens end their sequence's run in the batch.
    if (batch.is_unverified(i)) {
      ++drafts[static_cast<size_t>(g)];
    } else if (drafts[static_cast<size_t>(g)] > 0) {
      return invalid_argument(
          "kv cache: token {} of sequence {} follows one of its draft tokens (drafts must be its "
          "last tokens in the batch)",
          i, s);
    }
    const int64_t expected = main.seq_len(s) + count[static_cast<size_t>(g)];
    if (batch.pos[i] != expected) {
      return invalid_argument(
          "kv cache: token {} of sequence {} has position {}, expected {} (positions must continue "
          "the sequence)",
          i, s, batch.pos[i], expected);
    }
    if (expected >= n_ctx_) {
      return out_of_range("kv cache: sequence {} would hold more than n_ctx = {} positions", s,
                          n_ctx_);
    }
    plan.seq_idx[i] = g;
    rank[i] = count[static_cast<size_t>(g)]++;
  }

  // Each sequence's tokens in one run, for the managers.
  const size_t n_seqs = group_seq.size();
  std::vector<int32_t> begin(n_seqs + 1, 0);
  for (size_t g = 0; g < n_seqs; ++g) begin[g + 1] = begin[g] + count[g];
  std::vector<int32_t> tokens(n);
  for (size_t i = 0; i < n; ++i) {
    tokens[static_cast<size_t>(begin[static_cast<size_t>(plan.seq_idx[i])] + rank[i])] =
        batch.tokens[i];
  }
  std::vector<SeqAppend> appends(n_seqs);
  for (size_t g = 0; g < n_seqs; ++g) {
    appends[g].seq = group_seq[g];
    appends[g].tokens = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(begin[g]),
                                                                 static_cast<size_t>(count[g]));
    appends[g].n_unverified = drafts[g];
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    const KvCacheManager& m = groups_[g].manager;
    CachePlan& pages = g == 0 ? plan.pages : plan.windowed[g - 1].pages;
    FOLIO_RETURN_IF_ERROR(m.plan(appends, pages));
    if (!pages.fits()) {
      return resource_exhausted(
          "kv cache: the batch needs {} free blocks{}, the pool has {} ({} missing)",
          pages.n_blocks_needed,
          m.window() > 0 ? fmt::format(" of the {}-token window's pages", m.window()) : "",
          m.pool().n_free(), pages.n_missing_blocks);
    }
    if (g == 0) {
      fill_pages(m, pages, plan.seq_idx, rank, plan.slots, plan.block_table, plan.max_blocks);
    } else {
      KvPagePlan& w = plan.windowed[g - 1];
      w.window = m.window();
      fill_pages(m, pages, plan.seq_idx, rank, w.slots, w.block_table, w.max_blocks);
    }
  }
  plan.kv_len.resize(n_seqs);
  for (size_t g = 0; g < n_seqs; ++g) {
    plan.kv_len[g] = static_cast<int32_t>(plan.pages.seqs[g].len_after);
  }
  return Status();
}

void PagedKvCache::prepare(const KvPlan& plan) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const CachePlan& pages = g == 0 ? plan.pages : plan.windowed[g - 1].pages;
    for (const BlockCopy& c : pages.copies) {
      for (const int l : groups_[g].layers) {
        copy_block(*groups_[g].buffer, layers_[static_cast<size_t>(l)].k, c.src, c.dst);
        if (!layers_[static_cast<size_t>(l)].v_in_k) {
          copy_block(*groups_[g].buffer, layers_[static_cast<size_t>(l)].v, c.src, c.dst);
        }
      }
    }
  }
}

void PagedKvCache::apply(const KvPlan& plan) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].manager.apply(g == 0 ? plan.pages : plan.windowed[g - 1].pages);
  }
}

void PagedKvCache::discard(const KvPlan& plan) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].manager.discard(g == 0 ? plan.pages : plan.windowed[g - 1].pages);
  }
}

bool PagedKvCache::defrag() {
  for (const Group& g : groups_) {
    if (!g.manager.pool().idle()) return false;
  }
  for (Group& g : groups_) FOLIO_CHECK(g.manager.defrag());
  return true;
}

Status PagedKvCache::check_invariants() const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    FOLIO_RETURN_IF_ERROR(groups_[g].manager.check_invariants());
    if (g == 0) continue;
    const KvCacheManager& m = groups_[g].manager;
    if (m.n_sequences() != manager().n_sequences()) {
      return internal_error("kv cache: group {} holds {} sequences, the main group {}", g,
                            m.n_sequences(), manager().n_sequences());
    }
    for (int seq = 0, found = 0; found < manager().n_sequences(); ++seq) {
      if (!manager().is_live(seq)) continue;
      ++found;
      if (!m.is_live(seq) || !std::ranges::equal(m.tokens(seq), manager().tokens(seq))) {
        return internal_error("kv cache: group {} disagrees on sequence {}", g, seq);
      }
    }
  }
  return Status();
}

TensorView PagedKvCache::k_table(int layer) const {
  return as_table(layers_[static_cast<size_t>(layer)].k);
}
TensorView PagedKvCache::v_table(int layer) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  return l.v_in_k ? TensorView{} : as_table(l.v);
}

}  // namespace folio::cache
