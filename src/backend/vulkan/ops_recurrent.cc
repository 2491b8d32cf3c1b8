// Recurrent ops of the hybrid models: the depthwise causal convolution, the
// gated DeltaNet recurrence, plain and as fused decode steps on a state
// pool, and the Mamba-2 selective scan. Semantics: op.h.
//
//   ssm_conv                ssm_conv.comp: one invocation per output.
//   ssm_conv_update         state_slots_check.comp, then ssm_conv_update.comp
//                           (shared arithmetic: ssm_conv.glsl).
//   gated_delta_net         gated_delta_net.comp, token by token (the chunked
//                           form that allow_chunked permits is not used).
//   gated_delta_net_update  state_slots_check.comp, then gated_delta_net.comp
//                           in its UPDATE mode: the same code and launch
//                           shape as the plain op, so the fused step is
//                           bit-identical to gather, plain op, scatter.
//   ssm_scan                ssm_scan.comp: one invocation per state row (Mamba-2).
//   ssm_scan_update         state_slots_check.comp, then ssm_scan.comp in its
//                           UPDATE mode (bit-identical to gather, plain
//                           scan, scatter). Explicit destination slots are
//                           declined as for the GDN update; the Mamba-2
//                           layer then gathers, scans and scatters on the
//                           device (ForwardContext::run_if_supported does
//                           not send a device's fused op to the CPU).
// The fused ops' slot errors (an id or destination outside the pool, a
// destination used twice) are found by the one-workgroup check dispatch;
// the main dispatch then writes nothing. A GDN or scan update with explicit
// destination slots is declined (routing runs it on the CPU): a sequence
// could read a slot another workgroup writes, and no dispatch can order all
// reads of 64 KiB-per-head states before all writes without a scratch copy.
// The conv update takes them: its state is K-1 floats per channel, so one
// workgroup stages a block of channels of every sequence in shared memory
// before writing any of them.
//
// Requirements checked by match(): F32 tensors and I32 ids with 4-byte
// multiple strides (any layout otherwise; strides are honoured), widths up
// to kMaxWidth, S_k up to kMaxKeyDim. Parameter structs and workgroup
// sizes: shaders/recurrent_interface.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/recurrent_interface.h"

