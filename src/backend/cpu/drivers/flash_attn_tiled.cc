// The tier-independent part of the tiled flash attention (see
// flash_attn_tiled.h for the canonical order that makes paged, contiguous
// and threaded runs byte-identical).
//
// Plan: the tokens of each sequence (sorted by position) are cut into groups
// of up to kRowsPerChunk / gqa tokens; a chunk is such a group x one KV head
// (prefill), or x several KV heads (decode-sized groups: the rows of all KV
// heads at one position are adjacent in memory, so a tile is read as one
// stream; a tile converts and uses one KV head after the other). Its key
// range is the union of its tokens' visible ranges; splits are the
// kFlashSplit-aligned pieces of it. In a tile, rows shared by all query rows
// of a KV head (decode) are read straight from the cache by the tier
// (packed); otherwise they are converted into f32 tile buffers first.
// Block-table entries are read only for blocks holding a position below
// kv_len: padding entries are never touched.
//
// Two schedules, the same arithmetic:
//   sequential  one work item per chunk: its splits in ascending order, each
//               folded into a running state right away (no partial storage);
//   split-K     one work item per (chunk, split), partials stored; then one
//               item per chunk folds them in ascending split order.
// Split-K is used when there are few chunks for the threads (a handful of
// long decodes) and the partials fit in kMaxPartialBytes. Work items are
// handed out dynamically (an atomic counter, longest first): which thread
// runs an item never changes what it computes.
#include "backend/cpu/drivers/flash_attn_tiled.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "backend/cpu/ref/attn_util.h"
#include "core/aligned.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace folio::cpu {

