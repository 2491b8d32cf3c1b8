#include "backend/op.h"

#include <cmath>

#include <fmt/format.h>

namespace folio {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kGetRows: return "get_rows";
    case OpKind::kMulMat: return "mul_mat";
    case OpKind::kMulMatId: return "mul_mat_id";
    case OpKind::kAdd: return "add";
    case OpKind::kMul: return "mul";
    case OpKind::kScale: return "scale";
    case OpKind::kRmsNorm: return "rms_norm";
    case OpKind::kAddRmsNorm: return "add_rms_norm";
    case OpKind::kL2Norm: return "l2_norm";
    case OpKind::kNorm: return "norm";
    case OpKind::kRope: return "rope";
    case OpKind::kSoftMax: return "soft_max";
    case OpKind::kUnary: return "unary";
    case OpKind::kGlu: return "glu";
    case OpKind::kTopK: return "top_k";
    case OpKind::kArgsort: return "argsort";
    case OpKind::kMoeRoute: return "moe_route";
    case OpKind::kFlashAttn: return "flash_attn";
    case OpKind::kSdpa: return "sdpa";
    case OpKind::kSsmConv: return "ssm_conv";
    case OpKind::kGatedDeltaNet: return "gated_delta_net";
    case OpKind::kSsmScan: return "ssm_scan";
    case OpKind::kSetRows: return "set_rows";
    case OpKind::kSsmConvUpdate: return "ssm_conv_update";
    case OpKind::kGatedDeltaNetUpdate: return "gated_delta_net_update";
    case OpKind::kSsmScanUpdate: return "ssm_scan_update";
    case OpKind::kCpy: return "cpy";
    case OpKind::kMulMatGlu: return "mul_mat_glu";
    case OpKind::kRopeSetRows: return "rope_set_rows";
    case OpKind::kMulMatAdd: return "mul_mat_add";
    case OpKind::kRmsNormMulMat: return "rms_norm_mul_mat";
    case OpKind::kRmsNormAddRmsNorm: return "rms_norm_add_rms_norm";
    case OpKind::kRmsNormAdd: return "rms_norm_add";
    case OpKind::kMoeSum: return "moe_sum";
    case OpKind::kCount: break;
  }
  return "?";
}

const char* unary_kind_name(UnaryKind kind) {
  switch (kind) {
    case UnaryKind::kSilu: return "silu";
    case UnaryKind::kGelu: return "gelu";
    case UnaryKind::kGeluErf: return "gelu_erf";
    case UnaryKind::kSigmoid: return "sigmoid";
    case UnaryKind::kSoftplus: return "softplus";
    case UnaryKind::kExp: return "exp";
    case UnaryKind::kTanh: return "tanh";
    case UnaryKind::kRelu: return "relu";
    case UnaryKind::kNeg: return "neg";
  }
  return "?";
}

std::string Op::describe() const {
  std::string s = op_kind_name(kind);
  if (kind == OpKind::kUnary && std::holds_alternative<UnaryParams>(params)) {
    s = fmt::format("unary.{}", unary_kind_name(p<UnaryParams>().kind));
  }
  s += "(";
  bool first = true;
  for (const TensorView& t : src) {
    if (t.empty()) continue;
    if (!first) s += ", ";
    s += t.shape_string();
    first = false;
  }
  s += ") -> " + (dst.empty() ? std::string("?") : dst.shape_string());
  return s;
}

namespace {

// Small helpers that build messages naming the op and the operand.
struct Checker {
  const Op& op;
  Status err;

