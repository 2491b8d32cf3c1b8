// AVX-512 depthwise causal convolution for decode: the plain op with one new
// token (kSsmConv, T = 1) and the fused conv update on a state pool
// (kSsmConvUpdate), bit-identical to the references (ref/ssm_conv.cc,
// ref/ssm_conv_update.cc).
//
// Layout: time is the innermost dimension of the taps (per channel a record
// of K-1 taps in the pool, of K inputs in the plain op's x) and of the
// weights (a record of K per channel), while x_new and dst hold channels
// innermost. A block of 16 channels is 16 consecutive records; the kernel
// loads them as `stride` vectors and splits them into one vector per tap
// (lanes = channels) with two-source permutes, so each output keeps the
// reference's order: ((0 + win[0] w[0]) + win[1] w[1]) ... + bias, one mul
// and one add per tap, no FMA, +0.0f when there is no bias. SiLU takes libm's
// exp bits from the vector expf_libm (avx512/simd.h), which calls the
// reference's scalar expf only for the lanes it cannot settle. The fused op then
// interleaves the shifted window (taps 1..K-1) back into records and stores
// them in the destination slot; a block is fully loaded before its slot
// records are written, so identity slots update in place. Channel blocks are
// split across the thread pool; remainder channels (channels % 16) run the
// reference's scalar code. K <= 8; weights, bias and pool slots contiguous.
#include <cmath>
#include <cstdint>

#include "backend/cpu/avx512/recurrent_kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/drivers/parallel.h"
#include "backend/cpu/drivers/ssm_conv_channel.h"
#include "backend/cpu/drivers/state_slots.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

constexpr int kMaxStride = 8;
constexpr int kMaxPairs = kMaxStride / 2;

// Permute tables between 16 records of `stride` floats (held as `stride`
// vectors, record l at floats [l * stride, (l + 1) * stride)) and `stride`
// component vectors (component j, lane l = record l's float j). Each pair of
// vectors (2p, 2p + 1) feeds one two-source permute, blended in by a mask.
struct Tables {
  int stride = 0;
  int pairs = 0;
  int32_t split_idx[kMaxStride][kMaxPairs][16];  // records -> component j
  uint16_t split_mask[kMaxStride][kMaxPairs];
  int32_t join_idx[kMaxStride][kMaxPairs][16];  // components -> record vector o
  uint16_t join_mask[kMaxStride][kMaxPairs];
};

Tables make_tables(int stride) {
  Tables t{};
  t.stride = stride;
  t.pairs = (stride + 1) / 2;
  for (int j = 0; j < stride; ++j) {
    for (int l = 0; l < 16; ++l) {
      const int e = l * stride + j, vec = e / 16, p = vec / 2;
      t.split_idx[j][p][l] = e % 16 + 16 * (vec % 2);
      t.split_mask[j][p] |= static_cast<uint16_t>(1u << l);
    }
  }
  for (int o = 0; o < stride; ++o) {
    for (int m = 0; m < 16; ++m) {
      const int e = 16 * o + m, rec = e / stride, comp = e % stride, p = comp / 2;
      t.join_idx[o][p][m] = rec + 16 * (comp % 2);
      t.join_mask[o][p] |= static_cast<uint16_t>(1u << m);
    }
  }
  return t;
}

// One output vector of a permute table (Tables::split_* or join_*): pair p
// of in[0..S) through idx[p], blended in by mask[p].
template <int S>
FOLIO_INLINE_AVX512 __m512 permute_pairs(const int32_t (&idx)[kMaxPairs][16],
                                         const uint16_t (&mask)[kMaxPairs], const __m512* in) {
  __m512 r = _mm512_permutex2var_ps(in[0], _mm512_loadu_si512(idx[0]), in[S > 1 ? 1 : 0]);
  for (int p = 1; p < (S + 1) / 2; ++p) {
    const __m512 b = 2 * p + 1 < S ? in[2 * p + 1] : in[2 * p];
    const __m512i ip = _mm512_loadu_si512(idx[p]);
    r = _mm512_mask_mov_ps(r, mask[p], _mm512_permutex2var_ps(in[2 * p], ip, b));
  }
  return r;
}

// v[0..S) hold 16 records of S floats (t.stride == S); returns component j.
template <int S>
FOLIO_INLINE_AVX512 __m512 split(const Tables& t, const __m512* v, int j) {
  return permute_pairs<S>(t.split_idx[j], t.split_mask[j], v);
}

