// Parity cases: recurrent ops (depthwise causal conv, gated DeltaNet).
//
// ssm_conv: widths 3 and 4, 256 and 3328 channels (Qwen3-Next conv dims are
// of this order), 1 and 4 sequences, with and without bias / SiLU, decode
// (T = 1) and short prefill; then longer prefills (T 8 .. 64, widths 2 .. 8,
// channel counts with remainders). gated_delta_net: S_k = S_v in {64, 128}, fewer
// key heads than value heads under both head maps, T in {1, 7}, 1 and 3
// sequences, state updated in place (dst2 aliasing src5) with an equivalent
// that writes the state to a separate tensor, bit for bit; then long
// sequences (T 63 .. 1000), where the chunked kernels take over, within
// cpu::kGdnChunkMaxNmse of the reference; perf-only 2048-token prefills
// (chunked vs token by token). ssm_scan (Mamba-2): head and group shapes,
// decode and prefill, in place and to a separate state, bit for bit.
#include <cmath>

#include <fmt/format.h>

#include "backend/cpu/drivers/gdn_chunked.h"
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

// One gated_delta_net case; defaults are the short-sequence cases' inputs.
struct GdnSpec {
  int s_dim = 64, h_k = 2, h_v = 4, n_t = 1, n_seq = 1;
  HeadMap map = HeadMap::kDiv;
  bool l2_norm = true;
  bool allow_chunked = true;
  float g_lo = -1.0f, g_hi = -0.01f;  // log decay: exp(g) in (0.37, 0.99)
  float beta_lo = 0.05f;              // beta in [beta_lo, 0.95)
  float k_shared = 0.0f;              // k = k_shared * (one vector per key head) + rest * noise
  const char* tag = "";               // extra name part
};

std::unique_ptr<OpCase> gdn_case(const GdnSpec& sp) {
  const int s_dim = sp.s_dim, h_k = sp.h_k, h_v = sp.h_v, n_t = sp.n_t, n_seq = sp.n_seq;
  auto c = std::make_unique<OpCase>(
      fmt::format("gated_delta_net s{} hk{} hv{} t{} ns{} {}{}{}{} in-place", s_dim, h_k, h_v, n_t,
                  n_seq, sp.map == HeadMap::kDiv ? "div" : "mod", sp.l2_norm ? "" : " no-norm",
                  sp.allow_chunked ? "" : " recurrent-only", sp.tag));
  Op& op = c->op;
  op.kind = OpKind::kGatedDeltaNet;
  TensorView q = c->alloc(DType::F32, {s_dim, h_k, n_t, n_seq});
  TensorView k = c->alloc(DType::F32, {s_dim, h_k, n_t, n_seq});
  TensorView v = c->alloc(DType::F32, {s_dim, h_v, n_t, n_seq});
  TensorView g = c->alloc(DType::F32, {h_v, n_t, n_seq});
  TensorView beta = c->alloc(DType::F32, {h_v, n_t, n_seq});
  TensorView state = c->alloc(DType::F32, {s_dim, s_dim, h_v, n_seq});
  const float qk_range = sp.l2_norm ? 1.0f : 0.2f;  // unnormalised: keep |k| moderate
  c->fill_uniform(q, -qk_range, qk_range);
  c->fill_uniform(k, -qk_range, qk_range);
  if (sp.k_shared > 0) {  // correlated keys: a worse-conditioned intra-chunk system
    std::uniform_real_distribution<float> dist(-qk_range, qk_range);
    std::vector<float> common(static_cast<size_t>(s_dim * h_k));
    for (float& x : common) x = dist(c->rng());
    float* kp = static_cast<float*>(k.data);
    for (int64_t i = 0; i < k.nelements(); ++i) {
      kp[i] = sp.k_shared * common[static_cast<size_t>(i % (s_dim * h_k))] +
              (1.0f - sp.k_shared) * kp[i];
    }
  }
  c->fill_uniform(v);
  c->fill_uniform(g, sp.g_lo, sp.g_hi);
  c->fill_uniform(beta, sp.beta_lo, 0.95f);  // already through a sigmoid
  c->fill_uniform(state, -0.5f, 0.5f);
  op.src = {q, k, v, g, beta, state, TensorView{}, TensorView{}};
  op.dst = c->alloc(DType::F32, {s_dim, h_v, n_t, n_seq});
  op.dst2 = state;  // in place
  GatedDeltaNetParams p;
  p.scale = 1.0f / std::sqrt(static_cast<float>(s_dim));
  p.l2_norm_qk = sp.l2_norm;
  p.head_map = sp.map;
  p.allow_chunked = sp.allow_chunked;
  op.params = p;
  c->in_place = true;
  // Token-by-token kernels are bit-identical to the reference; the chunked
  // form (T >= 64) stays within its stated bound.
  c->max_nmse = cpu::kGdnChunkMaxNmse;

  Op separate = op;
  separate.dst2 = c->alloc(DType::F32, {s_dim, s_dim, h_v, n_seq});
  c->equivalents.push_back({"state to a separate tensor", separate, true});

  // Per token and value head: decay, k-dot, update, q-dot over S_v x S_k
  // (the token-by-token form's count, also for the chunked kernels).
  const double sq = static_cast<double>(s_dim) * s_dim;
  c->flops = 7.0 * sq * h_v * n_t * n_seq;
  c->bytes = 2.0 * static_cast<double>(state.nbytes_contiguous()) +
             static_cast<double>(q.nbytes_contiguous() * 2 + v.nbytes_contiguous() * 2);
  c->tokens = static_cast<double>(n_t) * n_seq;
  return c;
}


