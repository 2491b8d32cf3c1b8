// Tiled flash attention (kFlashAttn) shared by every optimised tier: the
// plan, the block-table reads, the thread split and the split-K reduction
// live here, in portable code; each tier (the scalar tier's
// flash_attn_scalar.cc beside this file; the SIMD tiers' simd/flash_attn.h,
// written once over the traits type) supplies the arithmetic of one KV tile
// (FlashAttnPrimitives).
//
// Work unit: a *chunk* = up to a few query tokens of one sequence x the
// n_head / n_kv_head query heads of one or more KV heads (GQA: each K/V row
// is read and converted once for all the query heads of its group; a decode
// token is a chunk of one token). K/V rows are read through the block table
// (paged) or by position (contiguous) inside the kernel, one tile at a time:
// decode rows straight from the cache, prefill rows through f32 tile
// buffers. No gather, no contiguous copy of the cache.
//
// Canonical order (why paged == contiguous, and any thread count, bit for
// bit): every query row (token, head) is computed by the same sequence of
// operations whatever the layout, block size, thread count or the other
// rows it is batched with:
//   - positions are cut on a fixed grid: splits of kFlashSplit positions,
//     tiles of kFlashTile positions ([t*T, (t+1)*T), intersected with the
//     row's own visible range); a tile may span blocks;
//   - in a tile: raw scores q.k (a fixed per-tier dot-product order, the
//     same from a tile buffer or from packed rows), then softmax: scale,
//     softcap, tile max, rescale factor, p = exp(x - m), l += the tile's sum
//     of p (fixed lane order); then pv: acc = acc * factor + p_j v_j in
//     ascending j. Masked positions are excluded by selection, never by
//     multiplication, and tiles / splits without a visible key are skipped;
//   - split partials (m, l, acc) are folded in ascending split order
//     (fold() in the .cc), then the sink joins and out = acc / l.
// Whether one work item runs all splits of a chunk or the splits run as
// separate items with stored partials is a scheduling choice: the fold is
// the same. So the result of a row depends only on its q, its visible K/V
// rows and its range; layout, batching, chunked prefill and threads do not
// change a bit. (The scalar tier and the reference differ from the SIMD
// tiers, which give the same bytes as each other: they are compared with
// the reference by NMSE.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

inline constexpr int kFlashTile = 64;    // positions per KV tile
inline constexpr int kFlashSplit = 512;  // positions per split-K partition (multiple of the tile)
inline constexpr int kFlashPad = 16;     // f32 row buffers are padded (with zeros) to a multiple

struct FlashScoreParams {
  float scale = 1.0f;
  float softcap = 0.0f;  // 0: off
};

