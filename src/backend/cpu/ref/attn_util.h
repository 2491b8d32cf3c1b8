// Shared pieces of the reference attention kernels (flash_attn.cc, sdpa.cc):
// run-time checks of the data-dependent inputs (sequence ids, K/V lengths,
// block-table entries: validate_op can only check shapes), the visible key
// range of a query token, a K/V row reader for both cache layouts, and the
// (token, head) traversal both kernels run.
//
// K/V layouts (op.h, "Attention inputs"):
//   contiguous  [D, n_kv_head, n_ctx, n_seq]:           row (h, p, s)
//   paged       [D, n_kv_head, block_size, n_blocks]:   row (h, p % block_size,
//               blocks[p / block_size, s])
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernel.h"
#include "backend/op.h"
#include "core/fp16.h"
#include "core/status.h"
#include "quant/quant.h"

namespace folio::attn_ref {

// Element i (flat, ne[0] fastest) of a tensor of plain 4-byte values, honouring strides.
template <typename T>
inline T flat_at(const TensorView& t, int64_t i) {
  const int64_t i0 = i % t.ne[0];
  const int64_t i1 = (i / t.ne[0]) % t.ne[1];
  const int64_t i2 = (i / (t.ne[0] * t.ne[1])) % t.ne[2];
  const int64_t i3 = i / (t.ne[0] * t.ne[1] * t.ne[2]);
  return *t.at<T>(i0, i1, i2, i3);
}

inline int32_t i32_at(const TensorView& t, int64_t i) {
  return flat_at<int32_t>(t, i);
}

// Key positions [begin, end) that a query token at `pos` sees in a sequence
// holding kv_len positions: p < kv_len, p <= pos when causal, pos - p < window
// when window > 0. Empty when end <= begin.
struct KeyRange {
  int64_t begin = 0;
  int64_t end = 0;
  bool empty() const { return end <= begin; }
};

inline KeyRange visible_keys(const AttentionParams& p, int64_t pos, int64_t kv_len) {
  KeyRange r{0, kv_len};
  if (p.causal) r.end = std::min(r.end, pos + 1);
  if (p.window > 0) r.begin = std::max<int64_t>(0, pos - p.window + 1);
  return r;
}

// Positions a sequence can hold in this layout (n_ctx, or max_blocks * block_size).
inline int64_t kv_capacity(const Op& op) {
  const auto& p = op.p<AttentionParams>();
  if (p.layout == KvLayout::kPaged) return op.src[6].ne[0] * static_cast<int64_t>(p.block_size);
  return op.src[1].ne[2];
}

// The checks validate_op cannot do because they read index data: every
// seq_idx in [0, n_seq), every kv_len in [0, capacity], and (paged) every
// block-table entry that covers a position < kv_len names a block in [0,
// n_blocks). Entries past ceil(kv_len / block_size) are padding and ignored.
// Call after validate_op; on error nothing has been written.
inline Status check_attention_data(const Op& op) {
  const auto& p = op.p<AttentionParams>();
  const TensorView &seq_idx = op.src[3], &kv_len = op.src[5], &blocks = op.src[6];
  const int64_t n_seq = kv_len.nelements();
  const int64_t n_tokens = op.src[0].ne[2];
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int32_t s = i32_at(seq_idx, i);
    if (s < 0 || s >= n_seq) {
      return out_of_range("{}: token {} has sequence index {}, n_seq {}", op.describe(), i, s,
                          n_seq);
    }
  }
  const bool paged = p.layout == KvLayout::kPaged;
  if (paged && p.block_size <= 0) {
    return invalid_argument("{}: block size {} must be positive", op.describe(), p.block_size);
  }
  const int64_t capacity = kv_capacity(op);
  const int64_t n_blocks = op.src[1].ne[3];
  for (int64_t s = 0; s < n_seq; ++s) {
    const int32_t len = i32_at(kv_len, s);
    if (len < 0 || len > capacity) {
      return out_of_range("{}: sequence {} has kv_len {}, capacity {}", op.describe(), s, len,
                          capacity);
    }
    if (!paged) continue;
    const int64_t used_blocks = (int64_t{len} + p.block_size - 1) / p.block_size;
    for (int64_t b = 0; b < used_blocks; ++b) {
      const int32_t id = *blocks.at<int32_t>(b, s);
      if (id < 0 || id >= n_blocks) {
        return out_of_range("{}: block table entry [{}, {}] = {} outside [0, {})", op.describe(), b,
                            s, id, n_blocks);
      }
    }
  }
  return Status();
}

