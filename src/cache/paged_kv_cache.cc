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

Result<int32_t> pool_blocks(const KvCacheOptions& o, std::span<const KvLayerShape> shapes) {
  if (o.n_blocks < 0) return invalid_argument("paged kv cache: n_blocks {} < 0", o.n_blocks);
  if (o.memory_mib < 0) return invalid_argument("paged kv cache: memory {} MiB < 0", o.memory_mib);
  if (o.n_blocks > 0 && o.memory_mib > 0) {
    return invalid_argument(
        "paged kv cache: give the pool size as blocks ({}) or as memory ({} MiB), not both",
        o.n_blocks, o.memory_mib);
  }
  if (o.n_blocks > 0) return o.n_blocks;
  if (o.memory_mib > 0) {
    return kv_blocks_for_budget(o.memory_mib, shapes, o.type, o.block_size);
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
  const std::vector<KvLayerShape> shapes = geometry.attention_shapes();
  FOLIO_ASSIGN_OR_RETURN(const size_t block_bytes, kv_block_bytes(shapes, o.type, o.block_size));
  FOLIO_ASSIGN_OR_RETURN(const int32_t n_blocks, pool_blocks(o, shapes));

  KvCacheManagerOptions mo;
  mo.n_blocks = n_blocks;
  mo.block_size = o.block_size;
  mo.enable_prefix_caching = o.prefix_caching;
  // Blocks are shared only within this cache (one model, one KV type), so
  // the key just names them for dumps.
  mo.extra_key = fmt::format("{}/{}", geometry.name, dtype_name(o.type));
  mo.hash_seed = o.hash_seed;
  FOLIO_ASSIGN_OR_RETURN(KvCacheManager manager, KvCacheManager::create(mo));

  auto kv = std::unique_ptr<PagedKvCache>(new PagedKvCache(std::move(manager)));
  kv->n_ctx_ = o.n_ctx;
  kv->type_ = o.type;
  kv->block_bytes_ = block_bytes;

  // One buffer, K then V of each layer, each 64-byte aligned.
  const auto slots = static_cast<size_t>(n_blocks) * static_cast<size_t>(o.block_size);
  std::vector<size_t> k_off, v_off;
  size_t total = 0;
  for (const KvLayerShape& s : shapes) {
    const auto hkv = static_cast<size_t>(s.n_kv_head);
    k_off.push_back(total);
    total += align_up(row_size(o.type, s.head_dim_k) * hkv * slots, 64);
    v_off.push_back(total);
    total += align_up(row_size(o.type, s.head_dim_v) * hkv * slots, 64);
  }
  FOLIO_ASSIGN_OR_RETURN(kv->buffer_, alloc_cache_buffer(o.alloc, total, "paged kv cache"));
  char* base = static_cast<char*>(kv->buffer_->data());
  for (size_t l = 0; l < shapes.size(); ++l) {
    const KvLayerShape& s = shapes[l];
    Layer layer;
    layer.k = TensorView::contiguous(base + k_off[l], o.type,
                                     {s.head_dim_k, s.n_kv_head, o.block_size, n_blocks});
    layer.v = TensorView::contiguous(base + v_off[l], o.type,
                                     {s.head_dim_v, s.n_kv_head, o.block_size, n_blocks});
    kv->layers_.push_back(layer);
  }
  for (int s = 0; s < o.n_seq; ++s) FOLIO_CHECK(kv->manager_.create_sequence() == s);
  return kv;
}

std::string PagedKvCache::summary() const {
  return fmt::format("{} blocks of {} tokens ({:.1f} MiB)", n_blocks(), block_size(),
                     static_cast<double>(bytes()) / (1024.0 * 1024.0));
}

Result<int> PagedKvCache::add_sequence() {
  return manager_.create_sequence();
}

Result<int> PagedKvCache::fork_sequence(int parent) {
  return manager_.fork(parent);
}

Status PagedKvCache::remove_sequence(int seq) {
  return manager_.free_sequence(seq);
}

Status PagedKvCache::truncate(int seq, int64_t len) {
  return manager_.truncate(seq, len);
}

void PagedKvCache::clear() {
  int found = 0;
  for (int seq = 0; found < manager_.n_sequences(); ++seq) {
    if (!manager_.is_live(seq)) continue;
    ++found;
    FOLIO_CHECK(manager_.truncate(seq, 0).ok());
  }
}

Result<int64_t> PagedKvCache::take_cached_prefix(int seq, std::span<const int32_t> prompt) {
  if (!manager_.is_live(seq)) return invalid_argument("kv cache: no sequence {}", seq);
  if (manager_.seq_len(seq) != 0) {
    return invalid_argument(
        "kv cache: sequence {} holds {} positions; only an empty one takes a cached prefix", seq,
        manager_.seq_len(seq));
  }
  const PrefixHit hit = manager_.lookup(seq, prompt, /*leave_last_token=*/true);
  if (hit.n_tokens == 0) return int64_t{0};
  // Taking cached blocks revives at most blocks of the free queue itself, so
  // the plan always fits; no K/V moves.
  const SeqAppend take{seq, prompt.first(static_cast<size_t>(hit.n_tokens)), hit.n_tokens};
  CachePlan p;
  FOLIO_RETURN_IF_ERROR(manager_.plan(std::span(&take, 1), p));
  FOLIO_CHECK(p.fits() && p.slot_mapping.empty() && p.copies.empty());
  manager_.apply(p);
  return hit.n_tokens;
}

Status PagedKvCache::plan(const Batch& batch, KvPlan& plan) const {
  const size_t n = batch.tokens.size();
  plan.slots.resize(n);
  plan.seq_idx.resize(n);
  plan.kv_len.clear();
  plan.block_table.clear();
  plan.max_blocks = 0;
  plan.pages.clear();

  // Group the tokens by sequence, in order of first appearance; rank = index
  // of a token among its sequence's tokens.
  std::vector<int32_t> group_of;  // cache sequence id -> attention sequence, -1: none yet
  std::vector<int32_t> group_seq, count;
  std::vector<int32_t> rank(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t s = batch.seq_idx[i];
    if (!manager_.is_live(s)) {
      return invalid_argument("kv cache: token {} has sequence {}, which does not exist", i, s);
    }
    if (static_cast<size_t>(s) >= group_of.size()) group_of.resize(static_cast<size_t>(s) + 1, -1);
    int32_t& g = group_of[static_cast<size_t>(s)];
    if (g < 0) {
      g = static_cast<int32_t>(group_seq.size());
      group_seq.push_back(s);
      count.push_back(0);
    }
    const int64_t expected = manager_.seq_len(s) + count[static_cast<size_t>(g)];
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

  // Each sequence's tokens in one run, for the manager.
  const size_t n_groups = group_seq.size();
  std::vector<int32_t> begin(n_groups + 1, 0);
  for (size_t g = 0; g < n_groups; ++g) begin[g + 1] = begin[g] + count[g];
  std::vector<int32_t> tokens(n);
  for (size_t i = 0; i < n; ++i) {
    tokens[static_cast<size_t>(begin[static_cast<size_t>(plan.seq_idx[i])] + rank[i])] =
        batch.tokens[i];
  }
  std::vector<SeqAppend> appends(n_groups);
  for (size_t g = 0; g < n_groups; ++g) {
    appends[g].seq = group_seq[g];
    appends[g].tokens = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(begin[g]),
                                                                 static_cast<size_t>(count[g]));
  }
  CachePlan& pages = plan.pages;
  FOLIO_RETURN_IF_ERROR(manager_.plan(appends, pages));
  if (!pages.fits()) {
    return resource_exhausted(
        "kv cache: the batch needs {} free blocks, the pool has {} ({} missing)",
        pages.n_blocks_needed, manager_.pool().n_free(), pages.n_missing_blocks);
  }

  for (size_t i = 0; i < n; ++i) {
    const SeqStep& st = pages.seqs[static_cast<size_t>(plan.seq_idx[i])];
    plan.slots[i] = pages.slot_mapping[static_cast<size_t>(st.slot_begin + rank[i])];
  }
  plan.kv_len.resize(n_groups);
  int32_t max_blocks = 1;
  for (size_t g = 0; g < n_groups; ++g) {
    plan.kv_len[g] = static_cast<int32_t>(pages.seqs[g].len_after);
    max_blocks = std::max(max_blocks, manager_.planned_table_size(pages, g));
  }
  plan.max_blocks = max_blocks;
  plan.block_table.assign(n_groups * static_cast<size_t>(max_blocks), kNullBlock);
  for (size_t g = 0; g < n_groups; ++g) {
    manager_.write_block_table_row(
        pages, g,
        std::span<int32_t>(plan.block_table)
            .subspan(g * static_cast<size_t>(max_blocks), static_cast<size_t>(max_blocks)));
  }
  return Status();
}

void PagedKvCache::prepare(const KvPlan& plan) {
  for (const BlockCopy& c : plan.pages.copies) {
    for (const Layer& l : layers_) {
      copy_block(*buffer_, l.k, c.src, c.dst);
      copy_block(*buffer_, l.v, c.src, c.dst);
    }
  }
}

void PagedKvCache::apply(const KvPlan& plan) {
  manager_.apply(plan.pages);
}

void PagedKvCache::discard(const KvPlan& plan) {
  manager_.discard(plan.pages);
}

TensorView PagedKvCache::k_table(int layer) const {
  return as_table(layers_[static_cast<size_t>(layer)].k);
}
TensorView PagedKvCache::v_table(int layer) const {
  return as_table(layers_[static_cast<size_t>(layer)].v);
}

}  // namespace folio::cache