// One ssm_scan case (Mamba-2): P rows of N state values per head, H heads in
// G groups. x, B, C are views of one [P H + 2 N G, T, n_seq] conv output as
// in the model; dt spans softplus's linear branch (> 20) too.
std::unique_ptr<OpCase> ssm_scan_case(int p_dim, int n_state, int n_head, int n_group, int n_t,
                                      int n_seq, bool in_place) {
  auto c = std::make_unique<OpCase>(fmt::format("ssm_scan p{} n{} h{} g{} t{} ns{}{}", p_dim,
                                                n_state, n_head, n_group, n_t, n_seq,
                                                in_place ? " in-place" : ""));
  Op& op = c->op;
  op.kind = OpKind::kSsmScan;
  const int64_t width = int64_t{p_dim} * n_head + 2 * int64_t{n_state} * n_group;
  const TensorView xbc = c->alloc(DType::F32, {width, n_t, n_seq});
  c->fill_uniform(xbc, -1.0f, 1.0f);
  const size_t f = sizeof(float), row = static_cast<size_t>(width) * f;
  auto view = [&](int64_t off, int64_t ne0, int64_t ne1) {
    TensorView v = xbc;
    v.data = static_cast<char*>(xbc.data) + off * f;
    v.ne = {ne0, ne1, n_t, n_seq};
    v.nb = {f, ne0 * f, row, row * n_t};
    return v;
  };
  const TensorView x = view(0, p_dim, n_head);
  const TensorView b = view(int64_t{p_dim} * n_head, n_state, n_group);
  const TensorView cc = view(int64_t{p_dim} * n_head + int64_t{n_state} * n_group, n_state, n_group);
  const TensorView dt = c->alloc(DType::F32, {n_head, n_t, n_seq});
  c->fill_uniform(dt, -4.0f, 22.0f);
  const TensorView a = c->alloc(DType::F32, {1, n_head});
  c->fill_uniform(a, -2.0f, -0.01f);  // -exp(A_log)
  const TensorView state = c->alloc(DType::F32, {n_state, p_dim, n_head, n_seq});
  c->fill_uniform(state, -0.5f, 0.5f);
  op.src = {x, dt, a, b, cc, state, TensorView{}, TensorView{}};
  op.dst = c->alloc(DType::F32, {p_dim, n_head, n_t, n_seq});
  op.dst2 = in_place ? state : c->alloc(DType::F32, {n_state, p_dim, n_head, n_seq});
  c->in_place = in_place;
  c->exact = true;  // every CPU kernel: the reference's operations in its order
  c->exact_on_host_only = true;  // devices: their own exp and log
  c->max_nmse = 1e-10;
  if (in_place) {
    Op separate = op;
    separate.dst2 = c->alloc(DType::F32, {n_state, p_dim, n_head, n_seq});
    c->equivalents.push_back({"state to a separate tensor", separate, true});
  }
  const double cells = static_cast<double>(p_dim) * n_state * n_head * n_t * n_seq;
  c->flops = 5.0 * cells;
  c->bytes = 2.0 * static_cast<double>(state.nbytes_contiguous()) +
             static_cast<double>(xbc.nbytes_contiguous() + op.dst.nbytes_contiguous());
  c->tokens = static_cast<double>(n_t) * n_seq;
  return c;
}

}  // namespace