namespace folio::vulkan {
namespace {

constexpr int64_t kMaxWidth = 32;       // conv kernel width: the shaders' window array
constexpr int64_t kStageFloats = 3072;  // ssm_conv_update.comp STAGED: 12 KiB of taps
constexpr int64_t kMaxKeyDim = 512;     // gated_delta_net.comp: L * EPL
constexpr uint32_t kGdnGroup = 64;      // gated_delta_net.comp local size
constexpr int64_t kMaxScanState = 256;  // ssm_scan.comp: N state values in registers

// A tensor the shaders read as 4-byte words through its strides.
bool word_strides_fit(const TensorView& t, DType want) {
  if (t.dtype != want) return false;
  for (int i = 0; i < kMaxDims; ++i) {
    if (t.nb[i] % 4 != 0 || !fits_u32(t.ne[i])) return false;
  }
  return fits_u32(t.nelements());
}

bool opt_word_strides_fit(const TensorView& t, DType want) {
  return t.empty() || word_strides_fit(t, want);
}

bool same_view(const TensorView& a, const TensorView& b) {
  return a.data == b.data && a.dtype == b.dtype && a.ne == b.ne && a.nb == b.nb;
}

// Explicit destination slots that differ from the ids; absent or equal to
// the ids, destinations are the ids (then distinct, or an error).
bool explicit_dst(const Op& op, int ids_src) {
  const TensorView& d = op.src[ids_src + 1];
  return !d.empty() && !same_view(d, op.src[ids_src]);
}

// ---- slot checks (both fused ops) -----------------------------------------

struct SlotCheckParams {
  FOLIO_VK_SLOT_CHECK_PARAMS
};
static_assert(sizeof(SlotCheckParams) == 2 * sizeof(TensorDesc) + 12);
static_assert(offsetof(SlotCheckParams, n_seq) == 72 && offsetof(SlotCheckParams, has_dst) == 80);

// Records state_slots_check.comp for the op's ids (src[ids_src]) and
// destinations (src[ids_src + 1]) over a pool of n_slots.
Status record_slot_check(Recorder& r, const Op& op, int ids_src, int64_t n_slots) {
  const TensorView& ids = op.src[ids_src];
  const TensorView dst = explicit_dst(op, ids_src) ? op.src[ids_src + 1] : TensorView{};
  SlotCheckParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(ids));
  FOLIO_ASSIGN_OR_RETURN(p.dst_slots, r.desc(dst));
  FOLIO_RETURN_IF_ERROR(aligned4(p.ids, op));
  FOLIO_RETURN_IF_ERROR(aligned4(p.dst_slots, op));
  p.n_seq = static_cast<uint32_t>(ids.nelements());
  p.n_slots = static_cast<uint32_t>(n_slots);
  p.has_dst = dst.empty() ? 0 : 1;
  return r.dispatch("state_slots_check", {}, &p, sizeof p, {ids, dst}, 1);
}

// ---- ssm_conv --------------------------------------------------------------

struct SsmConvShaderParams {
  FOLIO_VK_SSM_CONV_PARAMS
};
static_assert(sizeof(SsmConvShaderParams) == 4 * sizeof(TensorDesc) + 8);
static_assert(offsetof(SsmConvShaderParams, has_bias) == 144 &&
              offsetof(SsmConvShaderParams, silu) == 148);

bool match_ssm_conv(const Op& op, const DeviceCaps&) {
  const TensorView &x = op.src[0], &w = op.src[1], &d = op.dst;
  return word_strides_fit(x, DType::F32) && word_strides_fit(w, DType::F32) && word_strides_fit(d, DType::F32) &&
         opt_word_strides_fit(op.src[2], DType::F32) && w.ne[0] <= kMaxWidth && w.ne[2] * w.ne[3] == 1 &&
         x.ne[3] == 1 && d.ne[3] == 1;
}

Status record_ssm_conv(Recorder& r, const Op& op) {
  const TensorView &x = op.src[0], &w = op.src[1], &bias = op.src[2];
  SsmConvShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(w));
  FOLIO_ASSIGN_OR_RETURN(p.bias, r.desc(bias));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  for (const TensorDesc* d : {&p.x, &p.w, &p.bias, &p.d}) FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  p.has_bias = bias.empty() ? 0 : 1;
  p.silu = op.p<SsmConvParams>().silu ? 1 : 0;
  const uint64_t n = static_cast<uint64_t>(op.dst.nelements());
  if (n == 0) return Status();
  uint32_t gx, gy;
  Recorder::split_groups((n + kElementWorkgroup - 1) / kElementWorkgroup, gx, gy);
  return r.dispatch("ssm_conv", {static_cast<uint32_t>(w.ne[0])}, &p, sizeof p,
                    {x, w, bias, op.dst}, gx, gy);
}

// ---- ssm_conv_update -------------------------------------------------------

struct SsmConvUpdateShaderParams {
  FOLIO_VK_SSM_CONV_UPDATE_PARAMS
};
static_assert(sizeof(SsmConvUpdateShaderParams) == 7 * sizeof(TensorDesc) + 16);
static_assert(offsetof(SsmConvUpdateShaderParams, d) == 216 &&
              offsetof(SsmConvUpdateShaderParams, has_bias) == 252 &&
              offsetof(SsmConvUpdateShaderParams, cb) == 264);