  bool fail(std::string msg) {
    if (err.ok()) err = invalid_argument("{}: {}", op.describe(), msg);
    return false;
  }
  bool has(const TensorView& t, const char* what) {
    return !t.empty() || fail(fmt::format("missing {}", what));
  }
  bool type(const TensorView& t, DType d, const char* what) {
    return t.dtype == d || fail(fmt::format("{} must be {}, got {}", what, dtype_name(d), dtype_name(t.dtype)));
  }
  // Non-negative dims and contiguous rows of whole blocks; with `strided`
  // (kCpy's operands, the one op whose rows may be strided, e.g. a
  // transpose) any stride that is a multiple of the element size instead.
  bool dims(const TensorView& t, const char* what, bool strided = false) {
    for (int i = 0; i < kMaxDims; ++i) {
      if (t.ne[i] < 0) return fail(fmt::format("{} has negative dim {}", what, i));
      if (strided && t.nb[i] % type_size(t.dtype) != 0) {
        return fail(fmt::format("{} stride {} is not a multiple of the element size", what, i));
      }
    }
    if (strided) return true;
    if (t.ne[0] % block_size(t.dtype) != 0) {
      return fail(fmt::format("{} ne0 {} not a multiple of {} block size {}", what, t.ne[0],
                              dtype_name(t.dtype), block_size(t.dtype)));
    }
    if (t.nelements() > 0 && t.nb[0] != type_size(t.dtype)) {
      return fail(fmt::format("{} rows must be contiguous", what));
    }
    return true;
  }
  bool eq(int64_t a, int64_t b, const char* what) {
    return a == b || fail(fmt::format("{}: {} != {}", what, a, b));
  }
  bool shape_eq(const TensorView& a, const TensorView& b, const char* what) {
    return a.ne == b.ne || fail(fmt::format("{}: shape mismatch {} vs {}", what, a.shape_string(), b.shape_string()));
  }
  bool divides(int64_t small, int64_t big, const char* what) {
    return (small > 0 && big % small == 0) || fail(fmt::format("{}: {} does not divide {}", what, small, big));
  }
  // The very same view: an in-place output naming its input.
  bool same_view(const TensorView& a, const TensorView& b, const char* what) {
    return (a.data == b.data && a.dtype == b.dtype && a.ne == b.ne && a.nb == b.nb) ||
           fail(fmt::format("{} must be the same view as its input", what));
  }
  bool weight_type(const TensorView& t, const char* what) {
    return traits(t.dtype).supported ||
           fail(fmt::format("{} has unsupported type {}", what, dtype_name(t.dtype)));
  }
  // swiglu_oai's clamp and shift are finite numbers (the other kinds have none).
  bool glu_params(const GluParams& p) {
    return p.kind != GluKind::kSwiGluOai ||
           (std::isfinite(p.alpha) && p.limit >= 0.0f && std::isfinite(p.limit)) ||
           fail("swiglu_oai needs a finite alpha and a finite limit >= 0");
  }
};

// The fused products of a 2-D weight [K, N] and a 2-D F32 input [K, M] into
// a 2-D F32 dst [N / w_rows_per_col, M] (kMulMatGlu: 2, the gate and up
// rows): `extra`, when named, is src[2], an F32 operand the fusion adds
// (the residual, the norm weight), whose own shape the caller checks.
bool check_fused_mul_mat(Checker& c, const Op& op, const char* extra, int64_t w_rows_per_col,
                         const char* n_what) {
  const TensorView& w = op.src[0];
  const TensorView& x = op.src[1];
  const TensorView& d = op.dst;
  return c.has(w, "weight") && c.has(x, "input") && (extra == nullptr || c.has(op.src[2], extra)) &&
         c.weight_type(w, "weight") && c.type(x, DType::F32, "input") &&
         (extra == nullptr || c.type(op.src[2], DType::F32, extra)) &&
         c.type(d, DType::F32, "dst") && c.eq(w.ne[2] * w.ne[3], 1, "weight must be 2-D") &&
         c.eq(x.ne[2] * x.ne[3], 1, "input must be 2-D") && c.eq(w.ne[0], x.ne[0], "inner dim K") &&
         c.eq(w.ne[1], w_rows_per_col * d.ne[0], n_what) && c.eq(d.ne[1], x.ne[1], "dst M") &&
         c.eq(d.ne[2] * d.ne[3], 1, "dst must be 2-D");
}

// Slot ids of the fused state-pool ops: I32, one per sequence (read flat);
// dst_slots optional. Their values are checked at run time by the kernels.
bool check_slot_ids(Checker& c, const TensorView& ids, const TensorView& dst_slots, int64_t n_seq) {
  return c.has(ids, "slot ids") && c.type(ids, DType::I32, "slot ids") &&
         c.eq(ids.nelements(), n_seq, "slot ids length") &&
         (dst_slots.empty() || (c.type(dst_slots, DType::I32, "destination slots") &&
                                c.eq(dst_slots.nelements(), n_seq, "destination slots length")));
}

bool check_ssm_conv_update(Checker& c, const Op& op) {
  const TensorView &x = op.src[0], &w = op.src[1], &bias = op.src[2], &pool = op.src[3];
  if (!c.has(x, "x") || !c.has(w, "weight") || !c.has(pool, "state pool") ||
      !c.type(x, DType::F32, "x") || !c.type(w, DType::F32, "weight") ||
      !c.type(pool, DType::F32, "state pool") || !c.type(op.dst, DType::F32, "dst")) {
    return false;
  }
  const int64_t k = w.ne[0], ch = w.ne[1], n_seq = x.ne[1];
  return (k >= 2 || c.fail("kernel width < 2")) &&
         c.eq(w.ne[2] * w.ne[3], 1, "weight must be 2-D") && c.eq(x.ne[0], ch, "x channels") &&
         c.eq(x.ne[2] * x.ne[3], 1, "x must be 2-D") &&
         (bias.empty() ||
          (c.type(bias, DType::F32, "bias") && c.eq(bias.nelements(), ch, "bias length"))) &&
         c.eq(pool.ne[0], k - 1, "state pool taps") &&
         c.eq(pool.ne[1], ch, "state pool channels") &&
         c.eq(pool.ne[3], 1, "state pool must be 3-D") &&
         check_slot_ids(c, op.src[4], op.src[5], n_seq) && c.eq(op.dst.ne[0], ch, "dst channels") &&
         c.eq(op.dst.ne[1], n_seq, "dst sequences") &&
         c.eq(op.dst.ne[2] * op.dst.ne[3], 1, "dst must be 2-D") &&
         c.has(op.dst2, "state output (the pool)") && c.same_view(op.dst2, pool, "state output") &&
         (!op.dst.overlaps(pool) || c.fail("dst overlaps the state pool"));
}

bool check_gated_delta_net_update(Checker& c, const Op& op) {
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2], &g = op.src[3],
                   &beta = op.src[4], &pool = op.src[5];
  for (int i = 0; i < 6; ++i) {
    if (!c.has(op.src[i], "input") || !c.type(op.src[i], DType::F32, "input")) return false;
  }
  if (!c.type(op.dst, DType::F32, "dst")) return false;
  const int64_t sk = q.ne[0], hk = q.ne[1], ns = q.ne[3];
  const int64_t sv = v.ne[0], hv = v.ne[1];
  const TensorView& d = op.dst;
  return c.shape_eq(q, k, "q/k") && c.eq(q.ne[2], 1, "tokens per sequence") &&
         c.divides(hk, hv, "key heads vs value heads") && c.eq(v.ne[2], 1, "v tokens") &&
         c.eq(v.ne[3], ns, "v sequences") && c.eq(g.ne[0], hv, "g heads") &&
         c.eq(g.ne[1], 1, "g tokens") && c.eq(g.ne[2], ns, "g seqs") && c.eq(g.ne[3], 1, "g ne3") &&
         c.shape_eq(beta, g, "beta") && c.eq(pool.ne[0], sk, "state pool S_k") &&
         c.eq(pool.ne[1], sv, "state pool S_v") && c.eq(pool.ne[2], hv, "state pool heads") &&
         check_slot_ids(c, op.src[6], op.src[7], ns) && c.eq(d.ne[0], sv, "dst S_v") &&
         c.eq(d.ne[1], hv, "dst heads") && c.eq(d.ne[2], 1, "dst tokens") &&
         c.eq(d.ne[3], ns, "dst sequences") && c.has(op.dst2, "state output (the pool)") &&
         c.same_view(op.dst2, pool, "state output") &&
         (!d.overlaps(pool) || c.fail("dst overlaps the state pool"));
}