void add_recurrent_cases(CaseList& cases, bool perf) {
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
  // Prefill: whole 8-token tiles and a remainder (T = 19, 64), channels
  // with a remainder past the 8- and 16-channel SIMD blocks (259), width 8
  // (the widest window the SIMD kernels take, reading 7 steps past a tile).
  cases.push_back(ssm_conv_case(4, 259, 2, 19, true, true));
  cases.push_back(ssm_conv_case(4, 1024, 1, 64, false, true));
  cases.push_back(ssm_conv_case(8, 264, 1, 21, true, false));
  cases.push_back(ssm_conv_case(2, 24, 3, 8, false, false));
  // gated_delta_net: state sizes x head maps x T x sequences.
  for (int s_dim : {64, 128}) {
    for (HeadMap map : {HeadMap::kDiv, HeadMap::kMod}) {
      for (int n_t : {1, 7}) {
        for (int n_seq : {1, 3}) cases.push_back(gdn_case({s_dim, 2, 4, n_t, n_seq, map}));
      }
    }
  }
  // {S, H_k, H_v, T, n_seq, map, l2_norm, allow_chunked, g_lo, g_hi, beta_lo, k_shared, tag}
  const GdnSpec more[] = {
      {64, 1, 3, 4, 2, HeadMap::kMod, false},
      {64, 2, 2, 3, 1, HeadMap::kDiv},  // H_k == H_v
      // Long sequences: the chunked kernels (T >= 64) against the token-by-
      // token reference (short ones above: the bit-identical kernels).
      {128, 1, 2, 1000, 1, HeadMap::kMod},
      {64, 2, 4, 1000, 3, HeadMap::kDiv},
      {128, 2, 4, 200, 1, HeadMap::kDiv, true, true, -8.0f, -0.001f, 0.05f, 0.0f, " strong-decay"},
      {128, 2, 2, 500, 1, HeadMap::kDiv, true, true, -0.02f, 0.0f, 0.05f, 0.0f, " weak-decay"},
      {128, 2, 4, 300, 1, HeadMap::kMod, true, true, -0.05f, 0.0f, 0.9f, 0.9f, " correlated-k"},
      {64, 1, 2, 200, 2, HeadMap::kDiv, false},
      {128, 2, 4, 130, 2, HeadMap::kDiv, true, false},  // the SIMD token-by-token kernels at long T
      // Head dims off the usual powers of two (rows not a whole number of
      // 16-byte groups: scalar loads and padded lanes in device kernels),
      // and S = 256.
      {100, 2, 4, 3, 2, HeadMap::kDiv},
      {30, 1, 2, 5, 1, HeadMap::kMod},
      {256, 1, 2, 4, 1, HeadMap::kMod},
  };
  for (const GdnSpec& sp : more) cases.push_back(gdn_case(sp));
  // Chunk edges (63, 64, 65) and several chunks with a partial last one.
  for (int s_dim : {64, 128}) {
    for (int n_t : {63, 64, 65, 300}) {
      const HeadMap map = (n_t + s_dim / 64) % 2 == 0 ? HeadMap::kDiv : HeadMap::kMod;
      cases.push_back(gdn_case({s_dim, 2, 4, n_t, 2, map}));
    }
  }
  // ssm_scan: Granite-4.0-H-like heads (P 64, N 128, 1 group), several
  // groups, P with a partial group of 16-row blocks (48, 80), decode and
  // prefill.
  // {P, N, H, G, T, n_seq, in_place}
  const struct {
    int p, n, h, g, t, ns;
    bool in_place;
  } scans[] = {
      {64, 128, 4, 1, 1, 1, true},  {64, 128, 4, 1, 9, 2, true}, {64, 16, 8, 2, 1, 3, true},
      {32, 64, 6, 3, 33, 1, false}, {48, 8, 2, 1, 5, 2, true},   {80, 32, 4, 4, 17, 1, true},
      {16, 128, 2, 2, 130, 1, true}, {12, 16, 2, 1, 3, 1, true},  // P % 16 != 0: reference only
  };
  for (const auto& sc : scans) {
    cases.push_back(ssm_scan_case(sc.p, sc.n, sc.h, sc.g, sc.t, sc.ns, sc.in_place));
  }
  // A 2048-token prefill with 16 heads of 128 (Qwen3.5-like), chunked and
  // token by token: perf mode only (the reference takes seconds, the inputs
  // 50 MB). Not restored between runs: the state drifts from run to run,
  // which leaves the work the same and keeps the copy out of the timing.
  if (!perf) return;
  for (bool chunked : {true, false}) {
    auto c = gdn_case({.s_dim = 128, .h_k = 16, .h_v = 16, .n_t = 2048, .allow_chunked = chunked});
    c->perf_only = true;
    c->in_place = false;
    cases.push_back(std::move(c));
  }
}

}  // namespace folio::parity