bool match_ssm_conv_update(const Op& op, const DeviceCaps&) {
  const TensorView &x = op.src[0], &w = op.src[1], &pool = op.src[3];
  if (!word_strides_fit(x, DType::F32) || !word_strides_fit(w, DType::F32) || !word_strides_fit(pool, DType::F32) ||
      !word_strides_fit(op.dst, DType::F32) || !opt_word_strides_fit(op.src[2], DType::F32) ||
      !word_strides_fit(op.src[4], DType::I32) || !opt_word_strides_fit(op.src[5], DType::I32)) {
    return false;
  }
  if (w.ne[0] > kMaxWidth) return false;
  // Staged (explicit destinations): one channel of every sequence must fit.
  return !explicit_dst(op, 4) || x.ne[1] * (w.ne[0] - 1) <= kStageFloats;
}

Status record_ssm_conv_update(Recorder& r, const Op& op) {
  const TensorView &x = op.src[0], &w = op.src[1], &bias = op.src[2], &pool = op.src[3];
  const bool staged = explicit_dst(op, 4);
  const TensorView dst_slots = staged ? op.src[5] : TensorView{};
  SsmConvUpdateShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(w));
  FOLIO_ASSIGN_OR_RETURN(p.bias, r.desc(bias));
  FOLIO_ASSIGN_OR_RETURN(p.pool, r.desc(pool));
  FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(op.src[4]));
  FOLIO_ASSIGN_OR_RETURN(p.dst_slots, r.desc(dst_slots));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  for (const TensorDesc* d : {&p.x, &p.w, &p.bias, &p.pool, &p.ids, &p.dst_slots, &p.d}) {
    FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  }
  const int64_t width = w.ne[0], channels = w.ne[1], n_seq = x.ne[1];
  if (n_seq == 0 || channels == 0) return Status();
  FOLIO_RETURN_IF_ERROR(record_slot_check(r, op, 4, pool.ne[2]));
  p.has_bias = bias.empty() ? 0 : 1;
  p.has_dst = staged ? 1 : 0;
  p.silu = op.p<SsmConvParams>().silu ? 1 : 0;
  uint64_t groups;
  uint32_t stage_floats = 1;
  if (staged) {
    const int64_t cb = std::max<int64_t>(1, kStageFloats / (n_seq * (width - 1)));
    p.cb = static_cast<uint32_t>(std::min(cb, channels));
    stage_floats = static_cast<uint32_t>(p.cb * n_seq * (width - 1));
    groups = static_cast<uint64_t>((channels + p.cb - 1) / p.cb);
  } else {
    p.cb = 0;
    groups = (static_cast<uint64_t>(channels * n_seq) + kElementWorkgroup - 1) / kElementWorkgroup;
  }
  uint32_t gx, gy;
  Recorder::split_groups(groups, gx, gy);
  return r.dispatch("ssm_conv_update",
                    {static_cast<uint32_t>(width), staged ? 1u : 0u, stage_floats}, &p, sizeof p,
                    {x, w, bias, pool, op.src[4], dst_slots, op.dst}, gx, gy);
}

// ---- gated_delta_net, gated_delta_net_update ------------------------------

struct GdnShaderParams {
  FOLIO_VK_GDN_PARAMS
};
static_assert(sizeof(GdnShaderParams) == 10 * sizeof(TensorDesc) + 32);
static_assert(offsetof(GdnShaderParams, state_out) == 324 &&
              offsetof(GdnShaderParams, h_k) == 360 &&
              offsetof(GdnShaderParams, row_blocks) == 380 &&
              offsetof(GdnShaderParams, scale) == 384 && offsetof(GdnShaderParams, eps) == 388);

// Lanes per state row and elements per lane for a key dim: 8 lanes (16
// bytes apart: a row's 128-byte stretch per load) while each holds at most
// 32 elements, 16 beyond. A function of S_k alone: the plain op and the
// update launch the same shape for the same heads.
void gdn_shape(int64_t s_k, uint32_t* lanes, uint32_t* epl) {
  *lanes = s_k <= 256 ? 8 : 16;
  const int64_t per = 4 * static_cast<int64_t>(*lanes);
  *epl = static_cast<uint32_t>((s_k + per - 1) / per * 4);
}

