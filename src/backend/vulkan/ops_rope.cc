// Rotary embedding (rope.comp): one thread per rotary pair or pass-through
// dim of each (head, token) row, all four modes. The angle of pair i is
// pos * coef[i] / freq_factor[i]; the host computes coef[i] in double from
// the reference's formulas (backend/cpu/ref/rope.cc):
//   coef[i] = freq_base^(-2i / n_dims) * (freq_scale * (1 - mix_i) + mix_i)
//   mix_i   = ext_factor * (1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1))
// (mix_i = 0 without YaRN), i.e. theta_interp * (1 - mix) + theta_extrap * mix
// with the position factored out, and mscale likewise. The table travels in
// the parameter struct, which bounds n_dims / 2 by kRopeMaxPairs. Parameter
// structs and codes: shaders/rope_interface.h.
// rope_set_rows (kRopeSetRows) is the same rotation with the K/V cache
// writes of the step in the same dispatch (shaders/rope_set_rows.comp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "backend/cpu/ref/ref_util.h"
#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/rope_interface.h"

namespace folio::vulkan {
namespace {

struct RopeShaderParams {
  FOLIO_VK_ROPE_PARAMS
};
static_assert(sizeof(RopeShaderParams) == 4 * sizeof(TensorDesc) + (6 + kRopeMaxPairs) * 4);
static_assert(offsetof(RopeShaderParams, n_dims) == 144 &&
              offsetof(RopeShaderParams, sec3) == 160 &&
              offsetof(RopeShaderParams, mscale) == 164 && offsetof(RopeShaderParams, coef) == 168);

struct RopeSetRowsShaderParams {
  FOLIO_VK_ROPE_SET_ROWS_PARAMS
};
static_assert(sizeof(RopeSetRowsShaderParams) == 8 * sizeof(TensorDesc) + (8 + kRopeMaxPairs) * 4);
static_assert(offsetof(RopeSetRowsShaderParams, hk0) == 288 &&
              offsetof(RopeSetRowsShaderParams, rope_groups) == 292 &&
              offsetof(RopeSetRowsShaderParams, n_dims) == 296 &&
              offsetof(RopeSetRowsShaderParams, mscale) == 316 &&
              offsetof(RopeSetRowsShaderParams, coef) == 320);

uint32_t mode_code(RopeMode m) {
  switch (m) {
    case RopeMode::kNormal:
      return kRopeModeNormal;
    case RopeMode::kNeox:
      return kRopeModeNeox;
    case RopeMode::kMrope:
      return kRopeModeMrope;
    case RopeMode::kImrope:
      return kRopeModeImrope;
  }
  return kRopeModeNormal;
}

bool match_rope(const Op& op, const DeviceCaps&) {
  const auto& p = op.p<RopeParams>();
  const TensorView& x = op.src[0];
  const TensorView& ff = op.src[2];
  if (x.dtype != DType::F32 || op.dst.dtype != DType::F32 || op.src[1].dtype != DType::I32) {
    return false;
  }
  if (!ff.empty() && ff.dtype != DType::F32) return false;
  if (p.n_dims <= 0 || p.n_dims % 2 != 0 || p.n_dims > x.ne[0] ||
      static_cast<uint32_t>(p.n_dims / 2) > kRopeMaxPairs) {
    return false;
  }
  if (p.mode == RopeMode::kMrope || p.mode == RopeMode::kImrope) {
    int64_t total = 0;
    for (int s : p.sections) {
      if (s < 0) return false;
      total += s;
    }
    if (total <= 0 || total > std::numeric_limits<int32_t>::max() / 3) return false;
  }
  // Work items: (n_dims / 2 + pass-through dims) per row, counted in 32 bits.
  const int64_t per_row = p.n_dims / 2 + (x.ne[0] - p.n_dims);
  return static_cast<uint64_t>(per_row * x.nrows()) <= std::numeric_limits<uint32_t>::max() &&
         static_cast<uint64_t>(x.nelements()) <= std::numeric_limits<uint32_t>::max();
}

// The FOLIO_VK_ROPE_TABLE fields of either parameter struct.
template <class ShaderParams>
void fill_table(const RopeParams& rp, ShaderParams& t) {
  t.n_dims = static_cast<uint32_t>(rp.n_dims);
  const bool multi = rp.mode == RopeMode::kMrope || rp.mode == RopeMode::kImrope;
  uint32_t* sections[4] = {&t.sec0, &t.sec1, &t.sec2, &t.sec3};
  for (int s = 0; s < 4; ++s) *sections[s] = multi ? static_cast<uint32_t>(rp.sections[s]) : 0;

  float corr[2];
  ref::rope_yarn_corr_dims(rp.n_dims, rp.n_ctx_orig, rp.freq_base, rp.beta_fast, rp.beta_slow,
                           corr);
  double mscale = rp.attn_factor;
  if (rp.ext_factor != 0.0f) {
    mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(rp.freq_scale));
  }
  t.mscale = static_cast<float>(mscale);
  for (int i = 0; i < rp.n_dims / 2; ++i) {
    const double base_pow =
        std::pow(static_cast<double>(rp.freq_base), -2.0 * static_cast<double>(i) / rp.n_dims);
    double mix = 0.0;
    if (rp.ext_factor != 0.0f) {
      const double y = (static_cast<double>(i) - corr[0]) /
                       std::max(0.001, static_cast<double>(corr[1]) - corr[0]);
      mix = (1.0 - std::min(1.0, std::max(0.0, y))) * rp.ext_factor;
    }
    t.coef[i] = static_cast<float>(base_pow * (rp.freq_scale * (1.0 - mix) + mix));
  }
}

// Workgroups of rope's work items (kElementWorkgroup each).
uint64_t rope_groups(const RopeParams& rp, const TensorView& x) {
  const int64_t per_row = rp.n_dims / 2 + (x.ne[0] - rp.n_dims);
  return (static_cast<uint64_t>(per_row * x.nrows()) + kElementWorkgroup - 1) / kElementWorkgroup;
}

Status record_rope(Recorder& r, const Op& op) {
  const auto& rp = op.p<RopeParams>();
  const TensorView& x = op.src[0];
  const TensorView& ff = op.src[2];
  RopeShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.pos, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.ff, r.desc(ff));  // empty: a default descriptor, never read
  fill_table(rp, p);
  uint32_t gx, gy;
  Recorder::split_groups(rope_groups(rp, x), gx, gy);
  return r.dispatch("rope", {mode_code(rp.mode), ff.empty() ? 0u : 1u}, &p, sizeof p,
                    {x, op.src[1], ff, op.dst}, gx, gy);
}