// Reads rows of k (src1) or v (src2) by (sequence, kv head, position), in
// either layout, as f32. Positions and block ids must have passed
// check_attention_data.
class KvRows {
 public:
  KvRows(const Op& op, const TensorView& kv)
      : kv_(kv), blocks_(op.src[6]), params_(op.p<AttentionParams>()) {}

  int64_t dim() const { return kv_.ne[0]; }

  // The packed row of (sequence s, kv head h, position p).
  const void* row(int64_t s, int64_t h, int64_t p) const {
    if (params_.layout == KvLayout::kPaged) {
      const int64_t bs = params_.block_size;
      const int32_t block = *blocks_.at<int32_t>(p / bs, s);
      return kv_.row<const void>(h, p % bs, block);
    }
    return kv_.row<const void>(h, p, s);
  }

  // Row (s, h, p) dequantized into out[dim()].
  void read(int64_t s, int64_t h, int64_t p, float* out) const {
    const void* r = row(s, h, p);
    const int64_t n = dim();
    switch (kv_.dtype) {
      case DType::F32:
        std::memcpy(out, r, static_cast<size_t>(n) * sizeof(float));
        break;
      case DType::F16: {
        const uint16_t* h16 = static_cast<const uint16_t*>(r);
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits;
          std::memcpy(&bits, h16 + i, sizeof(bits));
          out[i] = f16_to_f32(bits);
        }
        break;
      }
      default:  // BF16, Q8_0 (validate_op admits f32, f16, bf16 and q8_0)
        quant::dequantize_row_ref(kv_.dtype, r, out, n);
        break;
    }
  }

 private:
  TensorView kv_;      // [Dk or Dv, n_kv_head, n_ctx | block_size, n_seq | n_blocks]
  TensorView blocks_;  // [max_blocks, n_seq] (paged only)
  AttentionParams params_;
};

// One (query token, head) pair that sees at least one key.
struct QueryHead {
  const float* q;   // q row [D]
  float* out;       // dst row [Dv]
  int64_t seq;      // sequence index of the token
  int64_t head;     // query head
  int64_t kv_head;  // KV head it reads (head / (n_head / n_kv_head))
  KeyRange keys;    // visible key positions, non-empty
};

// The traversal both reference kernels share, as a cursor so the arithmetic
// stays in the kernel's own (fp-contract-free) body: every token i
// (ascending), every head h (ascending); next() zeroes the output row of a
// token that sees no key and skips it, and returns false at the end.
// Construct after check_attention_data.
// Also holds what both kernels read besides the traversal.
class QueryHeads {
 public:
  explicit QueryHeads(const Op& op)
      : params(op.p<AttentionParams>()),
        sinks(op.src[7]),
        k_rows(op, op.src[1]),
        v_rows(op, op.src[2]),
        d(op.src[0].ne[0]),
        dv(op.src[2].ne[0]),
        op_(op),
        n_head_(op.src[0].ne[1]),
        n_tokens_(op.src[0].ne[2]),
        group_(n_head_ / op.src[1].ne[1]),
        h_(n_head_) {}

  const AttentionParams& params;
  const TensorView& sinks;  // [n_head] or empty
  const KvRows k_rows, v_rows;
  const int64_t d, dv;  // K and V row lengths

  bool next(QueryHead* qh) {
    if (n_head_ == 0) return false;
    const TensorView& q = op_.src[0];  // [D, n_head, n_tokens]
    const TensorView& dst = op_.dst;   // [Dv, n_head, n_tokens]
    for (;;) {
      if (++h_ >= n_head_) {
        h_ = 0;
        if (++i_ >= n_tokens_) return false;
        seq_ = i32_at(op_.src[3], i_);
        keys_ = visible_keys(op_.p<AttentionParams>(), i32_at(op_.src[4], i_),
                             i32_at(op_.src[5], seq_));
      }
      float* out = dst.row<float>(h_, i_);
      if (keys_.empty()) {
        for (int64_t c = 0; c < dv; ++c) out[c] = 0.0f;
        continue;
      }
      *qh = QueryHead{q.row<const float>(h_, i_), out, seq_, h_, h_ / group_, keys_};
      return true;
    }
  }

 private:
  const Op& op_;
  int64_t n_head_, n_tokens_, group_;  // group_: query heads per KV head
  int64_t h_;                          // current head (n_head_: before the first)
  int64_t i_ = -1;                     // current token
  int64_t seq_ = 0;
  KeyRange keys_;
};

// The reference kernels (registered in register_attention.cc).
Status flash_attn_ref(const Op& op, const KernelContext& ctx);
Status sdpa_ref(const Op& op, const KernelContext& ctx);

}  // namespace folio::attn_ref
