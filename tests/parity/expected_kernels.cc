// Which kernel every parity case expects, per CPU tier and on the Vulkan
// device (expected_kernels.h). Adding a case of an op kind that already has
// a rule needs nothing here; a case meant to leave one tier's kernel (an
// odd stride, a size under a kernel's threshold) gets an override line; a
// new kernel changes its op kind's rule.
#include "parity/expected_kernels.h"

#include <string_view>
#include <vector>

#include "core/cpu_features.h"
#include "parity/harness.h"
#include "tensor/dtype.h"

namespace folio::parity {

bool need_met(Need need) {
  const CpuFeatures& f = cpu_features();
  switch (need) {
    case Need::kNone: return true;
    case Need::kAvx512Vnni: return f.avx512vnni;
    case Need::kVnni256: return f.vnni256();
    case Need::kAmxInt8: return f.amx_int8;
    case Need::kAmxBf16: return f.amx_bf16;
  }
  return false;
}

const char* need_name(Need need) {
  switch (need) {
    case Need::kNone: return "none";
    case Need::kAvx512Vnni: return "AVX-512 VNNI";
    case Need::kVnni256: return "256-bit VNNI";
    case Need::kAmxInt8: return "AMX int8";
    case Need::kAmxBf16: return "AMX bf16";
  }
  return "?";
}

const char* kernel_tier_name(KernelTier tier) {
  switch (tier) {
    case KernelTier::kRef: return "ref";
    case KernelTier::kScalar: return "scalar";
    case KernelTier::kNeon: return "neon";
    case KernelTier::kNeonDotprod: return "neon_dotprod";
    case KernelTier::kNeonI8mm: return "neon_i8mm";
    case KernelTier::kAvx2: return "avx2";
    case KernelTier::kAvx2Vnni: return "avx2_vnni";
    case KernelTier::kAvx512: return "avx512";
    case KernelTier::kAmx: return "amx";
  }
  return "?";
}

namespace expected_kernels_rules {

using T = KernelTier;

bool arm_tier(KernelTier t) {
  return t == T::kNeon || t == T::kNeonDotprod || t == T::kNeonI8mm;
}
bool x86_tier(KernelTier t) {
  return t >= T::kAvx2;
}

// --- Rules: the kernels an op has, per tier ---------------------------------

std::string vk(OpKind kind) {
  return std::string("vulkan.") + op_kind_name(kind);
}

// The reference kernel only (on every tier), and the device's kernel.
Expectation ref_only(OpKind kind) {
  return {{{T::kRef, std::string(op_kind_name(kind)) + ".ref"}}, vk(kind)};
}

// Reference plus one kernel per SIMD family (avx2, avx512, neon), named
// "<kind>.<tier>", when `simd` holds.
Expectation simd_family(OpKind kind, bool simd = true) {
  Expectation e = ref_only(kind);
  if (!simd) return e;
  const std::string base = op_kind_name(kind);
  e.cpu.push_back({T::kAvx2, base + ".avx2"});
  e.cpu.push_back({T::kAvx512, base + ".avx512"});
  e.cpu.push_back({T::kNeon, base + ".neon"});
  return e;
}

bool f32_or_absent(const TensorView& t) {
  return t.empty() || t.dtype == DType::F32;
}

// An optional F32 norm weight of one row of ne0.
bool weight_row_ok(const TensorView& w, int64_t ne0) {
  return w.empty() || (w.dtype == DType::F32 && w.ne[0] == ne0);
}

bool is_one_of(DType d, std::initializer_list<DType> list) {
  for (DType x : list) {
    if (d == x) return true;
  }
  return false;
}

// kMulMat, its decode fusions and kMulMatId on a device with integer dot
// products: the int8 path for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K ... Q6_K,
// IQ4_NL, IQ4_XS, MXFP4 and NVFP4 weights (kernel "<kind>_q8"; kMulMat and the
// fusions for 2-D products only), whatever the column or token count.
bool int8_path(const Op& op) {
  return is_one_of(op.src[0].dtype,
                   {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K,
                    DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL,
                    DType::IQ4_XS, DType::MXFP4, DType::NVFP4}) &&
         (op.kind == OpKind::kMulMatId ||
          (op.src[0].ne[2] * op.src[0].ne[3] == 1 && op.src[1].ne[2] * op.src[1].ne[3] == 1));
}

// mul_mat / mul_mat_id (prefix "mul_mat" / "mul_mat_id"): per weight dtype.
Expectation mul_mat_rule(const Op& op) {
  const std::string p = op_kind_name(op.kind);
  const DType w = op.src[0].dtype;
  const std::string wn = dtype_name(w);
  Expectation e;
  e.vulkan = vk(op.kind);
  if (is_packed(w)) {
    // Packed layouts: x86 panels only (elsewhere only the reference reads them).
    e.cpu.push_back({T::kRef, p + ".packed.ref"});
    e.vulkan = kDeclined;
    if (w == DType::F16_X16) {
      // F16 on the AMX-BF16 tiles (and their rows kernel) at every batch size.
      e.cpu.push_back({T::kAmx, p + ".f16x16.amx", Need::kAmxBf16});
      return e;
    }
    e.cpu.push_back({T::kAvx2, p + "." + wn + ".avx2"});
    e.cpu.push_back({T::kAvx2Vnni, p + "." + wn + ".avx2_vnni", Need::kVnni256});
    if (w != DType::Q4_1_X16) e.cpu.push_back({T::kAvx512, p + "." + wn + ".avx512", Need::kAvx512Vnni});
    // AMX: mul_mat batches from a measured size per layout on (cpu::amx_min_rows;
    // decode stays on the VNNI panels).
    int amx_rows = 16;  // Q5_K
    if (is_one_of(w, {DType::Q4_0_X16, DType::Q4_1_X16, DType::Q5_0_X16, DType::Q5_1_X16,
                      DType::Q8_0_X16, DType::IQ4_NL_X16, DType::MXFP4_X16}))
      amx_rows = 8;
    if (w == DType::IQ4_XS_X16) amx_rows = 12;
    if (w == DType::Q6_K_X16) amx_rows = 32;
    if (w == DType::Q4_K_X16) amx_rows = 128;
    const bool amx_batch = op.kind != OpKind::kMulMat || op.src[1].ne[1] >= amx_rows;
    if (amx_batch) {
      e.cpu.push_back({T::kAmx, p + "." + wn + ".amx", Need::kAmxInt8});
    }
    e.vulkan = kDeclined;
    return e;
  }
  e.vulkan_int_dot = int8_path(op) ? vk(op.kind) + "_q8" : "";
  e.cpu.push_back({T::kRef, p + ".ref"});
  const bool flt = is_one_of(w, {DType::F32, DType::F16, DType::BF16});
  const bool avx2 = flt || is_one_of(w, {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K,
                                         DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                                         DType::Q2_K, DType::Q3_K, DType::Q5_K, DType::IQ4_XS,
                                         DType::MXFP4, DType::NVFP4});
  if (avx2) e.cpu.push_back({T::kAvx2, p + "." + wn + ".avx2"});
  // AVX-512: no FP4 tiles (the AVX2 ones serve the tier); integer tiles need VNNI.
  if (avx2 && !is_one_of(w, {DType::MXFP4, DType::NVFP4})) {
    e.cpu.push_back({T::kAvx512, p + "." + wn + ".avx512", flt ? Need::kNone : Need::kAvx512Vnni});
  }
  // AMX: BF16 weights through TDPBF16PS at every batch size (BF16 activations).
  if (w == DType::BF16) e.cpu.push_back({T::kAmx, p + ".bf16.amx", Need::kAmxBf16});
  // NEON: a dequantizing float tile, or integer tiles at three tiers.
  if (flt || is_one_of(w, {DType::Q2_K, DType::Q3_K, DType::IQ4_XS})) {
    e.cpu.push_back({T::kNeon, p + ".float.neon"});
  } else if (is_one_of(w, {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                           DType::IQ4_NL, DType::MXFP4, DType::NVFP4, DType::Q4_K, DType::Q5_K,
                           DType::Q6_K})) {
    e.cpu.push_back({T::kNeon, p + ".quant.neon"});
    e.cpu.push_back({T::kNeonDotprod, p + ".quant.neon_dotprod"});
    e.cpu.push_back({T::kNeonI8mm, p + ".quant.neon_i8mm"});
  }
  return e;
}

Expectation unary_rule(const Op& op) {
  const UnaryKind k = op.p<UnaryParams>().kind;
  return simd_family(op.kind, k == UnaryKind::kSilu || k == UnaryKind::kGelu ||
                                  k == UnaryKind::kSigmoid || k == UnaryKind::kExp);
}

Expectation glu_rule(const Op& op) {
  const GluKind k = op.p<GluParams>().kind;
  return simd_family(op.kind, (k == GluKind::kSwiGlu || k == GluKind::kGeGlu ||
                               k == GluKind::kSwiGluOai) &&
                                  f32_or_absent(op.src[1]));
}

Expectation rms_norm_rule(const Op& op) {
  return simd_family(op.kind, weight_row_ok(op.src[1], op.src[0].ne[0]));
}

Expectation add_rms_norm_rule(const Op& op) {
  return simd_family(op.kind, op.dst.dtype == DType::F32 && op.dst2.dtype == DType::F32 &&
                                  weight_row_ok(op.src[2], op.src[0].ne[0]));
}

Expectation soft_max_rule(const Op& op) {
  return simd_family(op.kind, op.dst.dtype == DType::F32);
}

// Every mode (multi-section with valid sections): memoised angle tables at
// every tier above ref.
Expectation rope_rule(const Op& op) {
  const RopeParams& p = op.p<RopeParams>();
  const bool multi = p.mode == RopeMode::kMrope || p.mode == RopeMode::kImrope;
  const auto& s = p.sections;
  const bool sections_ok = !multi || (s[0] >= 0 && s[1] >= 0 && s[2] >= 0 && s[3] >= 0 &&
                                      int64_t{s[0]} + s[1] + s[2] + s[3] > 0);
  const bool tables = sections_ok && op.dst.dtype == DType::F32 && f32_or_absent(op.src[2]);
  Expectation e = simd_family(op.kind, tables);
  if (tables) e.cpu.push_back({T::kScalar, "rope.tables"});
  return e;
}

Expectation cpy_rule(const Op& op) {
  Expectation e = ref_only(op.kind);
  e.cpu.push_back({T::kScalar, "cpy.tiled"});
  return e;
}

// The portable tiled kernel at every tier; SIMD ones for f32 / f16 / q8_0 K/V.
// Vulkan's shader takes head dims up to 576 (latent attention's K 576 / V 512).
constexpr int64_t kVulkanFlashMaxDim = 576;
Expectation flash_attn_rule(const Op& op) {
  Expectation e = simd_family(op.kind, op.src[1].dtype != DType::BF16 && op.src[2].dtype != DType::BF16);
  e.cpu.push_back({T::kScalar, "flash_attn.scalar"});
  if (op.src[0].ne[0] > kVulkanFlashMaxDim || op.src[2].ne[0] > kVulkanFlashMaxDim) {
    e.vulkan = kDeclined;
  }
  return e;
}

// Gated DeltaNet: q [sk, heads, T, n_seq], v [sv, ...]. Long sequences (the
// chunk threshold, allow_chunked) take the chunked form, where a tier has
// one; the token-by-token kernels need sk and sv in whole vectors.
constexpr int64_t kGdnChunkTokens = 64;       // scalar, avx512, neon
constexpr int64_t kGdnChunkTokensAvx2 = 256;  // avx2
Expectation gdn_rule(const Op& op) {
  const int64_t sk = op.src[0].ne[0], sv = op.src[2].ne[0];
  const int64_t t = op.kind == OpKind::kGatedDeltaNet ? op.src[0].ne[2] : 1;
  const bool allow = op.kind == OpKind::kGatedDeltaNet && op.p<GatedDeltaNetParams>().allow_chunked;
  const bool chunk = allow && t >= kGdnChunkTokens;
  auto lanes = [&](int n) { return sk % n == 0 && sv % n == 0; };
  const std::string base = op_kind_name(op.kind);
  Expectation e = ref_only(op.kind);
  if (chunk) e.cpu.push_back({T::kScalar, base + ".chunked.scalar"});
  // The token-by-token kernels (simd/gated_delta_net.h) take blocks of 16
  // state rows on every tier; the chunked form (simd/gdn_chunked.h) S_k and
  // S_v in multiples of 8, on AVX2 from its own threshold.
  auto simd = [&](T tier, const char* isa, int64_t chunk_tokens) {
    if (chunk && t >= chunk_tokens && lanes(8)) {
      e.cpu.push_back({tier, base + ".chunked." + isa});
    } else if (lanes(16)) {
      e.cpu.push_back({tier, base + "." + isa});
    }
  };
  simd(T::kAvx2, "avx2", kGdnChunkTokensAvx2);
  simd(T::kAvx512, "avx512", kGdnChunkTokens);
  simd(T::kNeon, "neon", kGdnChunkTokens);
  return e;
}

// Mamba-2 scan: head_dim in whole 16-row blocks (simd/ssm_scan.h), one
// kernel per SIMD family.
Expectation ssm_scan_rule(const Op& op) {
  return simd_family(op.kind, op.src[0].ne[0] % 16 == 0);
}

// The reference only, and the device declines (it has no kernel for the kind).
Expectation host_only(OpKind kind) {
  Expectation e = ref_only(kind);
  e.vulkan = kDeclined;
  return e;
}

// top_k / argsort: the device sorts rows of up to 2048 elements in shared memory.
constexpr int64_t kVulkanSortMaxRow = 2048;
Expectation sort_rule(const Op& op) {
  Expectation e = ref_only(op.kind);
  if (op.src[0].ne[0] > kVulkanSortMaxRow) e.vulkan = kDeclined;
  return e;
}

// moe_route: the device routes up to 1024 experts per token in shared
// memory (at most 64 groups and 64 chosen experts).
Expectation moe_route_rule(const Op& op) {
  Expectation e = ref_only(op.kind);
  const auto& p = op.p<MoeRouteParams>();
  if (op.src[0].ne[0] > 1024 || p.n_groups > 64 || p.k > 64) e.vulkan = kDeclined;
  return e;
}

// The fused state updates (ids at src[ids], destination slots at src[ids + 1]):
// the device takes destinations that are the ids (absent, or the same view)
// only.
bool explicit_dst_slots(const Op& op, int ids) {
  const TensorView &id = op.src[ids], &dst = op.src[ids + 1];
  return !dst.empty() && !(dst.data == id.data && dst.ne == id.ne && dst.nb == id.nb);
}

Expectation gdn_update_rule(const Op& op) {
  Expectation e = gdn_rule(op);
  if (explicit_dst_slots(op, 6)) e.vulkan = kDeclined;
  return e;
}

Expectation ssm_scan_update_rule(const Op& op) {
  Expectation e = ssm_scan_rule(op);
  if (explicit_dst_slots(op, 6)) e.vulkan = kDeclined;
  return e;
}

// Device fusions: no CPU kernel at any tier. mul_mat_glu: SwiGLU, GeGLU or
// GeGLU-erf (not swiglu_oai) over a decode-sized input (at most 8
// columns); on the float path rows of at most 64 64-element chunks (a lane
// each, two row slots per 128-lane workgroup), on the int8 path rows of any
// length (at most DeviceCaps::q8_matvec_lanes lanes a row, 64 at most).
bool glu_row_fits(const Op& op) {
  return (op.src[0].ne[0] + 63) / 64 <= 64;
}

Expectation mul_mat_glu_rule(const Op& op) {
  Expectation e;
  const bool form = !is_packed(op.src[0].dtype) && op.p<GluParams>().kind != GluKind::kSwiGluOai &&
                    op.src[1].ne[1] <= 8;
  e.vulkan = form && glu_row_fits(op) ? vk(op.kind) : kDeclined;
  if (form && int8_path(op)) e.vulkan_int_dot = vk(op.kind) + "_q8";
  return e;
}

// rope_set_rows: the device fusion for F32 / F16 / BF16 caches (Q8_0: the
// model runs rope and set_rows).
Expectation rope_set_rows_rule(const Op& op) {
  Expectation e;
  auto plain = [](DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; };
  e.vulkan = plain(op.dst2.dtype) && plain(op.src[5].dtype) ? vk(op.kind) : kDeclined;
  return e;
}

// The decode matvec's prologue / epilogue fusions: up to 8 columns; the
// GLU form as mul_mat_glu.
Expectation mul_mat_add_rule(const Op& op) {
  Expectation e;
  e.vulkan = !is_packed(op.src[0].dtype) && op.src[1].ne[1] <= 8 ? vk(op.kind) : kDeclined;
  if (e.vulkan != kDeclined && int8_path(op)) e.vulkan_int_dot = e.vulkan + "_q8";
  return e;
}

Expectation rms_norm_mul_mat_rule(const Op& op) {
  const auto& p = op.p<NormMulMatParams>();
  const bool form = !is_packed(op.src[0].dtype) && op.src[1].ne[1] <= 8 &&
                    (!p.glu || p.glu_params.kind != GluKind::kSwiGluOai);
  Expectation e;
  e.vulkan = form && (!p.glu || glu_row_fits(op)) ? vk(op.kind) : kDeclined;
  if (form && int8_path(op)) e.vulkan_int_dot = vk(op.kind) + "_q8";
  return e;
}

// A device fusion the device always takes (F32 rows of any length).
Expectation device_fusion_rule(const Op& op) {
  Expectation e;
  e.vulkan = vk(op.kind);
  return e;
}

struct Rule {
  OpKind kind;
  Expectation (*expect)(const Op& op);
};

// One rule per op kind.
const Rule kRules[] = {
    {OpKind::kGetRows, [](const Op& op) { return ref_only(op.kind); }},
    {OpKind::kMulMat, mul_mat_rule},
    {OpKind::kMulMatId, mul_mat_rule},
    {OpKind::kAdd, [](const Op& op) { return simd_family(op.kind); }},
    {OpKind::kMul, [](const Op& op) { return simd_family(op.kind); }},
    {OpKind::kScale, [](const Op& op) { return simd_family(op.kind); }},
    {OpKind::kCpy, cpy_rule},
    {OpKind::kRmsNorm, rms_norm_rule},
    {OpKind::kAddRmsNorm, add_rms_norm_rule},
    {OpKind::kL2Norm, [](const Op& op) { return ref_only(op.kind); }},
    {OpKind::kNorm, [](const Op& op) { return host_only(op.kind); }},
    {OpKind::kRope, rope_rule},
    {OpKind::kSoftMax, soft_max_rule},
    {OpKind::kUnary, unary_rule},
    {OpKind::kGlu, glu_rule},
    {OpKind::kTopK, sort_rule},
    {OpKind::kArgsort, sort_rule},
    {OpKind::kMoeRoute, moe_route_rule},
    {OpKind::kFlashAttn, flash_attn_rule},
    {OpKind::kSdpa, [](const Op& op) { return host_only(op.kind); }},
    {OpKind::kSetRows,
     [](const Op& op) { return simd_family(op.kind, op.dst.dtype != DType::BF16); }},
    // Short convolution: blocked kernels on every SIMD tier (AVX-512: its
    // own for single-token steps and the fused update, the shared body's
    // for longer convs, both named ssm_conv*.avx512).
    {OpKind::kSsmConv, [](const Op& op) { return simd_family(op.kind); }},
    {OpKind::kSsmConvUpdate, [](const Op& op) { return simd_family(op.kind); }},
    {OpKind::kGatedDeltaNet, gdn_rule},
    {OpKind::kGatedDeltaNetUpdate, gdn_update_rule},
    {OpKind::kSsmScan, ssm_scan_rule},
    {OpKind::kSsmScanUpdate, ssm_scan_update_rule},
    {OpKind::kMulMatGlu, mul_mat_glu_rule},
    {OpKind::kRopeSetRows, rope_set_rows_rule},
    {OpKind::kMulMatAdd, mul_mat_add_rule},
    {OpKind::kRmsNormMulMat, rms_norm_mul_mat_rule},
    {OpKind::kRmsNormAddRmsNorm, device_fusion_rule},
    {OpKind::kRmsNormAdd, device_fusion_rule},
    {OpKind::kMoeSum, device_fusion_rule},
};

// --- Per-case overrides -----------------------------------------------------

// At `tier`, case `name` selects `kernel`; nullptr: it leaves that tier's
// kernel (the ladder goes on down). Tiers above follow by the ladder.
struct CpuOverride {
  const char* name;  // the case name, or a prefix ending in '*'
  KernelTier tier;
  const char* kernel;
};

// An entry {"NAME PREFIX *", KernelTier::kAvx512, nullptr} sends the
// matching cases from the avx512 kernel to the next lower tier's.
const std::vector<CpuOverride> kCpuOverrides = {};

// The Vulkan device's expectation for case `name`: a kernel or kDeclined.
struct DeviceOverride {
  const char* name;  // as above
  const char* kernel;
};

const std::vector<DeviceOverride> kVulkanOverrides = {};

bool name_matches(std::string_view pattern, const std::string& name) {
  if (pattern.empty()) return false;
  if (pattern.back() == '*') return name.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0;
  return name == pattern;
}

}  // namespace expected_kernels_rules

Expectation expected_kernels(const OpCase& c) {
  using namespace expected_kernels_rules;
  Expectation e;
  for (const Rule& r : kRules) {
    if (r.kind == c.op.kind) e = r.expect(c.op);
  }
  for (const CpuOverride& o : kCpuOverrides) {
    if (!name_matches(o.name, c.name())) continue;
    std::erase_if(e.cpu, [&](const KernelAt& k) { return k.tier == o.tier; });
    if (o.kernel != nullptr) e.cpu.push_back({o.tier, o.kernel});
  }
  for (const DeviceOverride& o : kVulkanOverrides) {
    if (name_matches(o.name, c.name())) e.vulkan = o.kernel;
  }
  return e;
}

std::string expected_vulkan_kernel(const Expectation& e, bool int_dot) {
  return int_dot && !e.vulkan_int_dot.empty() ? e.vulkan_int_dot : e.vulkan;
}

std::string expected_cpu_kernel(const Expectation& e, KernelTier tier) {
  using namespace expected_kernels_rules;
  const KernelAt* best = nullptr;
  for (const KernelAt& k : e.cpu) {
    if (tier == T::kRef ? k.tier != T::kRef : k.tier > tier) continue;
    if ((arm_tier(k.tier) && !arm_tier(tier)) || (x86_tier(k.tier) && !x86_tier(tier))) continue;
    if (!need_met(k.need)) continue;
    if (best == nullptr || k.tier > best->tier) best = &k;
  }
  return best == nullptr ? kDeclined : best->name;
}

}  // namespace folio::parity
