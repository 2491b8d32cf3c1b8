// Parity cases: the device fusions (kMulMatGlu, kRopeSetRows; see
// mul_mat_glu_case, rope_set_rows_case) and
// the fused recurrent-state decode ops (kSsmConvUpdate,
// kGatedDeltaNetUpdate, kSsmScanUpdate). Every CPU kernel variant must match
// the reference bit for bit (outputs and the whole state pool, which is the
// op's dst2), device kernels within an NMSE of 1e-10 (their exp is not the
// host's), and on every backend the fused op must equal, exactly, the
// unfused path built from plain ops:
//   conv: get_rows gathers each sequence's taps (one row of K-1 taps per
//         channel) and its new input into a [K, channels, n_seq] window
//         tensor, ssm_conv runs on it, set_rows scatters the shifted taps
//         (window[1..K-1], packed by an identity get_rows) to the
//         destination slots;
//   GDN:  get_rows gathers whole slots (one flattened row each), the plain
//         gated_delta_net updates them in place, set_rows scatters them back;
//   scan: likewise with the plain ssm_scan (Mamba-2) at T = 1 (the Vulkan
//         kernel declines explicit destination slots, as for GDN).
// Gather-all-then-scatter-all is exactly the "read the old state" semantics
// that the fused ops promise. Slot ids are shuffled and mix identity
// sequences (reading their own slot in place) with sequences that read
// another slot, often one that a different sequence writes in the same op.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "parity/harness.h"

namespace folio::parity {
namespace {

// A strided 2-D F32 view [n0, n1] over data with row stride `row_stride`
// floats (rows of the window tensor, for the unfused conv path).
TensorView strided(float* data, int64_t n0, int64_t n1, int64_t row_stride) {
  TensorView v;
  v.data = data;
  v.dtype = DType::F32;
  v.ne = {n0, n1, 1, 1};
  const size_t rb = static_cast<size_t>(row_stride) * sizeof(float);
  v.nb = {sizeof(float), rb, rb * static_cast<size_t>(n1), rb * static_cast<size_t>(n1)};
  return v;
}

// Destination slots: distinct, shuffled over the pool. Sources: sequence 0
// is an identity sequence iff first_identity; every other sequence is one
// with probability 1/2, else it reads a random slot, half the time one that
// another sequence writes (so the scratch rule matters), and see below.
void make_slots(OpCase& c, int n_seq, int n_slots, bool first_identity, std::vector<int32_t>* ids,
                std::vector<int32_t>* dst) {
  std::vector<int32_t> perm(static_cast<size_t>(n_slots));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), c.rng());
  dst->assign(perm.begin(), perm.begin() + n_seq);
  ids->resize(static_cast<size_t>(n_seq));
  std::uniform_int_distribution<int> coin(0, 1);
  std::uniform_int_distribution<int32_t> any_slot(0, n_slots - 1);
  std::uniform_int_distribution<int> any_seq(0, n_seq - 1);
  for (int s = 0; s < n_seq; ++s) {
    const bool identity = s == 0 ? first_identity : coin(c.rng()) == 1;
    int32_t& id = (*ids)[static_cast<size_t>(s)];
    if (identity) {
      id = (*dst)[static_cast<size_t>(s)];
    } else if (n_seq > 1 && coin(c.rng()) == 1) {
      int other = any_seq(c.rng());
      if (other == s) other = (s + 1) % n_seq;
      id = (*dst)[static_cast<size_t>(other)];
    } else {
      do {
        id = any_slot(c.rng());
      } while (id == (*dst)[static_cast<size_t>(s)]);
    }
  }
  // Always a read of a slot written by an earlier sequence (and, where
  // sequence 0 is no identity, by a later one): in-order and reverse-order
  // kernels that skipped the scratch copy would both be caught.
  if (n_seq >= 2) {
    (*ids)[static_cast<size_t>(n_seq - 1)] = (*dst)[0];
    if (!first_identity) (*ids)[0] = (*dst)[1];
  }
}

TensorView alloc_ints(OpCase& c, const std::vector<int32_t>& v) {
  TensorView t = c.alloc(DType::I32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), static_cast<int32_t*>(t.data));
  return t;
}

// The unfused form of a fused state update (pool src[5] [.., .., .., slots],
// ids src[6], destination slots src[7] or none), as its equivalent: gather
// whole slots (flattened rows), the plain op `plain_kind` in place on the
// gathered states, scatter to the destinations.
void add_unfused_equivalent(OpCase& c, OpKind plain_kind) {
  const Op& op = c.op;
  const TensorView& pool = op.src[5];
  const int64_t n_seq = op.src[6].ne[0], n_slots = pool.ne[3];
  const int64_t slot = pool.ne[0] * pool.ne[1] * pool.ne[2];
  const TensorView pool_rows = pool.reshape({slot, n_slots});
  TensorView states = c.alloc(DType::F32, {slot, n_seq});
  Op gather;
  gather.kind = OpKind::kGetRows;
  gather.src[0] = pool_rows;
  gather.src[1] = op.src[6];
  gather.dst = states;
  Op plain = op;
  plain.kind = plain_kind;
  plain.src[5] = states.reshape({pool.ne[0], pool.ne[1], pool.ne[2], n_seq});
  plain.src[6] = plain.src[7] = TensorView{};
  plain.dst = c.alloc(DType::F32, {op.dst.ne[0], op.dst.ne[1], op.dst.ne[2], op.dst.ne[3]});
  plain.dst2 = plain.src[5];
  Op scatter;
  scatter.kind = OpKind::kSetRows;
  scatter.src[0] = states;
  scatter.src[1] = op.src[7].empty() ? op.src[6] : op.src[7];
  scatter.dst = pool_rows;
  Equivalent unfused{fmt::format("unfused: get_rows, {}, set_rows", op_kind_name(plain_kind)),
                     Op{}, true};
  unfused.op.dst = plain.dst;
  unfused.op.dst2 = pool;
  unfused.steps = {gather, plain, scatter};
  c.equivalents.push_back(std::move(unfused));
}