// dt, A, B and C of kSsmScan / kSsmScanUpdate against x [P, H, T, n_seq]
// and the state size n.
bool check_ssm_scan_operands(Checker& c, const Op& op, int64_t n) {
  const TensorView &x = op.src[0], &dt = op.src[1], &a = op.src[2], &b = op.src[3],
                   &cc = op.src[4];
  const int64_t h = x.ne[1], t = x.ne[2], ns = x.ne[3];
  return c.eq(dt.ne[0], h, "dt heads") && c.eq(dt.ne[1], t, "dt tokens") &&
         c.eq(dt.ne[2], ns, "dt sequences") && c.eq(dt.ne[3], 1, "dt ne3") &&
         c.eq(a.nelements(), h, "A length") && c.eq(b.ne[0], n, "B state size") &&
         c.divides(b.ne[1], h, "groups vs heads") && c.eq(b.ne[2], t, "B tokens") &&
         c.eq(b.ne[3], ns, "B sequences") && c.shape_eq(cc, b, "C");
}

bool check_ssm_scan_update(Checker& c, const Op& op) {
  const TensorView &x = op.src[0], &pool = op.src[5];
  for (int i = 0; i < 6; ++i) {
    if (!c.has(op.src[i], "input") || !c.type(op.src[i], DType::F32, "input")) return false;
  }
  if (!c.type(op.dst, DType::F32, "dst")) return false;
  const int64_t p = x.ne[0], h = x.ne[1], ns = x.ne[3], n = pool.ne[0];
  const TensorView& d = op.dst;
  return c.eq(x.ne[2], 1, "tokens per sequence") && check_ssm_scan_operands(c, op, n) &&
         c.eq(pool.ne[1], p, "state pool rows") && c.eq(pool.ne[2], h, "state pool heads") &&
         check_slot_ids(c, op.src[6], op.src[7], ns) && c.shape_eq(d, x, "dst") &&
         c.has(op.dst2, "state output (the pool)") &&
         c.same_view(op.dst2, pool, "state output") &&
         (!d.overlaps(pool) || c.fail("dst overlaps the state pool"));
}

bool is_kv_type(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0;
}