// c[0..S) hold the components (t.stride == S); returns record vector o.
template <int S>
FOLIO_INLINE_AVX512 __m512 join(const Tables& t, const __m512* c, int o) {
  return permute_pairs<S>(t.join_idx[o], t.join_mask[o], c);
}

// Stores 16 outputs, SiLU if asked: the reference's x / (1 + exp(-x)) with
// libm's exp bits (expf_libm).
FOLIO_INLINE_AVX512 void store_out(float* dst, __m512 sum, bool act) {
  if (act) {
    const __m512 neg = _mm512_xor_ps(sum, _mm512_set1_ps(-0.0f));
    sum = _mm512_div_ps(sum,
                        _mm512_add_ps(_mm512_set1_ps(1.0f), avx512::expf_libm(neg, ssm_conv_exp)));
  }
  _mm512_storeu_ps(dst, sum);
}

// What both ops share: weights, bias, activation.
struct Conv {
  const TensorView* w;  // [K, channels], records contiguous
  const float* bias;    // [channels] contiguous, or nullptr
  bool act;
  int k;
  Tables wt;  // stride K
};

// The weights of block b split into one vector per tap (lanes = channels),
// and its bias: split where they are used, so a call allocates nothing.
template <int K>
FOLIO_INLINE_AVX512 void load_weights(const Conv& cv, int64_t b, __m512* wv, __m512* bv) {
  __m512 rec[K];
  const float* wp = cv.w->row<const float>(b * 16);
  for (int i = 0; i < K; ++i) rec[i] = _mm512_loadu_ps(wp + 16 * i);
  for (int j = 0; j < K; ++j) wv[j] = split<K>(cv.wt, rec, j);
  *bv = cv.bias != nullptr ? _mm512_loadu_ps(cv.bias + b * 16) : _mm512_setzero_ps();
}

// ((0 + win[0] w[0]) + win[1] w[1]) + ... + bias: the reference's order.
template <int K>
FOLIO_INLINE_AVX512 __m512 dot_window(const __m512* win, const __m512* wv, __m512 bv) {
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < K; ++j) sum = _mm512_add_ps(sum, _mm512_mul_ps(win[j], wv[j]));
  return _mm512_add_ps(sum, bv);
}

// Fused update over channel blocks [b0, b1) of every sequence (one slot
// after the other: the records of a slot are streamed in order). tt: the
// tables of stride K - 1.
template <int K>
FOLIO_TARGET_AVX512 void update_blocks(const Conv& cv, const Tables& tt, const TensorView& x,
                                       const StateSlots& slots, const TensorView& dst, int64_t b0,
                                       int64_t b1) {
  constexpr int kTaps = K - 1;
  __m512 wv[K], bv, rec[kTaps], win[K];
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    const TensorView &from = slots.src(s), &to = slots.dst(s);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * 16;
      load_weights<K>(cv, b, wv, &bv);
      const float* fp = from.row<const float>(c0);
      for (int i = 0; i < kTaps; ++i) rec[i] = _mm512_loadu_ps(fp + 16 * i);
      for (int j = 0; j < kTaps; ++j) win[j] = split<kTaps>(tt, rec, j);
      win[kTaps] = _mm512_loadu_ps(x.at<const float>(c0, s));
      store_out(dst.at<float>(c0, s), dot_window<K>(win, wv, bv), cv.act);
      float* tp = to.row<float>(c0);
      for (int o = 0; o < kTaps; ++o) _mm512_storeu_ps(tp + 16 * o, join<kTaps>(tt, win + 1, o));
    }
  }
}

// Plain op, T = 1: x records of K inputs.
template <int K>
FOLIO_TARGET_AVX512 void plain_blocks(const Conv& cv, const TensorView& x, const TensorView& dst,
                                      int64_t b0, int64_t b1) {
  __m512 wv[K], bv, rec[K], win[K];
  for (int64_t s = 0; s < x.ne[2]; ++s) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * 16;
      load_weights<K>(cv, b, wv, &bv);
      const float* xp = x.row<const float>(c0, s);
      for (int i = 0; i < K; ++i) rec[i] = _mm512_loadu_ps(xp + 16 * i);
      for (int j = 0; j < K; ++j) win[j] = split<K>(cv.wt, rec, j);
      store_out(dst.at<float>(c0, 0, s), dot_window<K>(win, wv, bv), cv.act);
    }
  }
}