// dst_slots: false = omitted (destinations = ids, which are then distinct).
std::unique_ptr<OpCase> conv_update_case(int width, int channels, int n_seq, bool bias, bool silu,
                                         bool first_identity, bool dst_slots = true) {
  auto c = std::make_unique<OpCase>(fmt::format("ssm_conv_update k{} c{} ns{}{}{}{}", width,
                                                channels, n_seq, bias ? " bias" : "",
                                                silu ? " silu" : "", dst_slots ? "" : " ids-only"));
  const int taps = width - 1;
  const int n_slots = n_seq + n_seq / 2 + 2;
  std::vector<int32_t> ids, dst;
  make_slots(*c, n_seq, n_slots, first_identity, &ids, &dst);
  if (!dst_slots) ids = dst;  // distinct: every sequence updates its own slot

  Op& op = c->op;
  op.kind = OpKind::kSsmConvUpdate;
  op.params = SsmConvParams{silu};
  TensorView x = c->alloc(DType::F32, {channels, n_seq});
  TensorView w = c->alloc(DType::F32, {width, channels});
  TensorView pool = c->alloc(DType::F32, {taps, channels, n_slots});
  c->fill_uniform(x, -2.0f, 2.0f);
  c->fill_uniform(w);
  c->fill_uniform(pool, -2.0f, 2.0f);
  op.src[0] = x;
  op.src[1] = w;
  if (bias) {
    op.src[2] = c->alloc(DType::F32, {channels});
    c->fill_uniform(op.src[2], -0.5f, 0.5f);
  }
  op.src[3] = pool;
  op.src[4] = alloc_ints(*c, ids);
  if (dst_slots) op.src[5] = alloc_ints(*c, dst);
  op.dst = c->alloc(DType::F32, {channels, n_seq});
  op.dst2 = pool;
  c->exact = true;
  c->exact_on_host_only = true;  // devices: their exp; fused == unfused still exact there
  c->max_nmse = 1e-10;
  c->in_place =
      false;  // perf: repeat the update on the evolving (bounded) pool; no 10+ MB restore per run

  // Unfused: window [K, channels, n_seq] <- taps (gather) and x, ssm_conv,
  // shifted taps -> destination slots (scatter). The shifted taps are first
  // copied to a packed [K-1, channels, n_seq] tensor (an identity get_rows), so
  // the scatter is one set_rows row per sequence: a device set_rows compares
  // each row's slot with all later rows', which per channel would be slow.
  const int64_t rows = static_cast<int64_t>(channels) * n_seq;
  TensorView window = c->alloc(DType::F32, {width, channels, n_seq});
  float* wd = static_cast<float*>(window.data);
  std::vector<int32_t> gather(static_cast<size_t>(rows)), iota(static_cast<size_t>(rows));
  for (int s = 0; s < n_seq; ++s) {
    for (int ch = 0; ch < channels; ++ch) {
      const size_t r = static_cast<size_t>(s) * channels + ch;
      gather[r] = ids[static_cast<size_t>(s)] * channels + ch;
      iota[r] = static_cast<int32_t>(r);
    }
  }
  const TensorView pool_rows = pool.reshape({taps, static_cast<int64_t>(channels) * n_slots});
  const TensorView iota_ids = alloc_ints(*c, iota);
  Op get_taps;
  get_taps.kind = OpKind::kGetRows;
  get_taps.src[0] = pool_rows;
  get_taps.src[1] = alloc_ints(*c, gather);
  get_taps.dst = strided(wd, taps, rows, width);
  Op get_x;
  get_x.kind = OpKind::kGetRows;
  get_x.src[0] = x.reshape({1, rows});
  get_x.src[1] = iota_ids;
  get_x.dst = strided(wd + taps, 1, rows, width);
  Op conv;
  conv.kind = OpKind::kSsmConv;
  conv.params = op.params;
  conv.src[0] = window;
  conv.src[1] = w;
  conv.src[2] = op.src[2];
  conv.dst = c->alloc(DType::F32, {channels, 1, n_seq});
  Op pack_taps;
  pack_taps.kind = OpKind::kGetRows;
  pack_taps.src[0] = strided(wd + 1, taps, rows, width);
  pack_taps.src[1] = iota_ids;
  pack_taps.dst = c->alloc(DType::F32, {taps, rows});
  Op put_taps;
  put_taps.kind = OpKind::kSetRows;
  put_taps.src[0] = pack_taps.dst.reshape({taps * channels, n_seq});
  put_taps.src[1] = alloc_ints(*c, dst);
  put_taps.dst = pool.reshape({taps * channels, n_slots});
  Equivalent unfused{"unfused: get_rows, ssm_conv, set_rows", Op{}, true};
  unfused.op.dst = conv.dst;
  unfused.op.dst2 = pool;
  unfused.steps = {get_taps, get_x, conv, pack_taps, put_taps};
  c->equivalents.push_back(std::move(unfused));

  c->flops = 2.0 * width * channels * n_seq;
  c->bytes = static_cast<double>(x.nbytes_contiguous() + w.nbytes_contiguous() +
                                 op.dst.nbytes_contiguous()) +
             2.0 * taps * channels * n_seq * sizeof(float);
  return c;
}

