// Rotary position embedding reference (ggml's rope definition, forward
// direction), evaluated per element in double.
//
// x F32 [head_dim, n_head, n_tokens, ne3], positions I32 [n_tokens] (or
// [4 * n_tokens] for mrope / imrope: section s of token t at pos[s * n_tokens
// + t]), optional freq factors F32 [n_dims / 2]. Pair i (0 <= i < n_dims / 2)
// rotates
//   normal:              (x[2i], x[2i + 1])
//   neox, mrope, imrope: (x[i],  x[i + n_dims / 2])
// by the angle theta_i; dims >= n_dims are copied unchanged.
//
// Angle of pair i for position p (ggml rope_yarn):
//   theta_extrap = p * freq_base^(-2i / n_dims) / freq_factor[i]
//   theta_interp = freq_scale * theta_extrap
//   ext_factor == 0: theta = theta_interp,  mscale = attn_factor
//   ext_factor != 0: ramp  = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1)
//                    mix   = ramp * ext_factor
//                    theta = theta_interp * (1 - mix) + theta_extrap * mix
//                    mscale = attn_factor * (1 + 0.1 * ln(1 / freq_scale))
//   out0 = x0 * cos(theta) * mscale - x1 * sin(theta) * mscale
//   out1 = x0 * sin(theta) * mscale + x1 * cos(theta) * mscale
// [lo, hi] are ggml's YaRN correction dims (rope_yarn_corr_dims below), computed
// in float like ggml so the floor / ceil boundaries agree with it exactly.
//
// Multi-section modes pick, per pair, which of the 4 positions (t, h, w, e)
// drives it; the frequency index stays the global pair index i. With S =
// sum(sections) and sector = i % S:
//   mrope:  consecutive blocks: sector < s0 -> t, < s0+s1 -> h, < s0+s1+s2 -> w,
//           else e (qwen2-vl).
//   imrope: interleaved: sector % 3 == 0 and sector < 3*s0 -> t; sector % 3 == 1
//           and sector < 3*s1 -> h; sector % 3 == 2 and sector < 3*s2 -> w;
//           otherwise e (qwen3-vl, qwen3.5: t h w t h w ... then the rest).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {
namespace {

// ggml's correction dim: the pair dimension whose wavelength makes n_rot
// rotations over n_ctx_orig positions.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(base));
}

}  // namespace

int rope_section_of(RopeMode mode, const std::array<int, 4>& s, int64_t i) {
  if (mode != RopeMode::kMrope && mode != RopeMode::kImrope) return 0;
  const int64_t s0 = s[0], s1 = s[1], s2 = s[2];
  const int64_t sector = i % (s0 + s1 + s2 + s[3]);
  if (mode == RopeMode::kImrope) {
    if (sector % 3 == 0 && sector < 3 * s0) return 0;
    if (sector % 3 == 1 && sector < 3 * s1) return 1;
    if (sector % 3 == 2 && sector < 3 * s2) return 2;
    return 3;
  }
  if (sector < s0) return 0;
  if (sector < s0 + s1) return 1;
  if (sector < s0 + s1 + s2) return 2;
  return 3;
}

void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast,
                         float beta_slow, float dims[2]) {
  const float start = std::floor(yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
  const float end = std::ceil(yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
  dims[0] = std::max(0.0f, start);
  dims[1] = std::min(static_cast<float>(n_dims - 1), end);
}

double rope_theta(const RopeParams& p, double pos, int64_t i, const float* freq_factor,
                  const float corr[2]) {
  double theta_extrap =
      pos * std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(i) / p.n_dims);
  if (freq_factor != nullptr) theta_extrap /= *freq_factor;
  const double theta_interp = static_cast<double>(p.freq_scale) * theta_extrap;
  if (p.ext_factor == 0.0f) return theta_interp;
  const double y = (static_cast<double>(i) - corr[0]) /
                   std::max(0.001, static_cast<double>(corr[1]) - corr[0]);
  const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
  return theta_interp * (1.0 - mix) + theta_extrap * mix;
}

Status rope(const Op& op, const KernelContext& /*ctx*/) {
  const auto& p = op.p<RopeParams>();
  const TensorView& x = op.src[0];    // [head_dim, n_head, n_tokens, ne3]
  const TensorView& pos = op.src[1];  // I32 [n_tokens] or [4 * n_tokens]
  const TensorView& ff = op.src[2];   // optional F32 [n_dims / 2]
  const TensorView& d = op.dst;       // like x
  const bool multi = p.mode == RopeMode::kMrope || p.mode == RopeMode::kImrope;
  if (multi) {
    const auto& s = p.sections;
    const int64_t total = int64_t{s[0]} + s[1] + s[2] + s[3];  // no int overflow
    if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || total <= 0) {
      return invalid_argument("rope: bad sections [{}, {}, {}, {}] for multi-section mode", s[0],
                              s[1], s[2], s[3]);
    }
  }
  const int64_t half = p.n_dims / 2, n_tok = x.ne[2];
  float corr[2];
  rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, corr);
  double mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(p.freq_scale));

  std::vector<double> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const int sec = multi ? rope_section_of(p.mode, p.sections, i) : 0;
      const double ps = elem<int32_t>(pos, sec * n_tok + t);
      const float f = ff.empty() ? 0.0f : elem<float>(ff, i);
      const double theta = rope_theta(p, ps, i, ff.empty() ? nullptr : &f, corr);
      cos_t[i] = std::cos(theta) * mscale;
      sin_t[i] = std::sin(theta) * mscale;
    }
    // Pair i: offsets (a, b) within the row.
    const bool adjacent = p.mode == RopeMode::kNormal;
    for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
      for (int64_t h = 0; h < x.ne[1]; ++h) {
        const float* xr = x.row<const float>(h, t, i3);
        float* dr = d.row<float>(h, t, i3);
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = adjacent ? 2 * i : i;
          const int64_t b = adjacent ? 2 * i + 1 : i + half;
          const double x0 = xr[a], x1 = xr[b];
          dr[a] = static_cast<float>(x0 * cos_t[i] - x1 * sin_t[i]);
          dr[b] = static_cast<float>(x0 * sin_t[i] + x1 * cos_t[i]);
        }
        for (int64_t j = p.n_dims; j < x.ne[0]; ++j) dr[j] = xr[j];
      }
    }
  }
  return Status();
}

}  // namespace folio::ref
