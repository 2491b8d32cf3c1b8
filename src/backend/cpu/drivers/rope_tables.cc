#include "backend/cpu/drivers/rope_tables.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu/ref/ref_util.h"
#include "backend/cpu/drivers/parallel.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {

namespace {

// One memoised table: cos and sin (times mscale) of every pair of every token
// of one op, [n_tok][half] each.
struct RopeTable {
  RopeParams params;
  std::vector<float> freq_factors;  // empty: none
  std::vector<int32_t> positions;   // [n_tok], or [4 * n_tok]: the sections of a multi mode
  std::vector<double> cos_t, sin_t;
};

bool multi_section(RopeMode mode) {
  return mode == RopeMode::kMrope || mode == RopeMode::kImrope;
}

bool same_params(const RopeParams& a, const RopeParams& b) {
  return a.mode == b.mode && a.n_dims == b.n_dims && a.freq_base == b.freq_base &&
         a.freq_scale == b.freq_scale && a.ext_factor == b.ext_factor &&
         a.attn_factor == b.attn_factor && a.beta_fast == b.beta_fast &&
         a.beta_slow == b.beta_slow && a.n_ctx_orig == b.n_ctx_orig && a.sections == b.sections;
}

// The reference's angle table (ref/rope.cc): pair i of token tok at the
// position of its section (section 0 but in the multi-section modes).
void fill_table(RopeTable& t) {
  const RopeParams& p = t.params;
  const int64_t half = p.n_dims / 2;
  const int64_t n_tok = static_cast<int64_t>(t.positions.size()) / (multi_section(p.mode) ? 4 : 1);
  float corr[2];
  ref::rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, corr);
  double mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(p.freq_scale));
  t.cos_t.resize(static_cast<size_t>(n_tok * half));
  t.sin_t.resize(static_cast<size_t>(n_tok * half));
  for (int64_t tok = 0; tok < n_tok; ++tok) {
    for (int64_t i = 0; i < half; ++i) {
      const int64_t sec = ref::rope_section_of(p.mode, p.sections, i);
      const double ps = t.positions[static_cast<size_t>(sec * n_tok + tok)];
      const float* f =
          t.freq_factors.empty() ? nullptr : &t.freq_factors[static_cast<size_t>(i)];
      const double theta = ref::rope_theta(p, ps, i, f, corr);
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
  const int64_t half = p.n_dims / 2;
  const int64_t n_pos = op.src[0].ne[2] * (multi_section(p.mode) ? 4 : 1);
  for (size_t e = 0; e < memo.size(); ++e) {
    RopeTable& t = *memo[e];
    if (!same_params(t.params, p) || static_cast<int64_t>(t.positions.size()) != n_pos ||
        t.freq_factors.size() != (ff.empty() ? 0 : static_cast<size_t>(half))) {
      continue;
    }
    bool same = true;
    for (int64_t i = 0; i < n_pos && same; ++i) {
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
  t.positions.resize(static_cast<size_t>(n_pos));
  for (int64_t i = 0; i < n_pos; ++i)
    t.positions[static_cast<size_t>(i)] = ref::elem<int32_t>(pos, i);
  t.freq_factors.resize(ff.empty() ? 0 : static_cast<size_t>(half));
  for (int64_t i = 0; i < static_cast<int64_t>(t.freq_factors.size()); ++i) {
    t.freq_factors[static_cast<size_t>(i)] = ref::elem<float>(ff, i);
  }
  fill_table(t);
  return t;
}

// One row (one head of one token): pairs [0, half) with the token's table.
void rope_row(const float* x, float* d, int64_t head_dim, int64_t n_dims, bool neox,
              const double* c, const double* s, RopePairsFn pairs) {
  const int64_t half = n_dims / 2;
  int64_t i = pairs != nullptr ? pairs(x, d, half, neox, c, s) : 0;
  for (; i < half; ++i) {  // the reference's scalar expression
    const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    const double x0 = x[a], x1 = x[b];
    d[a] = static_cast<float>(x0 * c[i] - x1 * s[i]);
    d[b] = static_cast<float>(x0 * s[i] + x1 * c[i]);
  }
  if (d != x) std::memcpy(d + n_dims, x + n_dims, static_cast<size_t>(head_dim - n_dims) * 4);
}

}  // namespace

bool supports_rope_tables(const Op& op) {
  const RopeParams& p = op.p<RopeParams>();
  if (multi_section(p.mode)) {  // invalid sections stay with the reference, which refuses them
    const auto& s = p.sections;
    if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || int64_t{s[0]} + s[1] + s[2] + s[3] <= 0) {
      return false;
    }
  }
  return op.dst.dtype == DType::F32 && (op.src[2].empty() || op.src[2].dtype == DType::F32);
}

Status rope_tables(const Op& op, const KernelContext& ctx, RopePairsFn pairs) {
  const RopeParams& p = op.p<RopeParams>();
  const TensorView& x = op.src[0];  // [head_dim, n_head, n_tokens, ne3]
  const TensorView& d = op.dst;     // like x
  const RopeTable& t = table_for(op);
  const int64_t half = p.n_dims / 2, n_head = x.ne[1], n_tok = x.ne[2];
  const bool neox = p.mode != RopeMode::kNormal;  // the multi-section modes pair as neox
  // Rows (head, token, i3) are independent.
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t h = r % n_head, tok = (r / n_head) % n_tok, i3 = r / (n_head * n_tok);
      const size_t at = static_cast<size_t>(tok * half);
      rope_row(x.row<const float>(h, tok, i3), d.row<float>(h, tok, i3), x.ne[0], p.n_dims, neox,
               t.cos_t.data() + at, t.sin_t.data() + at, pairs);
    }
  });
  return Status();
}

Status rope_tables_scalar(const Op& op, const KernelContext& ctx) {
  return rope_tables(op, ctx, nullptr);
}

}  // namespace folio::cpu