bool check_attention(Checker& c, const Op& op) {
  const auto& p = op.p<AttentionParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];
  if (!c.has(q, "q") || !c.has(k, "k") || !c.has(v, "v") || !c.has(op.src[3], "seq_idx") ||
      !c.has(op.src[4], "pos") || !c.has(op.src[5], "kv_len")) {
    return false;
  }
  if (!c.type(q, DType::F32, "q") || !c.type(op.src[3], DType::I32, "seq_idx") ||
      !c.type(op.src[4], DType::I32, "pos") || !c.type(op.src[5], DType::I32, "kv_len")) {
    return false;
  }
  if (!is_kv_type(k.dtype) || !is_kv_type(v.dtype)) return c.fail("k/v must be f32, f16, bf16 or q8_0");
  if (!c.dims(k, "k") || !c.dims(v, "v")) return false;
  const int64_t d = q.ne[0], n_head = q.ne[1], n_tokens = q.ne[2];
  if (!c.eq(k.ne[0], d, "k head dim vs q head dim")) return false;
  if (!c.eq(k.ne[1], v.ne[1], "k/v kv heads")) return false;
  if (!c.divides(k.ne[1], n_head, "kv heads vs q heads")) return false;
  if (!c.eq(k.ne[2], v.ne[2], "k/v ne2") || !c.eq(k.ne[3], v.ne[3], "k/v ne3")) return false;
  if (!c.eq(op.src[3].nelements(), n_tokens, "seq_idx length") ||
      !c.eq(op.src[4].nelements(), n_tokens, "pos length")) {
    return false;
  }
  const int64_t n_seq = op.src[5].nelements();
  if (p.layout == KvLayout::kPaged) {
    if (!c.has(op.src[6], "block table") || !c.type(op.src[6], DType::I32, "block table")) return false;
    if (!c.eq(k.ne[2], p.block_size, "k block size")) return false;
    if (!c.eq(op.src[6].ne[1], n_seq, "block table sequences")) return false;
  } else if (!c.eq(k.ne[3], n_seq, "contiguous k sequences")) {
    return false;
  }
  if (!op.src[7].empty() &&
      (!c.type(op.src[7], DType::F32, "sinks") || !c.eq(op.src[7].nelements(), n_head, "sinks length"))) {
    return false;
  }
  if (p.window < 0) return c.fail("negative window");
  if (!c.has(op.dst, "dst") || !c.type(op.dst, DType::F32, "dst")) return false;
  return c.eq(op.dst.ne[0], v.ne[0], "dst head dim") && c.eq(op.dst.ne[1], n_head, "dst heads") &&
         c.eq(op.dst.ne[2], n_tokens, "dst tokens");
}

// The parameter struct each kind expects (NoParams where none).
bool params_match(const Op& op) {
  switch (op.kind) {
    case OpKind::kScale: return std::holds_alternative<ScaleParams>(op.params);
    case OpKind::kRmsNorm:
    case OpKind::kAddRmsNorm:
    case OpKind::kRmsNormAddRmsNorm:
    case OpKind::kRmsNormAdd: return std::holds_alternative<RmsNormParams>(op.params);
    case OpKind::kL2Norm:
    case OpKind::kNorm: return std::holds_alternative<NormParams>(op.params);
    case OpKind::kRope:
    case OpKind::kRopeSetRows: return std::holds_alternative<RopeParams>(op.params);
    case OpKind::kSoftMax: return std::holds_alternative<SoftMaxParams>(op.params);
    case OpKind::kUnary: return std::holds_alternative<UnaryParams>(op.params);
    case OpKind::kGlu:
    case OpKind::kMulMatGlu: return std::holds_alternative<GluParams>(op.params);
    case OpKind::kRmsNormMulMat: return std::holds_alternative<NormMulMatParams>(op.params);
    case OpKind::kTopK: return std::holds_alternative<TopKParams>(op.params);
    case OpKind::kArgsort: return std::holds_alternative<ArgsortParams>(op.params);
    case OpKind::kMoeRoute: return std::holds_alternative<MoeRouteParams>(op.params);
    case OpKind::kFlashAttn:
    case OpKind::kSdpa: return std::holds_alternative<AttentionParams>(op.params);
    case OpKind::kSsmConv:
    case OpKind::kSsmConvUpdate: return std::holds_alternative<SsmConvParams>(op.params);
    case OpKind::kGatedDeltaNet:
    case OpKind::kGatedDeltaNetUpdate:
      return std::holds_alternative<GatedDeltaNetParams>(op.params);
    default: return std::holds_alternative<NoParams>(op.params);
  }
}