// The per-tier arithmetic. f32 row buffers are ld floats apart, ld a
// multiple of kFlashPad, zero past the head dimension. Keys are indexed in
// the tile (0 <= j < kFlashTile). Two ways to feed a tile:
//   buffered  convert_rows into f32 tile buffers, then scores (any rows,
//             each with its own key range) - prefill;
//   packed    scores_packed straight from the cache rows (converted in
//             registers) for rows that share one key range - decode.
// Both give every score the same bits (the same products, in the same
// order); pv takes V from either. So a row's result never depends on the
// path its chunk took.
struct FlashAttnPrimitives {
  // dst[i * ld + c] = row src[i] converted to f32 (c < d), zero for d <= c < ld.
  // dtype F32, F16 or Q8_0 (d % 32 == 0).
  void (*convert_rows)(DType dtype, const void* const* src, int n, int64_t d, float* dst,
                       int64_t ld);
  // Raw scores s[r * lds + j] = q_r . k_j for the n_rows query rows (q + r * ld)
  // and at least the keys j in [lo[r], hi[r]) (k + j * ld; lo == hi: none).
  // Every key row in the aligned groups of kFlashPad keys around the
  // requested ones holds finite values. Other entries of s are unspecified.
  void (*scores)(const float* q, int n_rows, const float* k, int64_t ld, const int* lo,
                 const int* hi, float* s, int lds);
  // The same for n_rows <= 4 rows that all want keys [jb, je), K row j
  // given packed (dtype, d elements) at k[j]; k[j] is valid for every j in
  // the aligned groups of kFlashPad keys around [jb, je) (a zero row outside
  // [jb, je)).
  void (*scores_packed)(const float* q, int n_rows, int64_t ld, DType dtype, const void* const* k,
                        int64_t d, int jb, int je, float* s, int lds);
  // One tile of the online softmax for one row, keys j in [jb, je) (jb < je):
  // x_j = s[j] * scale (softcapped), m' = max(m, max x_j); l *= exp(m - m')
  // when m' > m and m is finite; p[j] = exp(x_j - m'), l += sum p_j (fixed
  // order), m = m'. Returns the factor acc must be scaled by (1 if none).
  float (*softmax)(const float* s, int jb, int je, const FlashScoreParams& params, float* m,
                   float* l, float* p);
  // For n_rows <= 4 rows sharing keys [jb, je): acc_r = acc_r * ms[r] +
  // sum_j p_r[j] v_j, j ascending (p_r = p + r * ldp, acc_r = acc + r * lda,
  // ldv floats each). V row j is packed (dtype, dv elements) at v[j]; an f32
  // tile buffer is passed as F32 rows.
  void (*pv)(const float* p, int ldp, const float* ms, int n_rows, int jb, int je, float* acc,
             int64_t lda, DType dtype, const void* const* v, int64_t dv, int64_t ldv);
};

// Pieces of the softmax primitive every tier shares. flash_logits: the
// logits t_j = s_j * scale (soft-capped: cap * tanh(t / cap)) of keys
// [jb, je) into pr[j], returning their maximum (-inf for none).
inline float flash_logits(const float* s, int jb, int je, const FlashScoreParams& p, float* pr) {
  float tmax = -std::numeric_limits<float>::infinity();
  for (int j = jb; j < je; ++j) {
    float t = s[j] * p.scale;
    if (p.softcap > 0.0f) t = p.softcap * std::tanh(t / p.softcap);
    pr[j] = t;
    tmax = std::max(tmax, t);
  }
  return tmax;
}

// flash_raise_max: the online-softmax step for a tile whose maximum logit is
// tmax. When tmax exceeds the running maximum m, m becomes tmax and the
// running sum l is rescaled by ms = exp(m_old - tmax) (the tier's scalar
// exp; skipped while m is -inf: nothing is accumulated yet). Returns ms, 1
// when m stays.
template <typename Exp>
inline float flash_raise_max(float tmax, float& m, float& l, Exp exp) {
  float ms = 1.0f;
  if (tmax > m) {
    if (m != -std::numeric_limits<float>::infinity()) {
      ms = exp(m - tmax);
      l *= ms;
    }
    m = tmax;
  }
  return ms;
}

// Runs kFlashAttn with the given tier primitives (checks the index data first).
Status flash_attn_tiled(const Op& op, const KernelContext& ctx, const FlashAttnPrimitives& prims);

// The portable tier (drivers/flash_attn_scalar.cc).
Status flash_attn_scalar(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu

// In the scalar tier's flash_attn_scalar.cc (namespace folio::cpu), after
// its primitives convert_rows_<isa>, scores_<isa>, scores_packed_<isa>,
// softmax_<isa> and pv_<isa>: defines the tier's kernel flash_attn_<isa>
// over them. (The SIMD tiers' kernel is simd::flash_attn<S>.)
#define FOLIO_FLASH_ATTN_KERNEL(isa)                                                              \
  Status flash_attn_##isa(const Op& op, const KernelContext& ctx) {                               \
    static constexpr FlashAttnPrimitives kPrims = {convert_rows_##isa, scores_##isa,              \
                                                   scores_packed_##isa, softmax_##isa, pv_##isa}; \
    return flash_attn_tiled(op, ctx, kPrims);                                                     \
  }