std::unique_ptr<OpCase> gdn_update_case(int s_dim, int h_k, int h_v, int n_seq, HeadMap map,
                                        bool first_identity, bool l2_norm = true,
                                        bool dst_slots = true) {
  auto c = std::make_unique<OpCase>(
      fmt::format("gated_delta_net_update s{} hk{} hv{} ns{} {}{}{}", s_dim, h_k, h_v, n_seq,
                  map == HeadMap::kDiv ? "div" : "mod", l2_norm ? "" : " no-norm",
                  dst_slots ? "" : " ids-only"));
  const int n_slots = n_seq + n_seq / 2 + 2;
  std::vector<int32_t> ids, dst;
  make_slots(*c, n_seq, n_slots, first_identity, &ids, &dst);
  if (!dst_slots) ids = dst;

  Op& op = c->op;
  op.kind = OpKind::kGatedDeltaNetUpdate;
  TensorView q = c->alloc(DType::F32, {s_dim, h_k, 1, n_seq});
  TensorView k = c->alloc(DType::F32, {s_dim, h_k, 1, n_seq});
  TensorView v = c->alloc(DType::F32, {s_dim, h_v, 1, n_seq});
  TensorView g = c->alloc(DType::F32, {h_v, 1, n_seq});
  TensorView beta = c->alloc(DType::F32, {h_v, 1, n_seq});
  TensorView pool = c->alloc(DType::F32, {s_dim, s_dim, h_v, n_slots});
  const float qk_range = l2_norm ? 1.0f : 0.2f;
  c->fill_uniform(q, -qk_range, qk_range);
  c->fill_uniform(k, -qk_range, qk_range);
  c->fill_uniform(v);
  c->fill_uniform(g, -1.0f, -0.01f);
  c->fill_uniform(beta, 0.05f, 0.95f);
  c->fill_uniform(pool, -0.5f, 0.5f);
  op.src = {
      q, k, v, g, beta, pool, alloc_ints(*c, ids), dst_slots ? alloc_ints(*c, dst) : TensorView{}};
  op.dst = c->alloc(DType::F32, {s_dim, h_v, 1, n_seq});
  op.dst2 = pool;
  GatedDeltaNetParams p;
  p.scale = 1.0f / std::sqrt(static_cast<float>(s_dim));
  p.l2_norm_qk = l2_norm;
  p.head_map = map;
  op.params = p;
  c->exact = true;
  c->exact_on_host_only = true;  // devices: their exp; fused == unfused still exact there
  c->max_nmse = 1e-10;
  c->in_place =
      false;  // perf: repeat the update on the evolving (bounded) pool; no 10+ MB restore per run

  add_unfused_equivalent(*c, OpKind::kGatedDeltaNet);

  const double sq = static_cast<double>(s_dim) * s_dim;
  c->flops = 7.0 * sq * h_v * n_seq;
  c->bytes = 2.0 * sq * h_v * n_seq * sizeof(float) +
             static_cast<double>(q.nbytes_contiguous() * 2 + v.nbytes_contiguous() * 2);
  return c;
}

// Mamba-2: P rows of N state values per head, H heads in G groups. x, B, C
// are views of one [P H + 2 N G, 1, n_seq] conv output as in the model; dt
// spans softplus's linear branch (> 20) too.
std::unique_ptr<OpCase> scan_update_case(int p_dim, int n_state, int n_head, int n_group, int n_seq,
                                         bool first_identity, bool dst_slots = true) {
  auto c =
      std::make_unique<OpCase>(fmt::format("ssm_scan_update p{} n{} h{} g{} ns{}{}", p_dim, n_state,
                                           n_head, n_group, n_seq, dst_slots ? "" : " ids-only"));
  const int n_slots = n_seq + n_seq / 2 + 2;
  std::vector<int32_t> ids, dst;
  make_slots(*c, n_seq, n_slots, first_identity, &ids, &dst);
  if (!dst_slots) ids = dst;

  Op& op = c->op;
  op.kind = OpKind::kSsmScanUpdate;
  const int64_t width = int64_t{p_dim} * n_head + 2 * int64_t{n_state} * n_group;
  const TensorView xbc = c->alloc(DType::F32, {width, 1, n_seq});
  c->fill_uniform(xbc, -1.0f, 1.0f);
  const size_t f = sizeof(float), row = static_cast<size_t>(width) * f;
  auto view = [&](int64_t off, int64_t ne0, int64_t ne1) {
    TensorView v = xbc;
    v.data = static_cast<char*>(xbc.data) + off * f;
    v.ne = {ne0, ne1, 1, n_seq};
    v.nb = {f, ne0 * f, row, row};
    return v;
  };
  const TensorView x = view(0, p_dim, n_head);
  const TensorView b = view(int64_t{p_dim} * n_head, n_state, n_group);
  const TensorView cc =
      view(int64_t{p_dim} * n_head + int64_t{n_state} * n_group, n_state, n_group);
  const TensorView dt = c->alloc(DType::F32, {n_head, 1, n_seq});
  c->fill_uniform(dt, -4.0f, 22.0f);
  const TensorView a = c->alloc(DType::F32, {1, n_head});
  c->fill_uniform(a, -2.0f, -0.01f);  // -exp(A_log)
  const TensorView pool = c->alloc(DType::F32, {n_state, p_dim, n_head, n_slots});
  c->fill_uniform(pool, -0.5f, 0.5f);
  op.src = {
      x, dt, a, b, cc, pool, alloc_ints(*c, ids), dst_slots ? alloc_ints(*c, dst) : TensorView{}};
  op.dst = c->alloc(DType::F32, {p_dim, n_head, 1, n_seq});
  op.dst2 = pool;
  c->exact = true;
  c->exact_on_host_only = true;  // devices: their exp and log; fused == unfused still exact there
  c->max_nmse = 1e-10;
  c->in_place = false;  // perf: repeat the update on the evolving pool, as for GDN

  add_unfused_equivalent(*c, OpKind::kSsmScan);

  const double cells = static_cast<double>(p_dim) * n_state * n_head * n_seq;
  c->flops = 5.0 * cells;
  c->bytes = 2.0 * cells * sizeof(float) +
             static_cast<double>(xbc.nbytes_contiguous() + op.dst.nbytes_contiguous());
  return c;
}

}  // namespace

