// AVX-512 rope (kRope) for the normal and neox modes: the reference's
// arithmetic (backend/cpu/ref/rope.cc), bit for bit, at a fraction of its
// cost.
//
// The reference spends nearly all its time on the angle table: per token,
// n_dims / 2 evaluations of pow, cos and sin in double. Every rope op of a
// forward pass with the same parameters and positions (q and k of a layer,
// and every layer of the same kind) needs the same table, so tables are
// memoised per thread, keyed by *content* (parameters, freq factor values,
// positions): a hit gives exactly the numbers a fresh evaluation would, so
// the memo changes no result. The tables are computed by the same scalar
// double code as the reference.
//
// The rotation runs 8 pairs per step in double, like the reference: x0, x1
// widened, two products and a subtraction (or sum) rounded separately, no
// FMA, then one rounding to float: the reference's result exactly.
// Layout: x F32 [head_dim, n_head, n_tokens, ne3]; pair i rotates (x[i],
// x[i + n_dims/2]) (neox) or (x[2i], x[2i + 1]) (normal); dims >= n_dims
// are copied.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/ref/ref_util.h"
#include "backend/cpu/scalar/parallel.h"

namespace folio::cpu {

namespace {

// One memoised table: cos and sin (times mscale) of every pair of every token
// of one op, [n_tok][half] each.
struct RopeTable {
  RopeParams params;
  std::vector<float> freq_factors;  // empty: none
  std::vector<int32_t> positions;
  std::vector<double> cos_t, sin_t;
};

bool same_params(const RopeParams& a, const RopeParams& b) {
  return a.mode == b.mode && a.n_dims == b.n_dims && a.freq_base == b.freq_base &&
         a.freq_scale == b.freq_scale && a.ext_factor == b.ext_factor &&
         a.attn_factor == b.attn_factor && a.beta_fast == b.beta_fast &&
         a.beta_slow == b.beta_slow && a.n_ctx_orig == b.n_ctx_orig && a.sections == b.sections;
}

// The reference's angle table (ref/rope.cc, single-section modes).
void fill_table(RopeTable& t) {
  const RopeParams& p = t.params;
  const int64_t half = p.n_dims / 2, n_tok = static_cast<int64_t>(t.positions.size());
  float corr[2];
  ref::rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, corr);
  double mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(p.freq_scale));
  t.cos_t.resize(static_cast<size_t>(n_tok * half));
  t.sin_t.resize(static_cast<size_t>(n_tok * half));
  for (int64_t tok = 0; tok < n_tok; ++tok) {
    const double ps = t.positions[static_cast<size_t>(tok)];
    for (int64_t i = 0; i < half; ++i) {
      double theta_extrap =
          ps * std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(i) / p.n_dims);
      if (!t.freq_factors.empty()) theta_extrap /= t.freq_factors[static_cast<size_t>(i)];
      const double theta_interp = static_cast<double>(p.freq_scale) * theta_extrap;
      double theta = theta_interp;
      if (p.ext_factor != 0.0f) {
        const double y = (static_cast<double>(i) - corr[0]) /
                         std::max(0.001, static_cast<double>(corr[1]) - corr[0]);
        const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
        theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
      }
      t.cos_t[static_cast<size_t>(tok * half + i)] = std::cos(theta) * mscale;
      t.sin_t[static_cast<size_t>(tok * half + i)] = std::sin(theta) * mscale;
    }
  }
}

// The table for `op` from the calling thread's memo (most recently used
// first; a few entries: one per rope configuration of a model, e.g. gemma's
// local and global layers).
const RopeTable& table_for(const Op& op) {
  constexpr size_t kEntries = 4;
  thread_local std::vector<std::unique_ptr<RopeTable>> memo;
  const RopeParams& p = op.p<RopeParams>();
  const TensorView& pos = op.src[1];
  const TensorView& ff = op.src[2];
  const int64_t n_tok = op.src[0].ne[2], half = p.n_dims / 2;
  for (size_t e = 0; e < memo.size(); ++e) {
    RopeTable& t = *memo[e];
    if (!same_params(t.params, p) || static_cast<int64_t>(t.positions.size()) != n_tok ||
        t.freq_factors.size() != (ff.empty() ? 0 : static_cast<size_t>(half))) {
      continue;
    }
    bool same = true;
    for (int64_t i = 0; i < n_tok && same; ++i) {
      same = t.positions[static_cast<size_t>(i)] == ref::elem<int32_t>(pos, i);
    }
    for (int64_t i = 0; i < static_cast<int64_t>(t.freq_factors.size()) && same; ++i) {
      // Compared as bits: the memo must never merge tables of different inputs.
      const float f = ref::elem<float>(ff, i);
      same = std::memcmp(&t.freq_factors[static_cast<size_t>(i)], &f, sizeof(float)) == 0;
    }
    if (!same) continue;
    std::rotate(memo.begin(), memo.begin() + static_cast<std::ptrdiff_t>(e),
                memo.begin() + static_cast<std::ptrdiff_t>(e) + 1);
    return *memo.front();
  }
  if (memo.size() < kEntries) memo.push_back(std::make_unique<RopeTable>());
  std::rotate(memo.begin(), memo.end() - 1, memo.end());  // the oldest (or new) entry first
  RopeTable& t = *memo.front();
  t.params = p;
  t.positions.resize(static_cast<size_t>(n_tok));
  for (int64_t i = 0; i < n_tok; ++i)
    t.positions[static_cast<size_t>(i)] = ref::elem<int32_t>(pos, i);
  t.freq_factors.resize(ff.empty() ? 0 : static_cast<size_t>(half));
  for (int64_t i = 0; i < static_cast<int64_t>(t.freq_factors.size()); ++i) {
    t.freq_factors[static_cast<size_t>(i)] = ref::elem<float>(ff, i);
  }
  fill_table(t);
  return t;
}