bool check(Checker& c, const Op& op) {
  if (!params_match(op)) return c.fail("wrong parameter struct for this op");
  const TensorView& s0 = op.src[0];
  const TensorView& s1 = op.src[1];
  const TensorView& d = op.dst;
  const bool strided = op.kind == OpKind::kCpy;
  for (int i = 0; i < kMaxSrc; ++i) {
    if (!op.src[i].empty() && !c.dims(op.src[i], "src", strided)) return false;
  }
  if (!c.has(d, "dst") || !c.dims(d, "dst", strided)) return false;
  switch (op.kind) {
    case OpKind::kGetRows:
      return c.has(s0, "table") && c.has(s1, "ids") && c.weight_type(s0, "table") &&
             c.type(s1, DType::I32, "ids") && c.type(d, DType::F32, "dst") &&
             c.eq(s0.ne[2] * s0.ne[3], 1, "table must be 2-D") &&
             c.eq(d.ne[0], s0.ne[0], "dst cols") && c.eq(d.nrows(), s1.nelements(), "dst rows");
    case OpKind::kMulMat:
      return c.has(s0, "weight") && c.has(s1, "input") && c.weight_type(s0, "weight") &&
             c.type(s1, DType::F32, "input") && c.type(d, DType::F32, "dst") &&
             c.eq(s0.ne[0], s1.ne[0], "inner dim K") && c.divides(s0.ne[2], s1.ne[2], "batch dim 2") &&
             c.divides(s0.ne[3], s1.ne[3], "batch dim 3") && c.eq(d.ne[0], s0.ne[1], "dst N") &&
             c.eq(d.ne[1], s1.ne[1], "dst M") && c.eq(d.ne[2], s1.ne[2], "dst ne2") &&
             c.eq(d.ne[3], s1.ne[3], "dst ne3");
    case OpKind::kMulMatGlu:
      return c.glu_params(op.p<GluParams>()) &&
             check_fused_mul_mat(c, op, nullptr, 2, "weight rows (gate and up) twice dst N");
    case OpKind::kMulMatAdd: {
      const TensorView& g = op.src[3];
      return check_fused_mul_mat(c, op, "residual", 1, "dst N") &&
             c.shape_eq(op.src[2], d, "residual") &&
             (g.empty() || (c.type(g, DType::F32, "gate") && c.eq(g.ne[0], 1, "gate rows") &&
                            c.eq(g.ne[1], s1.ne[1], "gate columns") &&
                            c.eq(g.ne[2] * g.ne[3], 1, "gate must be 2-D")));
    }
    case OpKind::kRmsNormMulMat: {
      const auto& p = op.p<NormMulMatParams>();
      return (!p.glu || c.glu_params(p.glu_params)) &&
             check_fused_mul_mat(c, op, "norm weight", p.glu ? 2 : 1, "dst N") &&
             c.eq(op.src[2].nelements(), s1.ne[0], "norm weight length");
    }
    case OpKind::kMulMatId: {
      const TensorView& ids = op.src[2];
      return c.has(s0, "experts") && c.has(s1, "input") && c.has(ids, "ids") &&
             c.weight_type(s0, "experts") && c.type(s1, DType::F32, "input") &&
             c.type(ids, DType::I32, "ids") && c.type(d, DType::F32, "dst") &&
             c.eq(s0.ne[3], 1, "experts must be 3-D") && c.eq(s1.ne[3], 1, "input must be 3-D") &&
             c.eq(s0.ne[0], s1.ne[0], "inner dim K") &&
             (s1.ne[1] == 1 || s1.ne[1] == ids.ne[0] || c.fail("input ne1 must be 1 or n_used")) &&
             c.eq(s1.ne[2], ids.ne[1], "tokens") && c.eq(d.ne[0], s0.ne[1], "dst N") &&
             c.eq(d.ne[1], ids.ne[0], "dst n_used") && c.eq(d.ne[2], ids.ne[1], "dst tokens");
    }
    case OpKind::kAdd:
    case OpKind::kMul:
      if (!c.has(s0, "a") || !c.has(s1, "b") || !c.type(s0, DType::F32, "a") ||
          !c.type(s1, DType::F32, "b") || !c.type(d, DType::F32, "dst") || !c.shape_eq(d, s0, "dst")) {
        return false;
      }
      for (int i = 0; i < kMaxDims; ++i) {
        if (!c.divides(s1.ne[i], s0.ne[i], "broadcast")) return false;
      }
      return true;
    case OpKind::kScale:
    case OpKind::kL2Norm:
    case OpKind::kUnary:
      return c.has(s0, "input") && c.type(s0, DType::F32, "input") && c.type(d, DType::F32, "dst") &&
             c.shape_eq(d, s0, "dst");
    case OpKind::kRmsNorm:
      return c.has(s0, "input") && c.type(s0, DType::F32, "input") && c.type(d, DType::F32, "dst") &&
             c.shape_eq(d, s0, "dst") &&
             (s1.empty() || (c.type(s1, DType::F32, "weight") && c.eq(s1.nelements(), s0.ne[0], "weight length")));
    case OpKind::kNorm:
      return c.has(s0, "input") && c.type(s0, DType::F32, "input") && c.type(d, DType::F32, "dst") &&
             c.shape_eq(d, s0, "dst") &&
             (s1.empty() || (c.type(s1, DType::F32, "weight") && c.eq(s1.nelements(), s0.ne[0], "weight length"))) &&
             (op.src[2].empty() || (c.type(op.src[2], DType::F32, "bias") &&
                                    c.eq(op.src[2].nelements(), s0.ne[0], "bias length")));
    case OpKind::kAddRmsNorm:
      return c.has(s0, "a") && c.has(s1, "b") && c.has(op.dst2, "sum output") &&
             c.type(s0, DType::F32, "a") && c.type(s1, DType::F32, "b") && c.shape_eq(s0, s1, "a/b") &&
             c.type(d, DType::F32, "dst") && c.type(op.dst2, DType::F32, "sum output") &&
             c.shape_eq(d, s0, "dst") && c.shape_eq(op.dst2, s0, "sum output") &&
             (op.src[2].empty() || c.eq(op.src[2].nelements(), s0.ne[0], "weight length"));
    case OpKind::kRope: {
      const auto& p = op.p<RopeParams>();
      const bool multi = p.mode == RopeMode::kMrope || p.mode == RopeMode::kImrope;
      if (multi) {
        int total = 0;
        for (int sec : p.sections) {
          if (sec < 0) return c.fail("negative rope section");
          total += sec;
        }
        if (total <= 0) return c.fail("rope sections sum to zero");
      }
      return c.has(s0, "x") && c.has(s1, "positions") && c.type(s0, DType::F32, "x") &&
             c.type(s1, DType::I32, "positions") && c.type(d, DType::F32, "dst") &&
             c.shape_eq(d, s0, "dst") &&
             c.eq(s1.nelements(), s0.ne[2] * (multi ? 4 : 1), "positions length") &&
             ((p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= s0.ne[0]) ||
              c.fail(fmt::format("bad n_dims {}", p.n_dims))) &&
             (op.src[2].empty() || c.eq(op.src[2].nelements(), p.n_dims / 2, "freq factors length"));
    }
    case OpKind::kRopeSetRows: {
      Op rope = op;  // the rotation alone, as kRope validates it
      rope.kind = OpKind::kRope;
      rope.dst2 = TensorView{};
      if (!check(c, rope)) return false;
      const TensorView &slots = op.src[3], &v = op.src[4], &vt = op.src[5], &kt = op.dst2;
      auto table = [&](const TensorView& t, const char* what) {
        return c.has(t, what) &&
               ((t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16 ||
                 t.dtype == DType::Q8_0) ||
                c.fail("tables must be f32, f16, bf16 or q8_0")) &&
               c.eq(t.ne[2] * t.ne[3], 1, "tables must be 2-D");
      };
      return table(kt, "K table") && table(vt, "V table") && c.has(slots, "slots") &&
             c.type(slots, DType::I32, "slots") && c.has(v, "v") && c.type(v, DType::F32, "v") &&
             c.eq(s0.ne[3], 1, "x must be 3-D") &&
             c.eq(slots.nelements(), s0.ne[2], "slot count") &&
             c.eq(v.nrows(), s0.ne[2], "v rows") && c.eq(vt.ne[0], v.ne[0], "V row width") &&
             ((kt.ne[0] > 0 && kt.ne[0] % s0.ne[0] == 0 && kt.ne[0] / s0.ne[0] <= s0.ne[1]) ||
              c.fail("K row width must be a whole number of x's heads, at most all"));
    }
    case OpKind::kSoftMax:
      return c.has(s0, "input") && c.type(s0, DType::F32, "input") && c.type(d, DType::F32, "dst") &&
             c.shape_eq(d, s0, "dst") &&
             (s1.empty() || (c.type(s1, DType::F32, "mask") && c.eq(s1.ne[0], s0.ne[0], "mask ne0") &&
                             c.eq(s1.ne[1], s0.ne[1], "mask ne1")));
    case OpKind::kGlu:
      if (!c.has(s0, "gate") || !c.type(s0, DType::F32, "gate") || !c.type(d, DType::F32, "dst")) return false;
      if (!c.glu_params(op.p<GluParams>())) return false;
      if (!s1.empty()) {
        return c.type(s1, DType::F32, "up") && c.shape_eq(s0, s1, "gate/up") && c.shape_eq(d, s0, "dst");
      }
      return c.eq(s0.ne[0], 2 * d.ne[0], "fused gate/up width") && c.eq(s0.nrows(), d.nrows(), "rows");
    case OpKind::kTopK:
      return c.has(s0, "input") && c.type(s0, DType::F32, "input") && c.type(d, DType::I32, "dst") &&
             ((op.p<TopKParams>().k >= 1 && op.p<TopKParams>().k <= s0.ne[0]) || c.fail("k out of range")) &&
             c.eq(d.ne[0], op.p<TopKParams>().k, "dst k") && c.eq(d.nrows(), s0.nrows(), "rows");
    case OpKind::kArgsort:
      return c.has(s0, "input") && c.type(s0, DType::F32, "input") && c.type(d, DType::I32, "dst") &&
             c.shape_eq(d, s0, "dst");
    case OpKind::kRmsNormAddRmsNorm:
      return c.has(s0, "a") && c.has(s1, "b") && c.has(op.dst2, "sum output") &&
             c.has(op.src[3], "b's norm weight") && c.type(s0, DType::F32, "a") &&
             c.type(s1, DType::F32, "b") && c.shape_eq(s0, s1, "a/b") &&
             c.eq(s0.ne[2] * s0.ne[3], 1, "a must be 2-D") &&
             c.type(op.src[3], DType::F32, "b's norm weight") &&
             c.eq(op.src[3].nelements(), s0.ne[0], "b's norm weight length") &&
             (op.src[2].empty() || (c.type(op.src[2], DType::F32, "weight") &&
                                    c.eq(op.src[2].nelements(), s0.ne[0], "weight length"))) &&
             c.type(d, DType::F32, "dst") && c.type(op.dst2, DType::F32, "sum output") &&
             c.shape_eq(d, s0, "dst") && c.shape_eq(op.dst2, s0, "sum output") &&
             (!d.overlaps(s1) || c.fail("dst overlaps b")) &&
             (!op.dst2.overlaps(s1) || c.fail("sum output overlaps b"));
    case OpKind::kRmsNormAdd:
      return c.has(s0, "a") && c.has(s1, "b") && c.has(op.src[2], "b's norm weight") &&
             c.type(s0, DType::F32, "a") && c.type(s1, DType::F32, "b") &&
             c.shape_eq(s0, s1, "a/b") && c.eq(s0.ne[2] * s0.ne[3], 1, "a must be 2-D") &&
             c.type(op.src[2], DType::F32, "b's norm weight") &&
             c.eq(op.src[2].nelements(), s0.ne[0], "b's norm weight length") &&
             c.type(d, DType::F32, "dst") && c.shape_eq(d, s0, "dst") &&
             (!d.overlaps(s1) || c.fail("dst overlaps b"));
    case OpKind::kMoeSum:
      return c.has(s0, "experts") && c.has(s1, "weights") && c.type(s0, DType::F32, "experts") &&
             c.type(s1, DType::F32, "weights") && c.eq(s0.ne[3], 1, "experts must be 3-D") &&
             (s0.ne[1] >= 2 || c.fail("fewer than 2 experts per token")) &&
             c.eq(s1.ne[0], 1, "weights ne0") && c.eq(s1.ne[1], s0.ne[1], "weights k") &&
             c.eq(s1.ne[2], s0.ne[2], "weights tokens") && c.eq(s1.ne[3], 1, "weights ne3") &&
             c.type(d, DType::F32, "dst") && c.eq(d.ne[0], s0.ne[0], "dst rows") &&
             c.eq(d.ne[1], s0.ne[2], "dst tokens") && c.eq(d.ne[2] * d.ne[3], 1, "dst must be 2-D") &&
             (!d.overlaps(s0) || c.fail("dst overlaps the experts"));
    case OpKind::kMoeRoute: {
      const auto& p = op.p<MoeRouteParams>();
      const int64_t x = s0.ne[0];
      return c.has(s0, "logits") && c.type(s0, DType::F32, "logits") &&
             c.eq(s0.ne[2] * s0.ne[3], 1, "logits must be 2-D") &&
             (s1.empty() || (c.type(s1, DType::F32, "selection bias") &&
                             c.eq(s1.nelements(), x, "selection bias length"))) &&
             ((p.k >= 1 && p.k <= x) || c.fail(fmt::format("k {} out of [1, {}]", p.k, x))) &&
             ((p.n_groups >= 1 && x % p.n_groups == 0) ||
              c.fail(fmt::format("{} groups do not divide {} experts", p.n_groups, x))) &&
             ((p.n_groups_used >= 1 && p.n_groups_used <= p.n_groups) ||
              c.fail(fmt::format("groups used {} out of [1, {}]", p.n_groups_used, p.n_groups))) &&
             ((p.n_groups == 1 || static_cast<int64_t>(p.n_groups_used) * (x / p.n_groups) >= p.k) ||
              c.fail("the groups used hold fewer than k experts")) &&
             (std::isfinite(p.scale) || c.fail("scale must be finite")) &&
             c.type(d, DType::I32, "ids") && c.eq(d.ne[0], p.k, "ids k") &&
             c.eq(d.ne[1], s0.ne[1], "ids tokens") && c.eq(d.ne[2] * d.ne[3], 1, "ids must be 2-D") &&
             c.has(op.dst2, "weights") && c.dims(op.dst2, "weights") &&
             c.type(op.dst2, DType::F32, "weights") && c.shape_eq(op.dst2, d, "weights");
    }
    case OpKind::kFlashAttn:
    case OpKind::kSdpa:
      return check_attention(c, op);
    case OpKind::kSsmConv: {
      const TensorView& w = s1;
      if (!c.has(s0, "x") || !c.has(w, "weight") || !c.type(s0, DType::F32, "x") ||
          !c.type(w, DType::F32, "weight")) {
        return false;
      }
      const int64_t k = w.ne[0], ch = w.ne[1];
      return (k >= 1 || c.fail("kernel width < 1")) && c.eq(s0.ne[1], ch, "channels") &&
             (s0.ne[0] >= k || c.fail("x shorter than kernel")) && c.eq(d.ne[0], ch, "dst channels") &&
             c.eq(d.ne[1], s0.ne[0] - (k - 1), "dst tokens") && c.eq(d.ne[2], s0.ne[2], "dst sequences") &&
             (op.src[2].empty() || c.eq(op.src[2].nelements(), ch, "bias length"));
    }
    case OpKind::kGatedDeltaNet: {
      const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2], &g = op.src[3],
                       &beta = op.src[4], &st = op.src[5];
      for (int i = 0; i < 6; ++i) {
        if (!c.has(op.src[i], "input") || !c.type(op.src[i], DType::F32, "input")) return false;
      }
      const int64_t sk = q.ne[0], hk = q.ne[1], t = q.ne[2], ns = q.ne[3];
      const int64_t sv = v.ne[0], hv = v.ne[1];
      return c.shape_eq(q, k, "q/k") && c.divides(hk, hv, "key heads vs value heads") &&
             c.eq(v.ne[2], t, "v tokens") && c.eq(v.ne[3], ns, "v sequences") &&
             c.eq(g.ne[0], hv, "g heads") && c.eq(g.ne[1], t, "g tokens") && c.eq(g.ne[2], ns, "g seqs") &&
             c.shape_eq(beta, g, "beta") && c.eq(st.ne[0], sk, "state S_k") &&
             c.eq(st.ne[1], sv, "state S_v") && c.eq(st.ne[2], hv, "state heads") &&
             c.eq(st.ne[3], ns, "state sequences") && c.has(op.dst2, "state output") &&
             c.shape_eq(op.dst2, st, "state output") && c.eq(d.ne[0], sv, "dst S_v") &&
             c.eq(d.ne[1], hv, "dst heads") && c.eq(d.ne[2], t, "dst tokens") &&
             c.eq(d.ne[3], ns, "dst sequences") &&
             // In place is the very same view; any other overlap would let
             // one head's write reach another head's unread state.
             ((op.dst2.data == st.data && op.dst2.nb == st.nb) || !op.dst2.overlaps(st) ||
              c.fail("state output overlaps the state input without aliasing it"));
    }
    case OpKind::kSsmScan: {
      const TensorView &x = op.src[0], &st = op.src[5];
      for (int i = 0; i < 6; ++i) {
        if (!c.has(op.src[i], "input") || !c.type(op.src[i], DType::F32, "input")) return false;
      }
      if (!c.type(d, DType::F32, "dst") || !c.has(op.dst2, "state output") ||
          !c.type(op.dst2, DType::F32, "state output")) {
        return false;
      }
      const int64_t p = x.ne[0], h = x.ne[1], ns = x.ne[3];
      return check_ssm_scan_operands(c, op, st.ne[0]) && c.eq(st.ne[1], p, "state rows") && c.eq(st.ne[2], h, "state heads") &&
             c.eq(st.ne[3], ns, "state sequences") && c.shape_eq(op.dst2, st, "state output") &&
             c.shape_eq(d, x, "dst") && (op.dst2.nb[0] == sizeof(float) || c.fail("ssm_scan: state output rows must be contiguous")) &&
             ((op.dst2.data == st.data && op.dst2.nb == st.nb) || !op.dst2.overlaps(st) ||
              c.fail("state output overlaps the state input without aliasing it")) &&
             (!d.overlaps(st) || c.fail("dst overlaps the state"));
    }
    case OpKind::kSetRows:
      return c.has(s0, "rows") && c.has(s1, "slots") && c.type(s0, DType::F32, "rows") &&
             c.type(s1, DType::I32, "slots") &&
             ((d.dtype == DType::F32 || d.dtype == DType::F16 || d.dtype == DType::BF16 ||
               d.dtype == DType::Q8_0) ||
              c.fail("table must be f32, f16, bf16 or q8_0")) &&
             c.eq(d.ne[0], s0.ne[0], "row width") && c.eq(s0.nrows(), s1.nelements(), "slot count") &&
             c.eq(d.ne[2] * d.ne[3], 1, "table must be 2-D");
    case OpKind::kSsmConvUpdate:
      return check_ssm_conv_update(c, op);
    case OpKind::kGatedDeltaNetUpdate:
      return check_gated_delta_net_update(c, op);
    case OpKind::kSsmScanUpdate:
      return check_ssm_scan_update(c, op);
    case OpKind::kCpy:
      return c.has(s0, "input") &&
             ((s0.dtype == DType::F32 || s0.dtype == DType::I32) || c.fail("cpy: f32 or i32 only")) &&
             c.type(d, s0.dtype, "dst") && c.shape_eq(d, s0, "dst") &&
             (!s0.overlaps(d) || c.fail("cpy: input and output overlap"));
    case OpKind::kCount: break;
  }
  return c.fail("unknown op kind");
}

}  // namespace

Status validate_op(const Op& op) {
  Checker c{op, Status()};
  check(c, op);
  return c.err;
}

}  // namespace folio