// Device fusion mul_mat_glu: W [K, 2F] (gate rows then up rows, or up
// first when swapped), x [K, M] -> silu(gate) * up [F, M]; the reference is
// mul_mat into [2F, M] then glu of its row halves, which the fused kernel
// must equal exactly on the device.
std::unique_ptr<OpCase> mul_mat_glu_case(DType dt, int64_t k, int64_t f, int64_t m,
                                         GluKind kind = GluKind::kSwiGlu, bool swapped = false) {
  GluParams gp;
  gp.kind = kind;
  gp.swapped = swapped;
  const char* act = kind == GluKind::kSwiGlu   ? ""
                    : kind == GluKind::kGeGlu  ? " geglu"
                    : kind == GluKind::kGeGluErf ? " geglu_erf"
                                                 : " swiglu_oai";
  auto c = new_case(fmt::format("mul_mat_glu {} K={} F={} M={}{}{}", dtype_name(dt), k, f, m, act,
                                swapped ? " swapped" : ""),
                    OpKind::kMulMatGlu, gp);
  c->device_fusion = true;
  c->op.src[0] = c->alloc(dt, {k, 2 * f});
  c->fill_uniform(c->op.src[0]);
  c->op.src[1] = c->alloc(DType::F32, {k, m});
  c->fill_uniform(c->op.src[1]);
  c->op.dst = c->alloc(DType::F32, {f, m});
  c->max_nmse = dt == DType::F16 ? 1e-5 : 5e-4;
  Equivalent eq;
  eq.what = "mul_mat + glu";
  eq.exact = true;
  Op mm;
  mm.kind = OpKind::kMulMat;
  mm.src[0] = c->op.src[0];
  mm.src[1] = c->op.src[1];
  mm.dst = c->alloc(DType::F32, {2 * f, m});
  Op glu;
  glu.kind = OpKind::kGlu;
  glu.params = gp;
  glu.src[0] = mm.dst;
  glu.dst = c->alloc(DType::F32, {f, m});
  eq.steps = {mm, glu};
  eq.op = c->op;
  eq.op.dst = glu.dst;
  c->equivalents.push_back(std::move(eq));
  c->flops = 4.0 * static_cast<double>(k * f * m);
  return c;
}

// Device fusion rope_set_rows: x [D, Hq + Hk, T] rotated, its last Hk heads
// per token to the K table and v [Vc, T] to the V table (both filled with
// random bytes first: rows no slot names keep them), at slots (distinct, or
// with a repeat that the later token wins). The reference is rope then the
// two set_rows, which the fused kernel must equal exactly on the device.
// Two-byte K tables are compared byte for byte against the CPU reference
// too, so those cases rotate at position 0 (cos 1, sin 0: both backends
// give x itself); F32 K tables take random positions.
struct RopeSetRowsShape {
  const char* what;
  RopeParams p;
  int64_t head_dim, hq, hk, n_tok, v_cols, n_slots;
  DType k_type, v_type;
  bool repeat_slot = false;
  bool freq_factors = false;
  // x and v as parts of the columns of one joined Q/K/V product [D * H +
  // v_cols, T] (a prefill chunk's views): strided, not contiguous.
  bool qkv_columns = false;
};

std::unique_ptr<OpCase> rope_set_rows_case(const RopeSetRowsShape& sh) {
  auto c = new_case(
      fmt::format("rope_set_rows {} [{}, {}+{}, {}] K {} V {} [{}]{}{}", sh.what, sh.head_dim,
                  sh.hq, sh.hk, sh.n_tok, dtype_name(sh.k_type), dtype_name(sh.v_type), sh.v_cols,
                  sh.repeat_slot ? " repeated slot" : "", sh.qkv_columns ? " qkv columns" : ""),
      OpKind::kRopeSetRows, sh.p);
  c->device_fusion = true;
  Op& op = c->op;
  const int64_t h = sh.hq + sh.hk;
  TensorView qkv;  // [D * H + v_cols, T]
  if (sh.qkv_columns) {
    qkv = c->alloc(DType::F32, {sh.head_dim * h + sh.v_cols, sh.n_tok});
    c->fill_uniform(qkv);
    op.src[0] = qkv;
    op.src[0].ne = {sh.head_dim, h, sh.n_tok, 1};
    op.src[0].nb = {sizeof(float), sh.head_dim * sizeof(float), qkv.nb[1], qkv.nb[1] * sh.n_tok};
  } else {
    op.src[0] = c->alloc(DType::F32, {sh.head_dim, h, sh.n_tok});
    c->fill_uniform(op.src[0]);
  }
  op.src[1] = c->alloc(DType::I32, {sh.n_tok});
  c->fill_ints(op.src[1], 0, sh.k_type == DType::F32 ? 4095 : 0);
  if (sh.freq_factors) {
    op.src[2] = c->alloc(DType::F32, {sh.p.n_dims / 2});
    c->fill_uniform(op.src[2], 1.0f, 8.0f);
  }
  std::vector<int32_t> slots(static_cast<size_t>(sh.n_slots));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), c->rng());
  slots.resize(static_cast<size_t>(sh.n_tok));
  if (sh.repeat_slot && sh.n_tok > 2) slots[sh.n_tok - 1] = slots[1];
  op.src[3] = alloc_ints(*c, slots);
  if (sh.qkv_columns) {
    op.src[4] = qkv;
    op.src[4].data = static_cast<char*>(qkv.data) + sh.head_dim * h * sizeof(float);
    op.src[4].ne[0] = sh.v_cols;
  } else {
    op.src[4] = c->alloc(DType::F32, {sh.v_cols, sh.n_tok});
    c->fill_uniform(op.src[4]);
  }
  op.src[5] = c->alloc(sh.v_type, {sh.v_cols, sh.n_slots});
  c->fill_uniform(op.src[5]);
  op.dst2 = c->alloc(sh.k_type, {sh.head_dim * sh.hk, sh.n_slots});
  c->fill_uniform(op.dst2);
  op.dst = c->alloc(DType::F32, {sh.head_dim, h, sh.n_tok});
  c->more_outputs = {op.src[5]};
  c->max_nmse = 1e-6;  // rope's bound (cases_basic.cc)

  Equivalent eq;
  eq.what = "rope + set_rows K + set_rows V";
  eq.exact = true;
  Op rope;
  rope.kind = OpKind::kRope;
  rope.params = sh.p;
  rope.src = {op.src[0], op.src[1], op.src[2]};
  rope.dst = c->alloc(DType::F32, {sh.head_dim, h, sh.n_tok});
  TensorView k_rows = rope.dst;  // the last Hk heads of each token, [D * Hk, T]
  k_rows.data = static_cast<char*>(rope.dst.data) + (sh.hq * sh.head_dim) * sizeof(float);
  k_rows.ne = {sh.head_dim * sh.hk, sh.n_tok, 1, 1};
  k_rows.nb = {sizeof(float), rope.dst.nb[2], rope.dst.nb[2] * sh.n_tok,
               rope.dst.nb[2] * sh.n_tok};
  Op set_k;
  set_k.kind = OpKind::kSetRows;
  set_k.src = {k_rows, op.src[3]};
  set_k.dst = op.dst2;
  Op set_v;
  set_v.kind = OpKind::kSetRows;
  set_v.src = {op.src[4], op.src[3]};
  set_v.dst = op.src[5];
  eq.steps = {rope, set_k, set_v};
  eq.op = op;
  eq.op.dst = rope.dst;
  c->equivalents.push_back(eq);
  return c;
}