// out0 = x0 c - x1 s, out1 = x0 s + x1 c in double, rounded once to float.
FOLIO_INLINE_AVX512 void rotate8(__m256 x0f, __m256 x1f, const double* c, const double* s,
                                 __m256* o0, __m256* o1) {
  const __m512d x0 = _mm512_cvtps_pd(x0f), x1 = _mm512_cvtps_pd(x1f);
  const __m512d cv = _mm512_loadu_pd(c), sv = _mm512_loadu_pd(s);
  *o0 = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_mul_pd(x0, cv), _mm512_mul_pd(x1, sv)));
  *o1 = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(x0, sv), _mm512_mul_pd(x1, cv)));
}

// One row (one head of one token): pairs [0, half) with the token's table.
FOLIO_TARGET_AVX512 void rope_row(const float* x, float* d, int64_t head_dim, int64_t n_dims,
                                  bool neox, const double* c, const double* s) {
  const int64_t half = n_dims / 2;
  int64_t i = 0;
  if (neox) {
    for (; i + 8 <= half; i += 8) {
      __m256 o0, o1;
      rotate8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + half), c + i, s + i, &o0, &o1);
      _mm256_storeu_ps(d + i, o0);
      _mm256_storeu_ps(d + i + half, o1);
    }
  } else {
    // 16 floats = 8 adjacent pairs: split into even / odd lanes and back.
    const __m512i even = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i join = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (; i + 8 <= half; i += 8) {
      const __m512 v = _mm512_loadu_ps(x + 2 * i);
      __m256 o0, o1;
      rotate8(_mm512_castps512_ps256(_mm512_permutexvar_ps(even, v)),
              _mm512_castps512_ps256(_mm512_permutexvar_ps(odd, v)), c + i, s + i, &o0, &o1);
      _mm512_storeu_ps(d + 2 * i, _mm512_permutex2var_ps(_mm512_castps256_ps512(o0), join,
                                                         _mm512_castps256_ps512(o1)));
    }
  }
  for (; i < half; ++i) {  // the reference's scalar expression
    const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    const double x0 = x[a], x1 = x[b];
    d[a] = static_cast<float>(x0 * c[i] - x1 * s[i]);
    d[b] = static_cast<float>(x0 * s[i] + x1 * c[i]);
  }
  if (d != x) std::memcpy(d + n_dims, x + n_dims, static_cast<size_t>(head_dim - n_dims) * 4);
}

}  // namespace

bool supports_rope_avx512(const Op& op) {
  const RopeMode mode = op.p<RopeParams>().mode;
  return (mode == RopeMode::kNormal || mode == RopeMode::kNeox) && op.dst.dtype == DType::F32 &&
         (op.src[2].empty() || op.src[2].dtype == DType::F32);
}

Status rope_avx512(const Op& op, const KernelContext& ctx) {
  const RopeParams& p = op.p<RopeParams>();
  const TensorView& x = op.src[0];  // [head_dim, n_head, n_tokens, ne3]
  const TensorView& d = op.dst;     // like x
  const RopeTable& t = table_for(op);
  const int64_t half = p.n_dims / 2, n_head = x.ne[1], n_tok = x.ne[2];
  const bool neox = p.mode == RopeMode::kNeox;
  // Rows (head, token, i3) are independent.
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t h = r % n_head, tok = (r / n_head) % n_tok, i3 = r / (n_head * n_tok);
      const size_t at = static_cast<size_t>(tok * half);
      rope_row(x.row<const float>(h, tok, i3), d.row<float>(h, tok, i3), x.ne[0], p.n_dims, neox,
               t.cos_t.data() + at, t.sin_t.data() + at);
    }
  });
  return Status();
}

}  // namespace folio::cpu