// The kernels for one width K, chosen once per call.
struct Width {
  void (*update)(const Conv&, const Tables&, const TensorView&, const StateSlots&,
                 const TensorView&, int64_t, int64_t);
  void (*plain)(const Conv&, const TensorView&, const TensorView&, int64_t, int64_t);
};

template <int K>
constexpr Width width_kernels() {
  return {update_blocks<K>, plain_blocks<K>};
}

// K in [2, kMaxStride].
Width width_of(int k) {
  static constexpr Width kWidths[] = {width_kernels<2>(), width_kernels<3>(), width_kernels<4>(),
                                      width_kernels<5>(), width_kernels<6>(), width_kernels<7>(),
                                      width_kernels<8>()};
  return kWidths[k - 2];
}

float bias_of(const Conv& cv, int64_t c) {
  return cv.bias != nullptr ? cv.bias[c] : 0.0f;
}

// One channel the reference's way (remainder channels): window win[0..K).
float conv_scalar(const Conv& cv, const float* win, int64_t c) {
  return ssm_conv_channel(win, cv.w->row<const float>(c), cv.k, bias_of(cv, c), cv.act);
}

Conv make_conv(const Op& op) {
  Conv cv;
  cv.w = &op.src[1];
  cv.bias = op.src[2].empty() ? nullptr : static_cast<const float*>(op.src[2].data);
  cv.act = op.p<SsmConvParams>().silu;
  cv.k = static_cast<int>(op.src[1].ne[0]);
  cv.wt = make_tables(cv.k);
  return cv;
}

bool common_supported(const Op& op, int64_t record_floats, const TensorView& records) {
  const TensorView &w = op.src[1], &bias = op.src[2];
  return w.ne[0] >= 2 && w.ne[0] <= kMaxStride && w.nb[1] == w.ne[0] * sizeof(float) &&
         (bias.empty() || bias.is_contiguous()) && record_floats <= kMaxStride &&
         records.nb[1] == static_cast<size_t>(record_floats) * sizeof(float);
}

}  // namespace

bool supports_ssm_conv_avx512(const Op& op) {
  const TensorView& x = op.src[0];  // [K, channels, n_seq] for T = 1
  return x.ne[0] == op.src[1].ne[0] && common_supported(op, x.ne[0], x);
}

bool supports_ssm_conv_update_avx512(const Op& op) {
  const TensorView& pool = op.src[3];  // [K - 1, channels, n_slots]
  return common_supported(op, pool.ne[0], pool);
}

Status ssm_conv_avx512(const Op& op, const KernelContext& ctx) {
  const TensorView &x = op.src[0], &dst = op.dst;  // [K, channels, n_seq], [channels, 1, n_seq]
  const Conv cv = make_conv(op);
  const int64_t channels = x.ne[1], n_seq = x.ne[2], n_blocks = channels / 16;
  run_range(
      ctx, n_blocks, ssm_conv_parallel(channels * n_seq, cv.k, cv.act),
      [&, plain = width_of(cv.k).plain](int64_t b0, int64_t b1) { plain(cv, x, dst, b0, b1); });
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t c = n_blocks * 16; c < channels; ++c) {
      *dst.at<float>(c, 0, s) = conv_scalar(cv, x.row<const float>(c, s), c);
    }
  }
  return Status();
}

Status ssm_conv_update_avx512(const Op& op, const KernelContext& ctx) {
  const TensorView &x = op.src[0], &dst = op.dst;  // [channels, n_seq]
  FOLIO_ASSIGN_OR_RETURN(StateSlots slots, StateSlots::prepare(op, 3, 2));
  const Conv cv = make_conv(op);
  const Tables tt = make_tables(cv.k - 1);
  const int64_t channels = x.ne[0], n_seq = x.ne[1], n_blocks = channels / 16;
  run_range(ctx, n_blocks, ssm_conv_parallel(channels * n_seq, cv.k, cv.act),
            [&, update = width_of(cv.k).update](int64_t b0, int64_t b1) {
              update(cv, tt, x, slots, dst, b0, b1);
            });
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t c = n_blocks * 16; c < channels; ++c) {
      *dst.at<float>(c, s) = ssm_conv_update_channel(
          slots.src(s).row<const float>(c), *x.at<const float>(c, s), cv.w->row<const float>(c),
          cv.k, bias_of(cv, c), cv.act, slots.dst(s).row<float>(c));
    }
  }
  return Status();
}

}  // namespace folio::cpu