// Device fusion mul_mat_add: W [K, N], x [K, M], r [N, M] -> mul_mat + r,
// into r (in place, as the decoder adds to its residual stream) or a new
// tensor; the reference is mul_mat then add, which the fused kernel must
// equal exactly on the device. Gated (a gated shared expert): r + mul_mat
// * sigmoid(g), g [1, M] logits of both signs; the reference is mul_mat,
// sigmoid into a new tensor, mul, then add.
std::unique_ptr<OpCase> mul_mat_add_case(DType dt, int64_t k, int64_t n, int64_t m, bool in_place,
                                         bool gated = false) {
  auto c = new_case(fmt::format("mul_mat_add {} K={} N={} M={}{}{}", dtype_name(dt), k, n, m,
                                in_place ? " in place" : "", gated ? " gated" : ""),
                    OpKind::kMulMatAdd);
  c->device_fusion = true;
  Op& op = c->op;
  op.src[0] = c->alloc(dt, {k, n});
  c->fill_uniform(op.src[0]);
  op.src[1] = c->alloc(DType::F32, {k, m});
  c->fill_uniform(op.src[1]);
  op.src[2] = c->alloc(DType::F32, {n, m});
  c->fill_uniform(op.src[2], -4.0f, 4.0f);
  if (gated) {
    op.src[3] = c->alloc(DType::F32, {1, m});
    c->fill_uniform(op.src[3], -6.0f, 6.0f);
  }
  op.dst = in_place ? op.src[2] : c->alloc(DType::F32, {n, m});
  c->in_place = in_place;
  c->max_nmse = dt == DType::F16 ? 1e-5 : 5e-4;
  Equivalent eq;
  eq.what = gated ? "mul_mat + sigmoid + mul + add" : "mul_mat + add";
  eq.exact = true;
  Op mm;
  mm.kind = OpKind::kMulMat;
  mm.src[0] = op.src[0];
  mm.src[1] = op.src[1];
  mm.dst = c->alloc(DType::F32, {n, m});
  eq.steps = {mm};
  if (gated) {
    Op sig;
    sig.kind = OpKind::kUnary;
    sig.src[0] = op.src[3];
    sig.params = UnaryParams{UnaryKind::kSigmoid};
    sig.dst = c->alloc(DType::F32, {1, m});
    Op mul;
    mul.kind = OpKind::kMul;
    mul.src[0] = mm.dst;
    mul.src[1] = sig.dst;
    mul.dst = mm.dst;
    eq.steps.push_back(sig);
    eq.steps.push_back(mul);
  }
  Op add;
  add.kind = OpKind::kAdd;
  add.src[0] = op.src[2];
  add.src[1] = mm.dst;
  add.dst = op.dst;
  eq.steps.push_back(add);
  eq.op = op;
  c->equivalents.push_back(eq);
  return c;
}

// Device fusion rms_norm_mul_mat: x [K, M] normalised (weight [K]) into W
// [K, N] (glu: W [K, 2F] -> silu(gate) * up [F, M]); the reference is
// rms_norm then mul_mat (then glu), which the fused kernel must equal
// exactly on the device. K picks the norm's workgroup (32 .. 256 lanes,
// one element each or a strided loop).
std::unique_ptr<OpCase> rms_norm_mul_mat_case(DType dt, int64_t k, int64_t n, int64_t m,
                                              bool glu, bool swapped = false,
                                              GluKind kind = GluKind::kSwiGlu) {
  NormMulMatParams np;
  np.eps = 1e-5f;
  np.glu = glu;
  np.glu_params.kind = kind;
  np.glu_params.swapped = swapped;
  auto c = new_case(fmt::format("rms_norm_mul_mat {} K={} N={} M={}{}{}", dtype_name(dt), k, n, m,
                                !glu ? "" : kind == GluKind::kSwiGlu ? " swiglu" : " geglu",
                                swapped ? " swapped" : ""),
                    OpKind::kRmsNormMulMat, np);
  c->device_fusion = true;
  Op& op = c->op;
  op.src[0] = c->alloc(dt, {k, n});
  c->fill_uniform(op.src[0]);
  op.src[1] = c->alloc(DType::F32, {k, m});
  c->fill_uniform(op.src[1], -3.0f, 3.0f);
  op.src[2] = c->alloc(DType::F32, {k});
  c->fill_uniform(op.src[2], 0.5f, 1.5f);
  op.dst = c->alloc(DType::F32, {glu ? n / 2 : n, m});
  c->max_nmse = dt == DType::F16 ? 1e-5 : 5e-4;
  Equivalent eq;
  eq.what = glu ? "rms_norm + mul_mat + glu" : "rms_norm + mul_mat";
  eq.exact = true;
  Op norm;
  norm.kind = OpKind::kRmsNorm;
  norm.params = RmsNormParams{np.eps};
  norm.src[0] = op.src[1];
  norm.src[1] = op.src[2];
  norm.dst = c->alloc(DType::F32, {k, m});
  Op mm;
  mm.kind = OpKind::kMulMat;
  mm.src[0] = op.src[0];
  mm.src[1] = norm.dst;
  mm.dst = glu ? c->alloc(DType::F32, {n, m}) : op.dst;
  eq.steps = {norm, mm};
  if (glu) {
    Op g;
    g.kind = OpKind::kGlu;
    g.params = np.glu_params;
    g.src[0] = mm.dst;
    g.dst = op.dst;
    eq.steps.push_back(g);
  }
  eq.op = op;
  c->equivalents.push_back(eq);
  return c;
}

