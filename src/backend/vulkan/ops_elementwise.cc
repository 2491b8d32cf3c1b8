// Element-wise kernels, one thread per output element, every tensor through
// its strides:
//   add / mul   add.comp: src1 broadcast by indexing each dim modulo its size
//   scale       scale.comp: fma(x, scale, bias), one rounding as the reference
//   cpy         cpy.comp: strided copy of 4-byte words
//   unary       unary.comp: the UnaryKind is a spec constant
//   glu         glu.comp: act(gate) * up, or swiglu_oai; the fused
//               single-tensor form is described to the shader as two tensors
//               (the row halves)
// Parameter structs and codes: shaders/elementwise_interface.h.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/elementwise_interface.h"
#include "core/check.h"

namespace folio::vulkan {
namespace {

bool all_f32(const Op& op, int n_src) {
  if (op.dst.dtype != DType::F32) return false;
  for (int i = 0; i < n_src; ++i) {
    if (op.src[i].dtype != DType::F32) return false;
  }
  return true;
}

Status dispatch_per_element(Recorder& r, const char* shader, std::initializer_list<uint32_t> spec,
                            const void* params, size_t bytes,
                            std::initializer_list<TensorView> tensors, const TensorView& dst) {
  uint32_t gx, gy;
  Recorder::split_groups(
      (static_cast<uint64_t>(dst.nelements()) + kElementWorkgroup - 1) / kElementWorkgroup, gx, gy);
  return r.dispatch(shader, spec, params, bytes, tensors, gx, gy);
}

// ---- add / mul

struct BinaryParams {
  FOLIO_VK_BINARY_PARAMS
};
static_assert(sizeof(BinaryParams) == 3 * sizeof(TensorDesc));

bool match_binary(const Op& op, const DeviceCaps&) {
  return all_f32(op, 2);
}

Status record_binary(Recorder& r, const Op& op) {
  BinaryParams p;
  FOLIO_ASSIGN_OR_RETURN(p.a, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.b, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  const uint32_t kind = op.kind == OpKind::kAdd ? kBinaryAdd : kBinaryMul;
  return dispatch_per_element(r, "add", {kind}, &p, sizeof p, {op.src[0], op.src[1], op.dst},
                              op.dst);
}

// ---- scale

struct ScaleShaderParams {
  FOLIO_VK_SCALE_PARAMS
};
static_assert(sizeof(ScaleShaderParams) == 2 * sizeof(TensorDesc) + 8);
static_assert(offsetof(ScaleShaderParams, scale) == 72 && offsetof(ScaleShaderParams, bias) == 76);

bool match_unary_shape(const Op& op, const DeviceCaps&) {
  return all_f32(op, 1) && fits_u32(op.dst.nelements());
}

Status record_scale(Recorder& r, const Op& op) {
  const auto& sp = op.p<ScaleParams>();
  ScaleShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  p.scale = sp.scale;
  p.bias = sp.bias;
  return dispatch_per_element(r, "scale", {}, &p, sizeof p, {op.src[0], op.dst}, op.dst);
}

// ---- cpy

struct CpyParams {
  FOLIO_VK_UNARY_PARAMS
};
static_assert(sizeof(CpyParams) == 2 * sizeof(TensorDesc));

bool match_cpy(const Op& op, const DeviceCaps&) {
  return fits_u32(op.dst.nelements());  // strides: multiples of 4 bytes (validate_op)
}

Status record_cpy(Recorder& r, const Op& op) {
  CpyParams p;
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_RETURN_IF_ERROR(aligned4(p.x, op));
  FOLIO_RETURN_IF_ERROR(aligned4(p.d, op));
  return dispatch_per_element(r, "cpy", {}, &p, sizeof p, {op.src[0], op.dst}, op.dst);
}

// ---- unary

// activation.glsl's code of a UnaryKind.
uint32_t act_code(UnaryKind k) {
  switch (k) {
    case UnaryKind::kSilu:
      return kActSilu;
    case UnaryKind::kGelu:
      return kActGelu;
    case UnaryKind::kGeluErf:
      return kActGeluErf;
    case UnaryKind::kSigmoid:
      return kActSigmoid;
    case UnaryKind::kSoftplus:
      return kActSoftplus;
    case UnaryKind::kExp:
      return kActExp;
    case UnaryKind::kTanh:
      return kActTanh;
    case UnaryKind::kRelu:
      return kActRelu;
    case UnaryKind::kNeg:
      return kActNeg;
  }
  FOLIO_CHECK_MSG(false, "unknown unary kind {}", static_cast<int>(k));
  return 0;
}

struct UnaryShaderParams {
  FOLIO_VK_UNARY_PARAMS
};
static_assert(sizeof(UnaryShaderParams) == 2 * sizeof(TensorDesc));

Status record_unary(Recorder& r, const Op& op) {
  UnaryShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  return dispatch_per_element(r, "unary", {act_code(op.p<UnaryParams>().kind)}, &p, sizeof p,
                              {op.src[0], op.dst}, op.dst);
}

// ---- glu

// glu.comp's spec constant: the activation code of act(gate) * up, or
// kGluSwiGluOai.
uint32_t glu_code(GluKind k) {
  switch (k) {
    case GluKind::kSwiGlu:
      return act_code(UnaryKind::kSilu);
    case GluKind::kGeGlu:
      return act_code(UnaryKind::kGelu);
    case GluKind::kGeGluErf:
      return act_code(UnaryKind::kGeluErf);
    case GluKind::kSwiGluOai:
      return kGluSwiGluOai;
  }
  FOLIO_CHECK_MSG(false, "unknown glu kind {}", static_cast<int>(k));
  return 0;
}

struct GluShaderParams {
  FOLIO_VK_GLU_PARAMS
};
static_assert(sizeof(GluShaderParams) == 3 * sizeof(TensorDesc) + 8);
static_assert(offsetof(GluShaderParams, alpha) == 108 && offsetof(GluShaderParams, limit) == 112);

bool match_glu(const Op& op, const DeviceCaps&) {
  return all_f32(op, op.src[1].empty() ? 1 : 2) && fits_u32(op.dst.nelements());
}

Status record_glu(Recorder& r, const Op& op) {
  const auto& gp = op.p<GluParams>();
  GluShaderParams p;
  p.alpha = gp.alpha;
  p.limit = gp.limit;
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  const bool fused = op.src[1].empty();
  if (!fused) {
    FOLIO_ASSIGN_OR_RETURN(p.g, r.desc(op.src[0]));
    FOLIO_ASSIGN_OR_RETURN(p.u, r.desc(op.src[1]));
  } else {
    // Row halves of src0 [2n, ...]: gate first, up second (swapped: reverse).
    FOLIO_ASSIGN_OR_RETURN(TensorDesc s, r.desc(op.src[0]));
    const uint32_t n = p.d.ne[0];
    p.g = s;
    p.g.ne[0] = n;
    p.u = p.g;
    p.u.off += n * s.nb[0];
    if (gp.swapped) std::swap(p.g, p.u);
  }
  const TensorView& up = fused ? op.src[0] : op.src[1];
  return dispatch_per_element(r, "glu", {glu_code(gp.kind)}, &p, sizeof p, {op.src[0], up, op.dst},
                              op.dst);
}

}  // namespace

uint32_t glu_activation_code(GluKind kind) {
  FOLIO_CHECK_MSG(kind != GluKind::kSwiGluOai, "swiglu_oai has no activation code");
  return glu_code(kind);
}

void add_elementwise_kernels(std::vector<KernelDef>& out) {
  out.push_back({"add", OpKind::kAdd, match_binary, record_binary});
  out.push_back({"mul", OpKind::kMul, match_binary, record_binary});
  out.push_back({"scale", OpKind::kScale, match_unary_shape, record_scale});
  out.push_back({"unary", OpKind::kUnary, match_unary_shape, record_unary});
  out.push_back({"cpy", OpKind::kCpy, match_cpy, record_cpy});
  out.push_back({"glu", OpKind::kGlu, match_glu, record_glu});
}

}  // namespace folio::vulkan
