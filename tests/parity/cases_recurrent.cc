// Parity cases: recurrent ops (depthwise causal conv, gated DeltaNet).
//
// ssm_conv: widths 3 and 4, 256 and 3328 channels (Qwen3-Next conv dims are
// of this order), 1 and 4 sequences, with and without bias / SiLU, decode
// (T = 1) and short prefill. gated_delta_net: S_k = S_v in {64, 128}, fewer
// key heads than value heads under both head maps, T in {1, 7}, 1 and 3
// sequences, state updated in place (dst2 aliasing src5) with an equivalent
// that writes the state to a separate tensor, bit for bit.
#include <cmath>

#include <fmt/format.h>

#include "parity/harness.h"

namespace folio::parity {
namespace {

std::unique_ptr<OpCase> ssm_conv_case(int width, int channels, int n_seq, int n_t, bool bias,
                                      bool silu) {
  auto c =
      std::make_unique<OpCase>(fmt::format("ssm_conv k{} c{} ns{} t{}{}{}", width, channels, n_seq,
                                           n_t, bias ? " bias" : "", silu ? " silu" : ""));
  Op& op = c->op;
  op.kind = OpKind::kSsmConv;
  op.src[0] = c->alloc(DType::F32, {width - 1 + n_t, channels, n_seq});
  op.src[1] = c->alloc(DType::F32, {width, channels});
  c->fill_uniform(op.src[0], -2.0f, 2.0f);
  c->fill_uniform(op.src[1]);
  if (bias) {
    op.src[2] = c->alloc(DType::F32, {channels});
    c->fill_uniform(op.src[2], -0.5f, 0.5f);
  }
  op.dst = c->alloc(DType::F32, {channels, n_t, n_seq});
  op.params = SsmConvParams{silu};
  c->max_nmse = 1e-10;  // K multiply-adds per output: only the order may differ
  c->flops = 2.0 * width * channels * n_t * n_seq;
  c->bytes = static_cast<double>(op.src[0].nbytes_contiguous() + op.src[1].nbytes_contiguous() +
                                 op.dst.nbytes_contiguous());
  return c;
}

std::unique_ptr<OpCase> gdn_case(int s_dim, int h_k, int h_v, int n_t, int n_seq, HeadMap map,
                                 bool l2_norm = true) {
  auto c = std::make_unique<OpCase>(
      fmt::format("gated_delta_net s{} hk{} hv{} t{} ns{} {}{} in-place", s_dim, h_k, h_v, n_t,
                  n_seq, map == HeadMap::kDiv ? "div" : "mod", l2_norm ? "" : " no-norm"));
  Op& op = c->op;
  op.kind = OpKind::kGatedDeltaNet;
  TensorView q = c->alloc(DType::F32, {s_dim, h_k, n_t, n_seq});
  TensorView k = c->alloc(DType::F32, {s_dim, h_k, n_t, n_seq});
  TensorView v = c->alloc(DType::F32, {s_dim, h_v, n_t, n_seq});
  TensorView g = c->alloc(DType::F32, {h_v, n_t, n_seq});
  TensorView beta = c->alloc(DType::F32, {h_v, n_t, n_seq});
  TensorView state = c->alloc(DType::F32, {s_dim, s_dim, h_v, n_seq});
  const float qk_range = l2_norm ? 1.0f : 0.2f;  // unnormalised: keep |k| moderate
  c->fill_uniform(q, -qk_range, qk_range);
  c->fill_uniform(k, -qk_range, qk_range);
  c->fill_uniform(v);
  c->fill_uniform(g, -1.0f, -0.01f);    // log decay: exp(g) in (0.37, 0.99)
  c->fill_uniform(beta, 0.05f, 0.95f);  // already through a sigmoid
  c->fill_uniform(state, -0.5f, 0.5f);
  op.src = {q, k, v, g, beta, state, TensorView{}, TensorView{}};
  op.dst = c->alloc(DType::F32, {s_dim, h_v, n_t, n_seq});
  op.dst2 = state;  // in place
  GatedDeltaNetParams p;
  p.scale = 1.0f / std::sqrt(static_cast<float>(s_dim));
  p.l2_norm_qk = l2_norm;
  p.head_map = map;
  op.params = p;
  c->in_place = true;

  Op separate = op;
  separate.dst2 = c->alloc(DType::F32, {s_dim, s_dim, h_v, n_seq});
  c->equivalents.push_back({"state to a separate tensor", separate, true});

  // Per token and value head: decay, k-dot, update, q-dot over S_v x S_k.
  const double sq = static_cast<double>(s_dim) * s_dim;
  c->flops = 7.0 * sq * h_v * n_t * n_seq;
  c->bytes = 2.0 * static_cast<double>(state.nbytes_contiguous()) +
             static_cast<double>(q.nbytes_contiguous() * 2 + v.nbytes_contiguous() * 2);
  return c;
}

}  // namespace

void add_recurrent_cases(CaseList& cases) {
  // ssm_conv: widths x channels x sequences; bias / SiLU / T vary along.
  int variant = 0;
  for (int width : {3, 4}) {
    for (int channels : {256, 3328}) {
      for (int n_seq : {1, 4}) {
        const bool bias = variant % 2 == 0, silu = (variant / 2) % 2 == 0;
        const int n_t = variant % 3 == 0 ? 1 : 5;
        cases.push_back(ssm_conv_case(width, channels, n_seq, n_t, bias, silu));
        ++variant;
      }
    }
  }
  // gated_delta_net: state sizes x head maps x T x sequences.
  for (int s_dim : {64, 128}) {
    for (HeadMap map : {HeadMap::kDiv, HeadMap::kMod}) {
      for (int n_t : {1, 7}) {
        for (int n_seq : {1, 3}) cases.push_back(gdn_case(s_dim, 2, 4, n_t, n_seq, map));
      }
    }
  }
  cases.push_back(gdn_case(64, 1, 3, 4, 2, HeadMap::kMod, /*l2_norm=*/false));
  cases.push_back(gdn_case(64, 2, 2, 3, 1, HeadMap::kDiv));  // H_k == H_v
}

}  // namespace folio::parity