// Device fusion rms_norm_add_rms_norm (a sandwich-norm block's end): the
// reference is rms_norm of b (weight wb) into b, then add_rms_norm, which
// the fused kernel must equal exactly on the device. E picks the norm
// workgroup (32 .. 256 lanes, one element each or a strided loop); the sum
// in place into a (as gemma's residual) or a new tensor; with and without
// the next norm's weight.
std::unique_ptr<OpCase> rms_norm_add_rms_norm_case(int64_t e, int64_t n, bool in_place, bool w) {
  auto c = new_case(fmt::format("rms_norm_add_rms_norm E={} n={}{}{}", e, n,
                                in_place ? " in place" : "", w ? "" : " no weight"),
                    OpKind::kRmsNormAddRmsNorm, RmsNormParams{1e-6f});
  c->device_fusion = true;
  c->in_place = true;  // the composition normalises b in place
  Op& op = c->op;
  op.src[0] = c->alloc(DType::F32, {e, n});
  c->fill_uniform(op.src[0], -4.0f, 4.0f);
  op.src[1] = c->alloc(DType::F32, {e, n});
  c->fill_uniform(op.src[1], -2.0f, 2.0f);
  if (w) {
    op.src[2] = c->alloc(DType::F32, {e});
    c->fill_uniform(op.src[2], 0.5f, 1.5f);
  }
  op.src[3] = c->alloc(DType::F32, {e});
  c->fill_uniform(op.src[3], 0.5f, 1.5f);
  op.dst = c->alloc(DType::F32, {e, n});
  op.dst2 = in_place ? op.src[0] : c->alloc(DType::F32, {e, n});
  c->max_nmse = 1e-7;
  Equivalent eq;
  eq.what = "rms_norm + add_rms_norm";
  eq.exact = true;
  Op norm;
  norm.kind = OpKind::kRmsNorm;
  norm.params = RmsNormParams{1e-6f};
  norm.src[0] = op.src[1];
  norm.src[1] = op.src[3];
  norm.dst = op.src[1];
  Op arn;
  arn.kind = OpKind::kAddRmsNorm;
  arn.params = RmsNormParams{1e-6f};
  arn.src[0] = op.src[0];
  arn.src[1] = op.src[1];
  arn.src[2] = op.src[2];
  arn.dst = op.dst;
  arn.dst2 = op.dst2;
  eq.steps = {norm, arn};
  eq.op = op;
  c->equivalents.push_back(eq);
  return c;
}

// Device fusion rms_norm_add (a post-norm block's end with no next norm:
// exaone4, gemma4's FFN end): the reference is rms_norm of b (weight wb)
// into b, then add, which the fused kernel must equal exactly on the
// device. The sum in place into a (the residual stream) or a new tensor.
std::unique_ptr<OpCase> rms_norm_add_case(int64_t e, int64_t n, bool in_place) {
  auto c = new_case(fmt::format("rms_norm_add E={} n={}{}", e, n, in_place ? " in place" : ""),
                    OpKind::kRmsNormAdd, RmsNormParams{1e-6f});
  c->device_fusion = true;
  c->in_place = true;  // the composition normalises b in place
  Op& op = c->op;
  op.src[0] = c->alloc(DType::F32, {e, n});
  c->fill_uniform(op.src[0], -4.0f, 4.0f);
  op.src[1] = c->alloc(DType::F32, {e, n});
  c->fill_uniform(op.src[1], -2.0f, 2.0f);
  op.src[2] = c->alloc(DType::F32, {e});
  c->fill_uniform(op.src[2], 0.5f, 1.5f);
  op.dst = in_place ? op.src[0] : c->alloc(DType::F32, {e, n});
  c->max_nmse = 1e-7;
  Equivalent eq;
  eq.what = "rms_norm + add";
  eq.exact = true;
  Op norm;
  norm.kind = OpKind::kRmsNorm;
  norm.params = RmsNormParams{1e-6f};
  norm.src[0] = op.src[1];
  norm.src[1] = op.src[2];
  norm.dst = op.src[1];
  Op add;
  add.kind = OpKind::kAdd;
  add.src[0] = op.src[0];
  add.src[1] = op.src[1];
  add.dst = op.dst;
  eq.steps = {norm, add};
  eq.op = op;
  c->equivalents.push_back(eq);
  return c;
}

// Device fusion moe_sum: experts [E, k, n] times weights [1, k, n], summed
// over k in rank order; the reference is mul into the experts, then the
// adds of their slices (the model's composition), equal exactly on the
// device.
std::unique_ptr<OpCase> moe_sum_case(int64_t e, int64_t k, int64_t n) {
  auto c = new_case(fmt::format("moe_sum E={} k={} n={}", e, k, n), OpKind::kMoeSum);
  c->device_fusion = true;
  c->in_place = true;  // the composition multiplies the experts in place
  Op& op = c->op;
  op.src[0] = c->alloc(DType::F32, {e, k, n});
  c->fill_uniform(op.src[0], -3.0f, 3.0f);
  op.src[1] = c->alloc(DType::F32, {1, k, n});
  c->fill_uniform(op.src[1], 0.0f, 1.0f);
  op.dst = c->alloc(DType::F32, {e, n});
  c->max_nmse = 1e-7;
  Equivalent eq;
  eq.what = "mul + adds";
  eq.exact = true;
  Op mul;
  mul.kind = OpKind::kMul;
  mul.src[0] = op.src[0];
  mul.src[1] = op.src[1];
  mul.dst = op.src[0];
  eq.steps = {mul};
  auto slice = [&](int64_t u) {
    TensorView v = op.src[0];
    v.data = static_cast<char*>(v.data) + static_cast<size_t>(u) * op.src[0].nb[1];
    v.ne = {e, n, 1, 1};
    const size_t plane = op.src[0].nb[2] * static_cast<size_t>(n);
    v.nb = {op.src[0].nb[0], op.src[0].nb[2], plane, plane};
    return v;
  };
  for (int64_t u = 1; u < k; ++u) {
    Op add;
    add.kind = OpKind::kAdd;
    add.src[0] = u == 1 ? slice(0) : op.dst;
    add.src[1] = slice(u);
    add.dst = op.dst;
    eq.steps.push_back(add);
  }
  eq.op = op;
  c->equivalents.push_back(eq);
  return c;
}