bool match_gdn(const Op& op, const DeviceCaps& caps) {
  const bool update = op.kind == OpKind::kGatedDeltaNetUpdate;
  for (int i = 0; i < 6; ++i) {
    if (!word_strides_fit(op.src[i], DType::F32)) return false;
  }
  if (!word_strides_fit(op.dst, DType::F32) || !word_strides_fit(op.dst2, DType::F32)) return false;
  if (update) {
    if (!word_strides_fit(op.src[6], DType::I32) || !opt_word_strides_fit(op.src[7], DType::I32)) return false;
    if (explicit_dst(op, 6)) return false;  // see the file comment
  }
  const int64_t s_k = op.src[0].ne[0];
  return s_k >= 1 && s_k <= kMaxKeyDim && caps.max_workgroup_size >= kGdnGroup;
}

// 16-byte rows: a tensor the shader may read as vec4 (packed rows starting
// on 16-byte boundaries).
bool rows16(const TensorDesc& d) {
  return d.nb[0] == 4 && d.off % 16 == 0 && d.nb[1] % 16 == 0 && d.nb[2] % 16 == 0 &&
         d.nb[3] % 16 == 0;
}

Status record_gdn(Recorder& r, const Op& op) {
  const bool update = op.kind == OpKind::kGatedDeltaNetUpdate;
  const auto& gp = op.p<GatedDeltaNetParams>();
  const TensorView &q = op.src[0], &v = op.src[2], &state = op.src[5];
  const TensorView ids = update ? op.src[6] : TensorView{};
  GdnShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.q, r.desc(q));
  FOLIO_ASSIGN_OR_RETURN(p.k, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.v, r.desc(v));
  FOLIO_ASSIGN_OR_RETURN(p.g, r.desc(op.src[3]));
  FOLIO_ASSIGN_OR_RETURN(p.beta, r.desc(op.src[4]));
  FOLIO_ASSIGN_OR_RETURN(p.state, r.desc(state));
  FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(ids));
  FOLIO_ASSIGN_OR_RETURN(p.o, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.state_out, r.desc(op.dst2));
  for (const TensorDesc* d :
       {&p.q, &p.k, &p.v, &p.g, &p.beta, &p.state, &p.ids, &p.o, &p.state_out}) {
    FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  }
  const int64_t s_k = q.ne[0], h_k = q.ne[1], s_v = v.ne[0], h_v = v.ne[1], n_seq = v.ne[3];
  if (op.dst.nelements() == 0) return Status();
  if (update) FOLIO_RETURN_IF_ERROR(record_slot_check(r, op, 6, state.ne[3]));
  uint32_t lanes, epl;
  gdn_shape(s_k, &lanes, &epl);
  const uint32_t rows = kGdnGroup / lanes;
  p.h_k = static_cast<uint32_t>(h_k);
  p.ratio = static_cast<uint32_t>(h_v / h_k);
  p.head_mod = gp.head_map == HeadMap::kMod ? 1 : 0;
  p.l2_norm = gp.l2_norm_qk ? 1 : 0;
  p.has_dst = 0;  // explicit destinations are declined by match_gdn
  p.row_blocks = static_cast<uint32_t>((s_v + rows - 1) / rows);
  p.scale = gp.scale;
  p.eps = gp.eps;
  const uint32_t vec4 =
      s_k % 4 == 0 && rows16(p.q) && rows16(p.k) && rows16(p.state) && rows16(p.state_out) ? 1 : 0;
  uint32_t gx, gy;
  Recorder::split_groups(static_cast<uint64_t>(p.row_blocks) * static_cast<uint64_t>(h_v) *
                             static_cast<uint64_t>(n_seq),
                         gx, gy);
  return r.dispatch(
      "gated_delta_net", {kGdnGroup, lanes, epl, update ? 1u : 0u, vec4}, &p, sizeof p,
      {q, op.src[1], v, op.src[3], op.src[4], state, ids, TensorView{}, op.dst, op.dst2}, gx, gy);
}