namespace {

constexpr int kRowsPerChunk = 64;  // query rows per KV head in a prefill chunk (>= 1 token)
constexpr int kDecodeRows = 16;    // chunks with at most this many rows per KV head take every
                                   // KV head at once (while that leaves enough work items)
constexpr size_t kMaxPartialBytes = size_t{64} << 20;
constexpr int kPackedRows = 8;  // up to this many rows per KV head sharing one key range
                                // read K/V straight from the cache (no f32 tile buffers)
// (row, key) pairs worth waking the pool for: between a decode step's ops
// the workers still spin, so a step's 16 heads over 32 keys repay it.
constexpr double kMinParallelWork = 1 << 9;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t pad_to(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

struct Token {
  int32_t index;  // in the batch
  int64_t b, e;   // visible key positions [b, e), non-empty
};

// Query rows: KV head major, then token, then the query heads of the group.
struct Chunk {
  int32_t seq;
  int32_t tok0, n_tok;      // tokens_[tok0 .. tok0 + n_tok)
  int32_t kv0, n_kv;        // KV heads [kv0, kv0 + n_kv)
  int64_t lo, hi;           // union of the tokens' visible ranges
  int64_t split0, n_split;  // splits [split0, split0 + n_split) of kFlashSplit positions
  int64_t part = 0;         // split-K: first partial entry (entries: n_split x rows)
};

// Per-thread buffers, grown on demand and kept between calls.
struct Scratch {
  AlignedPtr mem;
  size_t cap = 0;
  float *q, *k, *v, *s, *p, *acc, *run_acc, *m, *l, *ms, *run_m, *run_l;
  int *lo, *hi;
  bool* has;
  const void **kp, **vp;  // [kFlashTile] packed K / V rows of one KV head
  const char **kb, **vb;  // [kFlashTile] row bases (KV head 0) of this tile
  const void* zero_row;   // zero bytes (a zero row of any K/V type)

  void reserve(int rows, int64_t ld, int64_t ldv, size_t row_bytes) {
    const size_t T = kFlashTile;
    const size_t fl = sizeof(float), ptr = sizeof(void*), in = sizeof(int);
    // clang-format off
    const size_t sizes[] = {
        fl * rows * ld, fl * T * ld, fl * T * ldv,        // q, k, v
        fl * rows * T, fl * rows * T,                     // s, p
        fl * rows * ldv, fl * rows * ldv,                 // acc, run_acc
        fl * rows, fl * rows, fl * rows,                  // m, l, ms
        fl * rows, fl * rows,                             // run_m, run_l
        in * rows, in * rows, sizeof(bool) * rows,        // lo, hi, has
        ptr * T, ptr * T, ptr * T, ptr * T,               // kp, vp, kb, vb
        row_bytes};                                       // zero_row
    // clang-format on
    size_t total = 0;
    for (size_t b : sizes) total += align_up(b, 64);
    if (total > cap) {
      mem = aligned_alloc_bytes(total);
      FOLIO_CHECK_MSG(mem != nullptr, "flash attention scratch of {} bytes", total);
      cap = total;
    }
    char* at = static_cast<char*>(mem.get());
    void* parts[std::size(sizes)];
    for (size_t i = 0; i < std::size(sizes); ++i) {
      parts[i] = at;
      at += align_up(sizes[i], 64);
    }
    float** f[] = {&q, &k, &v, &s, &p, &acc, &run_acc, &m, &l, &ms, &run_m, &run_l};
    for (size_t i = 0; i < std::size(f); ++i) *f[i] = static_cast<float*>(parts[i]);
    lo = static_cast<int*>(parts[12]), hi = static_cast<int*>(parts[13]);
    has = static_cast<bool*>(parts[14]);
    kp = static_cast<const void**>(parts[15]), vp = static_cast<const void**>(parts[16]);
    kb = static_cast<const char**>(parts[17]), vb = static_cast<const char**>(parts[18]);
    std::memset(parts[19], 0, row_bytes);
    zero_row = parts[19];
  }
};

Scratch& thread_scratch() {
  thread_local Scratch s;
  return s;
}

// Folds one split's partial (m, l, a) into a row's running state (M, L, A):
// empty partials (no visible key) are skipped, the first is copied, later
// ones rescale whichever side has the smaller maximum.
void fold(float m, float l, const float* a, bool* has, float* M, float* L, float* A, int64_t n) {
  if (m == kNegInf) return;
  if (!*has) {
    *has = true;
    *M = m, *L = l;
    std::memcpy(A, a, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  if (m > *M) {
    const float f = std::exp(*M - m);
    for (int64_t c = 0; c < n; ++c) A[c] = A[c] * f + a[c];
    *L = *L * f + l;
    *M = m;
  } else {
    const float f = std::exp(m - *M);
    for (int64_t c = 0; c < n; ++c) A[c] = A[c] + a[c] * f;
    *L = *L + l * f;
  }
}

class FlashRunner {
 public:
  FlashRunner(const Op& op, const FlashAttnPrimitives& prims)
      : op_(op), prims_(prims), p_(op.p<AttentionParams>()) {
    q_ = op.src[0];
    k_ = op.src[1];
    v_ = op.src[2];
    d_ = q_.ne[0];
    dv_ = v_.ne[0];
    n_head_ = q_.ne[1];
    n_kv_ = k_.ne[1];
    group_ = static_cast<int>(n_head_ / n_kv_);
    ld_ = pad_to(d_, kFlashPad);
    ldv_ = pad_to(dv_, kFlashPad);
    score_.scale = p_.scale;
    score_.softcap = p_.softcap;
  }

  Status run(const KernelContext& ctx) {
    const int n_threads = ctx.pool == nullptr ? 1 : ctx.pool->size();
    plan(n_threads);
    const bool parallel = n_threads > 1 && work_ >= kMinParallelWork;
    int64_t split_items = 0, partial_floats = 0;
    for (Chunk& c : chunks_) {
      c.part = partial_floats / (ldv_ + 2);
      split_items += c.n_split;
      partial_floats += c.n_split * rows(c) * (ldv_ + 2);
    }
    const bool split_k = parallel && static_cast<int64_t>(chunks_.size()) < 2 * n_threads &&
                         split_items > static_cast<int64_t>(chunks_.size()) &&
                         static_cast<size_t>(partial_floats) * sizeof(float) <= kMaxPartialBytes;
    if (!split_k) {
      std::vector<Item> items;
      for (size_t i = 0; i < chunks_.size(); ++i) items.push_back({static_cast<int32_t>(i), -1});
      run_items(ctx, parallel, items, [this](const Item& it) { run_chunk(chunks_[it.chunk]); });
      return Status();
    }
    partials_ = aligned_alloc_bytes(static_cast<size_t>(partial_floats) * sizeof(float));
    if (partials_ == nullptr) {
      return resource_exhausted("{}: {} bytes of split-K partials", op_.describe(),
                                partial_floats * sizeof(float));
    }
    std::vector<Item> items;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      for (int64_t k = 0; k < chunks_[i].n_split; ++k) {
        items.push_back({static_cast<int32_t>(i), chunks_[i].split0 + k});
      }
    }
    run_items(ctx, parallel, items, [this](const Item& it) { run_split_item(it); });
    items.clear();
    for (size_t i = 0; i < chunks_.size(); ++i) items.push_back({static_cast<int32_t>(i), -1});
    run_items(ctx, parallel, items, [this](const Item& it) { reduce_chunk(chunks_[it.chunk]); });
    return Status();
  }

 private:
  struct Item {
    int32_t chunk;
    int64_t split;  // -1: the whole chunk
  };

  int rows_per_kv(const Chunk& c) const { return c.n_tok * group_; }
  int rows(const Chunk& c) const { return c.n_kv * c.n_tok * group_; }
  const Token& token_of(const Chunk& c, int r) const {
    return tokens_[static_cast<size_t>(c.tok0 + (r % rows_per_kv(c)) / group_)];
  }
  int64_t head_of(const Chunk& c, int r) const {
    return (c.kv0 + r / rows_per_kv(c)) * int64_t{group_} + r % group_;
  }

  // Tokens by sequence and position, chunks, and zeros for tokens that see
  // nothing. Decode-sized token groups take several KV heads per chunk (the
  // K/V rows of one position are adjacent in both layouts), as many as
  // leaves two chunks per thread.
  void plan(int n_threads) {
    const int64_t n_tokens = q_.ne[2];
    const int64_t n_seq = op_.src[5].nelements();
    std::vector<std::vector<Token>> by_seq(static_cast<size_t>(n_seq));
    for (int64_t i = 0; i < n_tokens; ++i) {
      const int32_t s = attn_ref::i32_at(op_.src[3], i);
      const attn_ref::KeyRange r = attn_ref::visible_keys(p_, attn_ref::i32_at(op_.src[4], i),
                                                          attn_ref::i32_at(op_.src[5], s));
      if (r.empty()) {
        for (int64_t h = 0; h < n_head_; ++h) {
          std::memset(op_.dst.row<float>(h, i), 0, sizeof(float) * static_cast<size_t>(dv_));
        }
        continue;
      }
      by_seq[static_cast<size_t>(s)].push_back({static_cast<int32_t>(i), r.begin, r.end});
    }
    const int tokens_per_chunk = std::max(1, kRowsPerChunk / group_);
    struct Group {
      int32_t seq, tok0, n_tok;
      int64_t lo, hi;
    };
    std::vector<Group> groups;
    work_ = 0;
    for (int64_t s = 0; s < n_seq; ++s) {
      auto& toks = by_seq[static_cast<size_t>(s)];
      std::stable_sort(toks.begin(), toks.end(), [](const Token& a, const Token& b) {
        return a.e != b.e ? a.e < b.e : a.b < b.b;
      });
      for (size_t t0 = 0; t0 < toks.size(); t0 += tokens_per_chunk) {
        const size_t t1 = std::min(toks.size(), t0 + tokens_per_chunk);
        Group g{static_cast<int32_t>(s), static_cast<int32_t>(tokens_.size()),
                static_cast<int32_t>(t1 - t0), toks[t0].b, toks[t0].e};
        for (size_t t = t0; t < t1; ++t) {
          g.lo = std::min(g.lo, toks[t].b);
          g.hi = std::max(g.hi, toks[t].e);
          tokens_.push_back(toks[t]);
          work_ += static_cast<double>(toks[t].e - toks[t].b) * n_head_;
        }
        groups.push_back(g);
      }
    }
    int64_t kv_per_chunk = n_kv_;
    while (kv_per_chunk > 1 &&
           static_cast<int64_t>(groups.size()) * ((n_kv_ + kv_per_chunk - 1) / kv_per_chunk) <
               2 * n_threads) {
      kv_per_chunk = (kv_per_chunk + 1) / 2;
    }
    for (const Group& g : groups) {
      const int64_t per = g.n_tok * group_ <= kDecodeRows ? kv_per_chunk : 1;
      for (int64_t h = 0; h < n_kv_; h += per) {
        Chunk c{};
        c.seq = g.seq, c.tok0 = g.tok0, c.n_tok = g.n_tok;
        c.kv0 = static_cast<int32_t>(h);
        c.n_kv = static_cast<int32_t>(std::min(per, n_kv_ - h));
        c.lo = g.lo, c.hi = g.hi;
        c.split0 = c.lo / kFlashSplit;
        c.n_split = (c.hi - 1) / kFlashSplit + 1 - c.split0;
        chunks_.push_back(c);
      }
    }
  }

  // Runs `fn` on every item, longest first, handing items out one at a time.
  template <typename Fn>
  void run_items(const KernelContext& ctx, bool parallel, std::vector<Item>& items, Fn fn) {
    auto cost = [this](const Item& it) {
      const Chunk& c = chunks_[it.chunk];
      const int64_t len = it.split < 0 ? c.hi - c.lo : kFlashSplit;
      return static_cast<double>(len) * rows(c);
    };
    if (!parallel || items.size() < 2) {
      for (const Item& it : items) fn(it);
      return;
    }
    std::stable_sort(items.begin(), items.end(),
                     [&](const Item& a, const Item& b) { return cost(a) > cost(b); });
    std::atomic<size_t> next{0};
    ctx.pool->parallel_for(ctx.pool->size(), [&](int, int64_t, int64_t) {
      for (size_t i = next.fetch_add(1); i < items.size(); i = next.fetch_add(1)) fn(items[i]);
    });
  }

  // The chunk's query rows, zero-padded to ld_, into sc.q.
  void load_q(const Chunk& c, Scratch& sc) const {
    for (int r = 0; r < rows(c); ++r) {
      const float* src = q_.row<const float>(head_of(c, r), token_of(c, r).index);
      float* dst = sc.q + r * ld_;
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(d_));
      std::fill(dst + d_, dst + ld_, 0.0f);
    }
  }

  // Row bases (KV head 0) of positions [a, b) of sequence `seq`, at
  // kb[p - ts], vb[p - ts]: through the block table when paged, reading only
  // the entries of blocks that hold one of these positions (all < kv_len).
  void row_bases(int32_t seq, int64_t ts, int64_t a, int64_t b, const char** kb,
                 const char** vb) const {
    const char* k0 = static_cast<const char*>(k_.data);
    const char* v0 = static_cast<const char*>(v_.data);
    if (p_.layout != KvLayout::kPaged) {
      for (int64_t p = a; p < b; ++p) {
        kb[p - ts] = k0 + p * k_.nb[2] + seq * k_.nb[3];
        vb[p - ts] = v0 + p * v_.nb[2] + seq * v_.nb[3];
      }
      return;
    }
    const TensorView& table = op_.src[6];  // [max_blocks, n_seq]
    const int64_t bs = p_.block_size;
    int64_t bi = a / bs, off = a % bs;
    int64_t id = *table.at<int32_t>(bi, seq);
    for (int64_t p = a; p < b; ++p) {
      kb[p - ts] = k0 + off * k_.nb[2] + id * k_.nb[3];
      vb[p - ts] = v0 + off * v_.nb[2] + id * v_.nb[3];
      if (++off == bs && p + 1 < b) {
        off = 0;
        id = *table.at<int32_t>(++bi, seq);
      }
    }
  }

  // Partials (m, l, acc) of split `split` for every row of chunk c. Rows
  // without a visible key in the split come out with m = -inf.
  void compute_split(const Chunk& c, int64_t split, Scratch& sc, float* m, float* l, float* acc,
                     int64_t lda) const {
    const int n_rows = rows(c), per_kv = rows_per_kv(c);
    const int64_t lo = std::max(c.lo, split * kFlashSplit);
    const int64_t hi = std::min(c.hi, (split + 1) * kFlashSplit);
    for (int r = 0; r < n_rows; ++r) {
      m[r] = kNegInf;
      l[r] = 0.0f;
      std::fill(acc + r * lda, acc + r * lda + ldv_, 0.0f);
    }
    for (int64_t ts = lo / kFlashTile * kFlashTile; ts < hi; ts += kFlashTile) {
      // Each row's keys in this tile, relative to ts (the same for every KV head).
      int la = kFlashTile, lb = 0;
      bool uniform = true;
      for (int r = 0; r < per_kv; ++r) {
        const Token& t = token_of(c, r);
        const int64_t b = std::max({t.b, lo, ts}), e = std::min({t.e, hi, ts + kFlashTile});
        if (b < e) {
          sc.lo[r] = static_cast<int>(b - ts);
          sc.hi[r] = static_cast<int>(e - ts);
          la = std::min(la, sc.lo[r]);
          lb = std::max(lb, sc.hi[r]);
        } else {
          sc.lo[r] = sc.hi[r] = 0;
        }
        uniform = uniform && sc.lo[r] == sc.lo[0] && sc.hi[r] == sc.hi[0];
      }
      if (la >= lb) continue;
      row_bases(c.seq, ts, ts + la, ts + lb, sc.kb, sc.vb);
      for (int r = per_kv; r < n_rows; ++r) {
        sc.lo[r] = sc.lo[r % per_kv];
        sc.hi[r] = sc.hi[r % per_kv];
      }
      // The aligned groups of keys a tier may touch around [la, lb).
      const int za = la / kFlashPad * kFlashPad;
      const int zb = std::min<int>(kFlashTile, static_cast<int>(pad_to(lb, kFlashPad)));
      const bool packed = uniform && per_kv <= kPackedRows;
      for (int g = 0; g < c.n_kv; ++g) {
        const int64_t h = c.kv0 + g;
        const int r0 = g * per_kv;
        for (int j = za; j < zb; ++j) {
          const bool in = j >= la && j < lb;
          sc.kp[j] = in ? sc.kb[j] + h * k_.nb[1] : sc.zero_row;
          sc.vp[j] = in ? sc.vb[j] + h * v_.nb[1] : sc.zero_row;
        }
        if (packed) {
          for (int r = r0; r < r0 + per_kv; r += 4) {
            prims_.scores_packed(sc.q + r * ld_, std::min(4, r0 + per_kv - r), ld_, k_.dtype, sc.kp,
                                 d_, la, lb, sc.s + r * kFlashTile, kFlashTile);
          }
        } else {
          std::fill(sc.k + za * ld_, sc.k + la * ld_, 0.0f);
          std::fill(sc.k + lb * ld_, sc.k + zb * ld_, 0.0f);
          prims_.convert_rows(k_.dtype, sc.kp + la, lb - la, d_, sc.k + la * ld_, ld_);
          prims_.convert_rows(v_.dtype, sc.vp + la, lb - la, dv_, sc.v + la * ldv_, ldv_);
          for (int j = la; j < lb; ++j) sc.vp[j] = sc.v + j * ldv_;
          prims_.scores(sc.q + r0 * ld_, per_kv, sc.k, ld_, sc.lo + r0, sc.hi + r0,
                        sc.s + r0 * kFlashTile, kFlashTile);
        }
        for (int r = r0; r < r0 + per_kv; ++r) {
          if (sc.lo[r] >= sc.hi[r]) continue;
          sc.ms[r] = prims_.softmax(sc.s + r * kFlashTile, sc.lo[r], sc.hi[r], score_, &m[r], &l[r],
                                    sc.p + r * kFlashTile);
        }
        // P.V for runs of up to 4 rows with the same keys (the query heads of a token).
        for (int r = r0; r < r0 + per_kv;) {
          int n = 1;
          while (n < 4 && r + n < r0 + per_kv && sc.lo[r + n] == sc.lo[r] &&
                 sc.hi[r + n] == sc.hi[r]) {
            ++n;
          }
          if (sc.lo[r] < sc.hi[r]) {
            prims_.pv(sc.p + r * kFlashTile, kFlashTile, sc.ms + r, n, sc.lo[r], sc.hi[r],
                      acc + r * lda, lda, packed ? v_.dtype : DType::F32, sc.vp,
                      packed ? dv_ : ldv_, ldv_);
          }
          r += n;
        }
      }
    }
  }

  // out = acc / l after the sink joins the denominator.
  void finalize(const Chunk& c, int r, float M, float L, float* A) const {
    const int64_t h = head_of(c, r);
    if (!op_.src[7].empty()) {
      const float sink = attn_ref::flat_at<float>(op_.src[7], h);
      if (sink > M) {
        const float ms = std::exp(M - sink);
        for (int64_t i = 0; i < dv_; ++i) A[i] *= ms;
        L = L * ms + 1.0f;
      } else {
        L += std::exp(sink - M);
      }
    }
    float* out = op_.dst.row<float>(h, token_of(c, r).index);
    for (int64_t i = 0; i < dv_; ++i) out[i] = A[i] / L;
  }

  // Sequential schedule: every split of the chunk, folded as it comes.
  void run_chunk(const Chunk& c) const {
    Scratch& sc = thread_scratch();
    const int n_rows = rows(c);
    sc.reserve(n_rows, ld_, ldv_, std::max(k_.row_bytes(), v_.row_bytes()));
    load_q(c, sc);
    std::fill(sc.has, sc.has + n_rows, false);
    for (int64_t k = c.split0; k < c.split0 + c.n_split; ++k) {
      compute_split(c, k, sc, sc.m, sc.l, sc.acc, ldv_);
      for (int r = 0; r < n_rows; ++r) {
        fold(sc.m[r], sc.l[r], sc.acc + r * ldv_, &sc.has[r], &sc.run_m[r], &sc.run_l[r],
             sc.run_acc + r * ldv_, ldv_);
      }
    }
    for (int r = 0; r < n_rows; ++r) {
      finalize(c, r, sc.run_m[r], sc.run_l[r], sc.run_acc + r * ldv_);
    }
  }

  // Split-K partial entry of (chunk, split index within the chunk, row):
  // acc[ldv_] then m, l.
  float* entry(const Chunk& c, int64_t k, int r) const {
    const int64_t e = c.part + k * rows(c) + r;
    return static_cast<float*>(partials_.get()) + e * (ldv_ + 2);
  }

  void run_split_item(const Item& it) const {
    const Chunk& c = chunks_[it.chunk];
    Scratch& sc = thread_scratch();
    const int n_rows = rows(c);
    sc.reserve(n_rows, ld_, ldv_, std::max(k_.row_bytes(), v_.row_bytes()));
    load_q(c, sc);
    compute_split(c, it.split, sc, sc.m, sc.l, entry(c, it.split - c.split0, 0), ldv_ + 2);
    for (int r = 0; r < n_rows; ++r) {
      float* e = entry(c, it.split - c.split0, r);
      e[ldv_] = sc.m[r];
      e[ldv_ + 1] = sc.l[r];
    }
  }

  void reduce_chunk(const Chunk& c) const {
    Scratch& sc = thread_scratch();
    const int n_rows = rows(c);
    sc.reserve(n_rows, ld_, ldv_, std::max(k_.row_bytes(), v_.row_bytes()));
    for (int r = 0; r < n_rows; ++r) {
      bool has = false;
      float M = kNegInf, L = 0.0f;
      float* A = sc.run_acc + r * ldv_;
      for (int64_t k = 0; k < c.n_split; ++k) {
        const float* e = entry(c, k, r);
        fold(e[ldv_], e[ldv_ + 1], e, &has, &M, &L, A, ldv_);
      }
      finalize(c, r, M, L, A);
    }
  }

  const Op& op_;
  const FlashAttnPrimitives& prims_;
  AttentionParams p_;
  TensorView q_;      // [D, n_head, n_tokens]
  TensorView k_, v_;  // [D | Dv, n_kv, n_ctx | block_size, n_seq | n_blocks]
  int64_t d_, dv_, n_head_, n_kv_;
  int group_;         // query heads per KV head
  int64_t ld_, ldv_;  // padded K / V row lengths in the f32 buffers
  FlashScoreParams score_;
  std::vector<Token> tokens_;  // group by group
  std::vector<Chunk> chunks_;
  double work_ = 0;      // visible (row, key) pairs
  AlignedPtr partials_;  // split-K: [entries][ldv_ + 2]
};

}  // namespace

Status flash_attn_tiled(const Op& op, const KernelContext& ctx, const FlashAttnPrimitives& prims) {
  FOLIO_RETURN_IF_ERROR(attn_ref::check_attention_data(op));
  FlashRunner runner(op, prims);
  return runner.run(ctx);
}

}  // namespace folio::cpu