RopeParams rope_of(RopeMode mode, int n_dims, float base) {
  RopeParams p;
  p.mode = mode;
  p.n_dims = n_dims;
  p.freq_base = base;
  return p;
}

void add_fused_cases(CaseList& cases) {
  // rope_set_rows: SmolLM2's decode step (normal, Dk 64, 9 + 3 heads, F16
  // cache), qwen-like neox with freq factors and partial dims, several
  // tokens with a repeated slot, odd V widths (a two-byte row that shares
  // its edge words), a Q8_0 cache that the device declines, and many short
  // rows.
  using M = RopeMode;
  const RopeSetRowsShape rope_shapes[] = {
      {"llama", rope_of(M::kNormal, 64, 1e5f), 64, 9, 3, 1, 192, 64, DType::F32, DType::F16},
      {"llama", rope_of(M::kNormal, 64, 1e5f), 64, 9, 3, 1, 192, 64, DType::F16, DType::F16},
      {"neox partial + freq factors", rope_of(M::kNeox, 32, 1e6f), 64, 4, 2, 5, 96, 16, DType::F32,
       DType::F32, true, true},
      {"neox", rope_of(M::kNeox, 128, 1e6f), 128, 8, 2, 4, 33, 32, DType::BF16, DType::F16, true},
      {"normal partial", rope_of(M::kNormal, 48, 1e4f), 64, 2, 1, 3, 65, 8, DType::F16,
       DType::BF16},
      {"llama q8_0 cache", rope_of(M::kNormal, 64, 1e5f), 64, 4, 2, 1, 128, 8, DType::Q8_0,
       DType::Q8_0},
      // A prefill chunk of SmolLM2's shape and a neox one, x and v columns of
      // the joined product.
      {"llama prefill", rope_of(M::kNormal, 64, 1e5f), 64, 9, 3, 37, 192, 64, DType::F16,
       DType::F16, true, false, true},
      {"neox prefill", rope_of(M::kNeox, 128, 1e6f), 128, 4, 2, 6, 256, 16, DType::F32, DType::BF16,
       false, true, true},
      // 32 tokens a workgroup (8 items each), and a repeated slot 298
      // tokens after its first use: past one stride of the shared scan.
      {"many tokens a workgroup", rope_of(M::kNormal, 8, 1e4f), 8, 1, 1, 300, 5, 320, DType::F16,
       DType::F16, true},
  };
  for (const RopeSetRowsShape& sh : rope_shapes) cases.push_back(rope_set_rows_case(sh));

  // rms_norm_add_rms_norm: gemma-3-270m's rows (640: 256 lanes loop), the
  // tiny models' (64), a 32-lane row, several rows, no next weight.
  cases.push_back(rms_norm_add_rms_norm_case(640, 1, true, true));
  cases.push_back(rms_norm_add_rms_norm_case(64, 3, true, true));
  cases.push_back(rms_norm_add_rms_norm_case(20, 2, false, true));
  cases.push_back(rms_norm_add_rms_norm_case(100, 4, false, false));
  // rms_norm_add: exaone4's and gemma4's rows in place, a 32-lane row into
  // a new tensor, rows looping over 256 lanes.
  cases.push_back(rms_norm_add_case(128, 1, true));
  cases.push_back(rms_norm_add_case(20, 3, false));
  cases.push_back(rms_norm_add_case(1000, 2, true));
  // moe_sum: qwen3moe's decode (k 8), two experts over several tokens,
  // wide rows, mixtral's k 2 at E 4096.
  cases.push_back(moe_sum_case(64, 8, 1));
  cases.push_back(moe_sum_case(64, 2, 5));
  cases.push_back(moe_sum_case(300, 4, 3));
  cases.push_back(moe_sum_case(4096, 2, 1));

  // mul_mat_add: SmolLM2's output and down projections in place, several
  // columns, a new output; M 9 (declined).
  cases.push_back(mul_mat_add_case(DType::Q4_1, 576, 576, 1, true));
  cases.push_back(mul_mat_add_case(DType::Q8_0, 1536, 576, 1, true));
  cases.push_back(mul_mat_add_case(DType::Q4_K, 512, 70, 5, false));
  cases.push_back(mul_mat_add_case(DType::F16, 200, 33, 8, true));
  cases.push_back(mul_mat_add_case(DType::Q4_0, 256, 40, 9, true));
  // Gated (qwen3next / qwen35moe / qwen2moe shared experts): one column in
  // place (a MoE layer's decode), several columns into a new tensor, the
  // int8 and float paths, M 9 (declined).
  cases.push_back(mul_mat_add_case(DType::Q8_0, 512, 256, 1, true, true));
  cases.push_back(mul_mat_add_case(DType::Q4_K, 512, 70, 5, false, true));
  cases.push_back(mul_mat_add_case(DType::F16, 200, 33, 8, true, true));
  cases.push_back(mul_mat_add_case(DType::F32, 64, 40, 3, false, true));
  cases.push_back(mul_mat_add_case(DType::Q4_0, 256, 40, 9, true, true));
  // rms_norm_mul_mat: SmolLM2's Q/K/V (K 576: the norm's 256 lanes loop)
  // and gate/up products, norm workgroups of 32, 128 and 256 lanes, several
  // columns, swapped halves; M 9 (declined) and K with more than 64 chunks
  // under GLU (the float path declines it; the int8 path takes it in rounds
  // of 32 chunks a lane group).
  cases.push_back(rms_norm_mul_mat_case(DType::Q4_1, 576, 960, 1, false));
  cases.push_back(rms_norm_mul_mat_case(DType::Q4_1, 576, 3072, 1, true));
  cases.push_back(rms_norm_mul_mat_case(DType::Q8_0, 32, 48, 3, false));
  cases.push_back(rms_norm_mul_mat_case(DType::F16, 100, 34, 2, true, true));
  cases.push_back(rms_norm_mul_mat_case(DType::Q4_K, 4096, 40, 8, false));
  cases.push_back(rms_norm_mul_mat_case(DType::Q8_0, 256, 40, 9, false));
  cases.push_back(rms_norm_mul_mat_case(DType::Q8_0, 65 * 256, 8, 1, true));
  cases.push_back(rms_norm_mul_mat_case(DType::F16, 65 * 64, 8, 1, true));
  cases.push_back(rms_norm_mul_mat_case(DType::Q8_0, 640, 96, 1, true, false, GluKind::kGeGlu));

  // mul_mat_glu at decode sizes (SmolLM2's K 576 / F 1536, a long K with
  // several rounds of chunks per lane, odd F), M up to the decode limit;
  // swapped halves; GeGLU (gemma) and GeGLU-erf; and cases the device
  // declines (M 9; K with more than 64 chunks on the float path: the int8
  // path takes those), which only the reference composition runs.
  cases.push_back(mul_mat_glu_case(DType::Q4_1, 576, 1536, 1));
  cases.push_back(mul_mat_glu_case(DType::Q4_0, 576, 37, 3));
  cases.push_back(mul_mat_glu_case(DType::Q8_0, 4096, 96, 2));
  cases.push_back(mul_mat_glu_case(DType::Q4_K, 1024, 130, 8));
  cases.push_back(mul_mat_glu_case(DType::F16, 200, 33, 1, GluKind::kSwiGlu, true));
  cases.push_back(mul_mat_glu_case(DType::Q4_0, 256, 40, 9));
  cases.push_back(mul_mat_glu_case(DType::Q8_0, 256, 40, 1, GluKind::kGeGlu));
  cases.push_back(mul_mat_glu_case(DType::F32, 640, 70, 3, GluKind::kGeGlu, true));
  cases.push_back(mul_mat_glu_case(DType::F16, 200, 33, 2, GluKind::kGeGluErf));
  cases.push_back(mul_mat_glu_case(DType::Q8_0, 65 * 256, 64, 1));  // F 64: an NMSE of many outputs
  cases.push_back(mul_mat_glu_case(DType::F16, 65 * 64, 4, 1));

  // Conv update: widths x channels x sequences; bias / SiLU / whether
  // sequence 0 reads in place vary along.
  int variant = 0;
  for (int width : {3, 4}) {
    for (int channels : {256, 3328}) {
      for (int n_seq : {1, 4, 32, 128}) {
        const bool bias = variant % 2 == 0, silu = (variant / 2) % 2 == 0;
        cases.push_back(conv_update_case(width, channels, n_seq, bias, silu, variant % 3 != 0));
        ++variant;
      }
    }
  }
  cases.push_back(
      conv_update_case(4, 200, 5, true, true, true, /*dst_slots=*/false));  // odd channel count
  // DeltaNet update: realistic head dims (S = 128) and a Qwen3-Next-sized
  // head count; both head maps; a small unnormalised case.
  for (int n_seq : {1, 4, 32}) {
    cases.push_back(gdn_update_case(128, 2, 4, n_seq, HeadMap::kDiv, n_seq != 4));
    cases.push_back(gdn_update_case(128, 2, 4, n_seq, HeadMap::kMod, n_seq == 4));
  }
  cases.push_back(gdn_update_case(128, 16, 32, 3, HeadMap::kDiv, true));
  cases.push_back(gdn_update_case(64, 1, 3, 5, HeadMap::kMod, false, /*l2_norm=*/false));
  cases.push_back(gdn_update_case(64, 2, 2, 4, HeadMap::kDiv, true, true, /*dst_slots=*/false));
  // Destinations = ids (the model's decode path), at decode sizes: devices
  // that decline explicit destination slots run these.
  cases.push_back(gdn_update_case(128, 2, 4, 32, HeadMap::kMod, true, true, /*dst_slots=*/false));
  cases.push_back(gdn_update_case(128, 16, 32, 3, HeadMap::kDiv, true, true, /*dst_slots=*/false));
  // Mamba-2 scan update: Granite-4.0-H-like heads (P 64, N 128, one group)
  // at decode batch sizes, several groups (G = H, G = H / 3), P with a
  // partial group of 16-row blocks (80) and P % 16 != 0 (12: the reference
  // on every tier); the last two with destinations = ids (the model's
  // decode path).
  // {P, N, H, G, n_seq, first_identity, dst_slots}
  const struct {
    int p, n, h, g, ns;
    bool first_identity, dst_slots;
  } scans[] = {
      {64, 128, 8, 1, 1, true, true},  {64, 128, 8, 1, 4, false, true},
      {64, 128, 8, 1, 32, true, true}, {64, 16, 6, 6, 5, false, true},
      {32, 64, 6, 2, 3, true, true},   {80, 32, 4, 4, 3, false, true},
      {12, 16, 2, 1, 3, true, true},   {64, 128, 8, 1, 16, true, false},
      {16, 32, 4, 2, 3, true, false},
  };
  for (const auto& sc : scans) {
    cases.push_back(
        scan_update_case(sc.p, sc.n, sc.h, sc.g, sc.ns, sc.first_identity, sc.dst_slots));
  }
}

}  // namespace folio::parity
