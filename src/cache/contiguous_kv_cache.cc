#include "cache/contiguous_kv_cache.h"

#include <fmt/format.h>

#include <cstring>

#include "cache/kv_sizing.h"
#include "core/aligned.h"

namespace folio::cache {

namespace {

// A 2-D view of a [D, H, n_ctx, n_seq] layer: rows of D * H elements.
TensorView as_table(const TensorView& t) {
  return TensorView::contiguous(t.data, t.dtype, {t.ne[0] * t.ne[1], t.ne[2] * t.ne[3]});
}

}  // namespace

Result<std::unique_ptr<ContiguousKvCache>> ContiguousKvCache::create(const KvGeometry& geometry,
                                                                     const KvCacheOptions& o) {
  if (geometry.hybrid()) {
    return invalid_argument("kv cache: {} has recurrent layers (a hybrid cache holds them)",
                            geometry.name);
  }
  const std::vector<KvLayerShape> shapes = geometry.attention_shapes();
  if (!is_kv_dtype(o.type)) {
    return unsupported("kv cache: type {} is not supported (f32, f16, bf16, q8_0)",
                       dtype_name(o.type));
  }
  if (o.n_ctx <= 0 || o.n_ctx > (int64_t{1} << 24)) {
    return invalid_argument("kv cache: n_ctx {} is out of range [1, 2^24]", o.n_ctx);
  }
  if (o.n_seq <= 0 || o.n_seq > 4096) {
    return invalid_argument("kv cache: n_seq {} is out of range [1, 4096]", o.n_seq);
  }
  for (const KvLayerShape& s : shapes) {
    if (s.head_dim_k % folio::block_size(o.type) != 0 ||
        s.head_dim_v % folio::block_size(o.type) != 0) {
      return unsupported(
          "kv cache: {} needs head dims that are multiples of {} (model has {} / {})",
          dtype_name(o.type), folio::block_size(o.type), s.head_dim_k, s.head_dim_v);
    }
  }
  const int64_t slots = o.n_ctx * o.n_seq;
  if (slots > (int64_t{1} << 31) - 1) {
    return invalid_argument("kv cache: n_ctx * n_seq = {} slots exceeds the I32 slot range", slots);
  }
  auto cache = std::unique_ptr<ContiguousKvCache>(new ContiguousKvCache());
  cache->n_seq_ = o.n_seq;
  cache->n_ctx_ = o.n_ctx;
  cache->type_ = o.type;
  cache->len_.assign(static_cast<size_t>(o.n_seq), 0);
  cache->claimed_.assign(static_cast<size_t>(o.n_seq), 0);

  // One buffer, K then V of each layer, each 64-byte aligned.
  std::vector<size_t> k_off, v_off;
  size_t total = 0;
  for (const KvLayerShape& s : shapes) {
    const auto hkv = static_cast<size_t>(s.n_kv_head);
    k_off.push_back(total);
    total += align_up(row_size(o.type, s.head_dim_k) * hkv * static_cast<size_t>(slots), 64);
    v_off.push_back(total);
    if (!s.v_in_k) {
      total += align_up(row_size(o.type, s.head_dim_v) * hkv * static_cast<size_t>(slots), 64);
    }
  }
  FOLIO_ASSIGN_OR_RETURN(cache->buffer_, alloc_cache_buffer(o.alloc, total, "kv cache"));
  char* base = static_cast<char*>(cache->buffer_->data());
  for (size_t l = 0; l < shapes.size(); ++l) {
    const KvLayerShape& s = shapes[l];
    Layer layer;
    layer.k = TensorView::contiguous(base + k_off[l], o.type,
                                     {s.head_dim_k, s.n_kv_head, o.n_ctx, o.n_seq});
    layer.v = s.v_in_k ? v_of_k(layer.k, s.head_dim_v)
                       : TensorView::contiguous(base + v_off[l], o.type,
                                                {s.head_dim_v, s.n_kv_head, o.n_ctx, o.n_seq});
    layer.v_in_k = s.v_in_k;
    cache->layers_.push_back(layer);
  }
  return cache;
}

std::string ContiguousKvCache::summary() const {
  size_t per_token = 0;  // K/V bytes of one position, every layer
  for (const Layer& l : layers_) per_token += l.k.nb[2] + (l.v_in_k ? 0 : l.v.nb[2]);
  return fmt::format("{} sequences of {} positions ({:.1f} MiB, {:.2f} KiB per token)", n_seq_,
                     n_ctx_, static_cast<double>(bytes()) / (1024.0 * 1024.0),
                     static_cast<double>(per_token) / 1024.0);
}

int64_t ContiguousKvCache::seq_len(int seq) const {
  FOLIO_CHECK_MSG(has_sequence(seq), "kv cache: no sequence {}", seq);
  return len_[static_cast<size_t>(seq)];
}

Result<int> ContiguousKvCache::add_sequence() {
  // A slot is free when nobody claimed it and it holds nothing (callers may
  // use slots by index without claiming them).
  for (int s = 0; s < n_seq_; ++s) {
    if (claimed_[static_cast<size_t>(s)] != 0 || len_[static_cast<size_t>(s)] != 0) continue;
    claimed_[static_cast<size_t>(s)] = 1;
    len_[static_cast<size_t>(s)] = 0;
    return s;
  }
  return resource_exhausted("kv cache: all {} sequence slots are in use", n_seq_);
}

Result<int> ContiguousKvCache::fork_sequence(int parent) {
  if (!has_sequence(parent)) return invalid_argument("kv cache: no sequence {} to fork", parent);
  claimed_[static_cast<size_t>(parent)] = 1;  // in use, even if it was used by index
  FOLIO_ASSIGN_OR_RETURN(const int child, add_sequence());
  const int64_t len = len_[static_cast<size_t>(parent)];
  // A sequence's positions are consecutive rows of each layer's table.
  for (const Layer& l : layers_) {
    for (const TensorView* t : {&l.k, &l.v}) {
      if (t == &l.v && l.v_in_k) continue;  // V is part of the K rows copied above
      copy_in_buffer(*buffer_, t->row(0, 0, child), t->row(0, 0, parent),
                     static_cast<size_t>(len) * t->nb[2]);
    }
  }
  len_[static_cast<size_t>(child)] = len;
  return child;
}

Status ContiguousKvCache::remove_sequence(int seq) {
  if (!has_sequence(seq)) return invalid_argument("kv cache: no sequence {} to remove", seq);
  len_[static_cast<size_t>(seq)] = 0;
  claimed_[static_cast<size_t>(seq)] = 0;
  return Status();
}

Result<int64_t> ContiguousKvCache::take_cached_prefix(int seq, std::span<const int32_t> prompt) {
  if (!has_sequence(seq)) return invalid_argument("kv cache: no sequence {}", seq);
  if (len_[static_cast<size_t>(seq)] != 0) {
    return invalid_argument(
        "kv cache: sequence {} holds {} positions; only an empty one takes a "
        "cached prefix",
        seq, len_[static_cast<size_t>(seq)]);
  }
  (void)prompt;  // no prefix cache: every position is computed
  return int64_t{0};
}

Status ContiguousKvCache::plan(const Batch& batch, KvPlan& plan) const {
  const int64_t n = batch.size();
  plan.slots.resize(static_cast<size_t>(n));
  plan.seq_idx.assign(batch.seq_idx.begin(), batch.seq_idx.end());
  plan.block_table.clear();
  plan.max_blocks = 0;
  plan.pages.clear();
  plan.kv_len.resize(static_cast<size_t>(n_seq_));
  for (int s = 0; s < n_seq_; ++s)
    plan.kv_len[static_cast<size_t>(s)] = static_cast<int32_t>(len_[static_cast<size_t>(s)]);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t s = batch.seq_idx[static_cast<size_t>(i)];
    const int32_t p = batch.pos[static_cast<size_t>(i)];
    if (s < 0 || s >= n_seq_) {
      return invalid_argument("kv cache: token {} has sequence {}, the cache holds {} sequence(s)",
                              i, s, n_seq_);
    }
    int32_t& len = plan.kv_len[static_cast<size_t>(s)];
    if (p != len) {
      return invalid_argument(
          "kv cache: token {} of sequence {} has position {}, expected {} (positions must continue "
          "the sequence)",
          i, s, p, len);
    }
    if (len >= n_ctx_) {
      return resource_exhausted("kv cache: sequence {} would hold more than n_ctx = {} positions",
                                s, n_ctx_);
    }
    plan.slots[static_cast<size_t>(i)] = static_cast<int32_t>(s * n_ctx_ + p);
    ++len;
  }
  return Status();
}

void ContiguousKvCache::apply(const KvPlan& plan) {
  FOLIO_CHECK(plan.kv_len.size() == len_.size());
  for (size_t s = 0; s < len_.size(); ++s) len_[s] = plan.kv_len[s];
}

TensorView ContiguousKvCache::k_table(int layer) const {
  return as_table(layers_[static_cast<size_t>(layer)].k);
}
TensorView ContiguousKvCache::v_table(int layer) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  return l.v_in_k ? TensorView{} : as_table(l.v);
}

void ContiguousKvCache::clear() {
  for (int64_t& l : len_) l = 0;
}

Status ContiguousKvCache::truncate(int seq, int64_t len) {
  if (seq < 0 || seq >= n_seq_) return invalid_argument("kv cache: no sequence {}", seq);
  if (len < 0 || len > len_[static_cast<size_t>(seq)]) {
    return invalid_argument("kv cache: cannot truncate sequence {} of {} positions to {}", seq,
                            len_[static_cast<size_t>(seq)], len);
  }
  len_[static_cast<size_t>(seq)] = len;
  return Status();
}

}  // namespace folio::cache