// ---- ssm_scan ----------------------------------------------------------------

struct SsmScanShaderParams {
  FOLIO_VK_SSM_SCAN_PARAMS
};
static_assert(sizeof(SsmScanShaderParams) == 9 * sizeof(TensorDesc) + 4);
static_assert(offsetof(SsmScanShaderParams, ids) == 288 &&
              offsetof(SsmScanShaderParams, heads_per_group) == 324);

bool match_ssm_scan(const Op& op, const DeviceCaps&) {
  for (int i = 0; i < 6; ++i) {
    if (!word_strides_fit(op.src[i], DType::F32)) return false;
  }
  if (op.kind == OpKind::kSsmScanUpdate) {
    if (!word_strides_fit(op.src[6], DType::I32) || !opt_word_strides_fit(op.src[7], DType::I32)) {
      return false;
    }
    if (explicit_dst(op, 6)) return false;  // see the file comment
  }
  // B and C rows are read contiguously; N values per row live in registers.
  return word_strides_fit(op.dst, DType::F32) && word_strides_fit(op.dst2, DType::F32) &&
         op.src[3].nb[0] == 4 && op.src[4].nb[0] == 4 && op.src[5].ne[0] <= kMaxScanState;
}

Status record_ssm_scan(Recorder& r, const Op& op) {
  const bool update = op.kind == OpKind::kSsmScanUpdate;
  const TensorView& x = op.src[0];
  const TensorView ids = update ? op.src[6] : TensorView{};
  SsmScanShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.dt, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.a, r.desc(op.src[2]));
  FOLIO_ASSIGN_OR_RETURN(p.b, r.desc(op.src[3]));
  FOLIO_ASSIGN_OR_RETURN(p.c, r.desc(op.src[4]));
  FOLIO_ASSIGN_OR_RETURN(p.state, r.desc(op.src[5]));
  FOLIO_ASSIGN_OR_RETURN(p.y, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.state_out, r.desc(op.dst2));
  FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(ids));
  for (const TensorDesc* d :
       {&p.x, &p.dt, &p.a, &p.b, &p.c, &p.state, &p.y, &p.state_out, &p.ids}) {
    FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  }
  p.heads_per_group = static_cast<uint32_t>(x.ne[1] / op.src[3].ne[1]);
  const uint64_t rows = static_cast<uint64_t>(x.ne[0] * x.ne[1] * x.ne[3]);
  if (rows == 0 || x.ne[2] == 0) return Status();
  if (update) FOLIO_RETURN_IF_ERROR(record_slot_check(r, op, 6, op.src[5].ne[3]));
  uint32_t gx, gy;
  Recorder::split_groups((rows + kSsmScanWorkgroup - 1) / kSsmScanWorkgroup, gx, gy);
  return r.dispatch("ssm_scan", {static_cast<uint32_t>(op.src[5].ne[0]), update ? 1u : 0u}, &p,
                    sizeof p,
                    {x, op.src[1], op.src[2], op.src[3], op.src[4], op.src[5], op.dst, op.dst2,
                     ids},
                    gx, gy);
}

}  // namespace

void add_recurrent_kernels(std::vector<KernelDef>& out) {
  out.push_back({"ssm_conv", OpKind::kSsmConv, match_ssm_conv, record_ssm_conv});
  out.push_back(
      {"ssm_conv_update", OpKind::kSsmConvUpdate, match_ssm_conv_update, record_ssm_conv_update});
  out.push_back({"gated_delta_net", OpKind::kGatedDeltaNet, match_gdn, record_gdn});
  out.push_back({"gated_delta_net_update", OpKind::kGatedDeltaNetUpdate, match_gdn, record_gdn});
  out.push_back({"ssm_scan", OpKind::kSsmScan, match_ssm_scan, record_ssm_scan});
  out.push_back({"ssm_scan_update", OpKind::kSsmScanUpdate, match_ssm_scan, record_ssm_scan});
}

}  // namespace folio::vulkan