// ---- rope_set_rows: rope with the K/V cache writes (rope_set_rows.comp)

// rope_set_rows.comp's table dtype codes: kDtypeF32, kDtypeF16, kDtypeBF16
// (Q8_0 tables: declined, the model runs rope and set_rows).
bool table_code(const TensorView& t, uint32_t* code) {
  switch (t.dtype) {
    case DType::F32:
      *code = kDtypeF32;
      return t.nb[0] % 4 == 0 && t.nb[1] % 4 == 0;
    case DType::F16:
    case DType::BF16:
      *code = t.dtype == DType::F16 ? kDtypeF16 : kDtypeBF16;
      return t.nb[0] == 2 && t.nb[1] % 2 == 0;
    default:
      return false;
  }
}

bool words(const TensorView& t) {
  for (size_t nb : t.nb) {
    if (nb % 4 != 0) return false;
  }
  return fits_u32(t.nelements());
}

bool match_rope_set_rows(const Op& op, const DeviceCaps& caps) {
  uint32_t code;
  const TensorView &slots = op.src[3], &v = op.src[4];
  return match_rope(op, caps) && table_code(op.dst2, &code) && table_code(op.src[5], &code) &&
         slots.dtype == DType::I32 && words(slots) && v.dtype == DType::F32 && words(v) &&
         fits_u32(static_cast<int64_t>(rope_groups(op.p<RopeParams>(), op.src[0])) +
                  op.src[0].ne[2]);
}

Status record_rope_set_rows(Recorder& r, const Op& op) {
  const auto& rp = op.p<RopeParams>();
  const TensorView &x = op.src[0], &ff = op.src[2], &kt = op.dst2, &vt = op.src[5];
  RopeSetRowsShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.pos, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.ff, r.desc(ff));  // empty: a default descriptor, never read
  FOLIO_ASSIGN_OR_RETURN(p.slots, r.desc(op.src[3]));
  FOLIO_ASSIGN_OR_RETURN(p.v, r.desc(op.src[4]));
  FOLIO_ASSIGN_OR_RETURN(p.kt, r.desc(kt));
  FOLIO_ASSIGN_OR_RETURN(p.vt, r.desc(vt));
  FOLIO_RETURN_IF_ERROR(aligned4(p.slots, op));
  FOLIO_RETURN_IF_ERROR(aligned4(p.v, op));
  uint32_t kdt = kDtypeF32, vdt = kDtypeF32;
  table_code(kt, &kdt);
  table_code(vt, &vdt);
  if (p.kt.off % (kdt == kDtypeF32 ? 4 : 2) != 0 || p.vt.off % (vdt == kDtypeF32 ? 4 : 2) != 0) {
    return invalid_argument("{}: a table at a misaligned offset", op.describe());
  }
  p.hk0 = static_cast<uint32_t>(x.ne[1] - kt.ne[0] / x.ne[0]);
  const uint64_t groups = rope_groups(rp, x);
  p.rope_groups = static_cast<uint32_t>(groups);
  fill_table(rp, p);
  uint32_t gx, gy;
  Recorder::split_groups(groups + static_cast<uint64_t>(x.ne[2]), gx, gy);
  return r.dispatch("rope_set_rows", {mode_code(rp.mode), ff.empty() ? 0u : 1u, kdt, vdt}, &p,
                    sizeof p, {x, op.src[1], ff, op.dst, op.src[3], op.src[4], kt, vt}, gx, gy);
}

}  // namespace

void add_rope_kernels(std::vector<KernelDef>& out) {
  out.push_back({"rope", OpKind::kRope, match_rope, record_rope});
  out.push_back({"rope_set_rows", OpKind::kRopeSetRows, match_rope_set_rows, record_rope_set_rows});
}

}  // namespace folio::vulkan
