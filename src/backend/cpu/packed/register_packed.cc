// Kernels on packed weight layouts: registered here with reads_packed, so
// that ops with a packed weight reach only these (and these only such ops).
// One entry per packed type and tier (its own name, so the parity harness
// and perf mode list them apart). The AMX entries take mul_mat ops of at
// least amx_min_rows activation rows (per layout, 8 to 128); smaller batches
// (decode) go to the AVX-512 VNNI panels on the same layout. The AVX2 entries read every layout (Q4_1_X16
// only them, on AVX-512 machines too). The avx2_vnni entries are those
// panels with 256-bit vpdpbusd, for CPUs that have it (AVX-VNNI, or AVX-512
// VNNI + VL: on AVX-512 machines they run Q4_1_X16). F16_X16 (F16 weights
// on the AMX buffer) has AMX-BF16 kernels only.
#include "backend/cpu/packed/packed_kernels.h"
#include "core/cpu_features.h"
#include "quant/repack.h"

namespace folio {

#if defined(__x86_64__)
namespace {

using namespace cpu;

template <DType P>
bool packed_is_with_vnni(const Op& op) {
  return op.src[0].dtype == P && quant::is_packed_view(op.src[0]) && cpu_features().avx512vnni;
}

template <DType P>
bool packed_is_with_avx2(const Op& op) {
  const CpuFeatures& f = cpu_features();
  return op.src[0].dtype == P && quant::is_packed_view(op.src[0]) && f.avx2 && f.fma && f.f16c;
}

template <DType P>
bool packed_is_with_vnni256(const Op& op) {
  return op.src[0].dtype == P && quant::is_packed_view(op.src[0]) && cpu_features().vnni256();
}

// mul_mat: a batch worth the tiles (amx_min_rows); mul_mat_id: any (expert
// groups vary, the panel sends smaller groups to the tier below).
template <DType P>
bool packed_is_with_amx(const Op& op) {
  return op.src[0].dtype == P && quant::is_packed_view(op.src[0]) && cpu_features().amx_int8 &&
         (op.kind != OpKind::kMulMat || op.src[1].ne[1] >= amx_min_rows(P));
}

// F16_X16: every batch size (the rows kernel and the tiles give the same
// bits), on CPUs with AMX-BF16.
bool f16x16_with_amx(const Op& op) {
  return op.src[0].dtype == DType::F16_X16 && quant::is_packed_view(op.src[0]) &&
         cpu_features().amx_bf16;
}

}  // namespace
#endif

// The x86 panels (the packed layouts are repacked for them only; on other
// architectures weights stay plain and only the reference reads a packed
// view, e.g. one a test builds).
void register_packed_kernels(KernelTable& t) {
  using namespace cpu;
  t.add({OpKind::kMulMat, KernelTier::kRef, "mul_mat.packed.ref", supports_packed_ref,
         mul_mat_packed_ref, true});
  t.add({OpKind::kMulMatId, KernelTier::kRef, "mul_mat_id.packed.ref", supports_packed_ref,
         mul_mat_id_packed_ref, true});
#if defined(__x86_64__)
  const struct {
    const char* mul_mat;
    const char* mul_mat_id;
    KernelSupportsFn supports;
  } avx2[] = {
      {"mul_mat.q4_0x16.avx2", "mul_mat_id.q4_0x16.avx2", packed_is_with_avx2<DType::Q4_0_X16>},
      {"mul_mat.q4_1x16.avx2", "mul_mat_id.q4_1x16.avx2", packed_is_with_avx2<DType::Q4_1_X16>},
      {"mul_mat.q5_0x16.avx2", "mul_mat_id.q5_0x16.avx2", packed_is_with_avx2<DType::Q5_0_X16>},
      {"mul_mat.q8_0x16.avx2", "mul_mat_id.q8_0x16.avx2", packed_is_with_avx2<DType::Q8_0_X16>},
      {"mul_mat.q4_Kx16.avx2", "mul_mat_id.q4_Kx16.avx2", packed_is_with_avx2<DType::Q4_K_X16>},
      {"mul_mat.q5_Kx16.avx2", "mul_mat_id.q5_Kx16.avx2", packed_is_with_avx2<DType::Q5_K_X16>},
      {"mul_mat.q6_Kx16.avx2", "mul_mat_id.q6_Kx16.avx2", packed_is_with_avx2<DType::Q6_K_X16>},
      {"mul_mat.q5_1x16.avx2", "mul_mat_id.q5_1x16.avx2", packed_is_with_avx2<DType::Q5_1_X16>},
      {"mul_mat.iq4_nlx16.avx2", "mul_mat_id.iq4_nlx16.avx2",
       packed_is_with_avx2<DType::IQ4_NL_X16>},
      {"mul_mat.iq4_xsx16.avx2", "mul_mat_id.iq4_xsx16.avx2",
       packed_is_with_avx2<DType::IQ4_XS_X16>},
      {"mul_mat.mxfp4x16.avx2", "mul_mat_id.mxfp4x16.avx2", packed_is_with_avx2<DType::MXFP4_X16>},
  };
  for (const auto& k : avx2) {
    t.add({OpKind::kMulMat, KernelTier::kAvx2, k.mul_mat, k.supports, mul_mat_packed_avx2, true});
    t.add({OpKind::kMulMatId, KernelTier::kAvx2, k.mul_mat_id, k.supports, mul_mat_id_packed_avx2,
           true});
  }
  const struct {
    const char* mul_mat;
    const char* mul_mat_id;
    KernelSupportsFn supports;
  } avx2_vnni[] = {
      {"mul_mat.q4_0x16.avx2_vnni", "mul_mat_id.q4_0x16.avx2_vnni",
       packed_is_with_vnni256<DType::Q4_0_X16>},
      {"mul_mat.q4_1x16.avx2_vnni", "mul_mat_id.q4_1x16.avx2_vnni",
       packed_is_with_vnni256<DType::Q4_1_X16>},
      {"mul_mat.q5_0x16.avx2_vnni", "mul_mat_id.q5_0x16.avx2_vnni",
       packed_is_with_vnni256<DType::Q5_0_X16>},
      {"mul_mat.q8_0x16.avx2_vnni", "mul_mat_id.q8_0x16.avx2_vnni",
       packed_is_with_vnni256<DType::Q8_0_X16>},
      {"mul_mat.q4_Kx16.avx2_vnni", "mul_mat_id.q4_Kx16.avx2_vnni",
       packed_is_with_vnni256<DType::Q4_K_X16>},
      {"mul_mat.q5_Kx16.avx2_vnni", "mul_mat_id.q5_Kx16.avx2_vnni",
       packed_is_with_vnni256<DType::Q5_K_X16>},
      {"mul_mat.q6_Kx16.avx2_vnni", "mul_mat_id.q6_Kx16.avx2_vnni",
       packed_is_with_vnni256<DType::Q6_K_X16>},
      {"mul_mat.q5_1x16.avx2_vnni", "mul_mat_id.q5_1x16.avx2_vnni",
       packed_is_with_vnni256<DType::Q5_1_X16>},
      {"mul_mat.iq4_nlx16.avx2_vnni", "mul_mat_id.iq4_nlx16.avx2_vnni",
       packed_is_with_vnni256<DType::IQ4_NL_X16>},
      {"mul_mat.iq4_xsx16.avx2_vnni", "mul_mat_id.iq4_xsx16.avx2_vnni",
       packed_is_with_vnni256<DType::IQ4_XS_X16>},
      {"mul_mat.mxfp4x16.avx2_vnni", "mul_mat_id.mxfp4x16.avx2_vnni",
       packed_is_with_vnni256<DType::MXFP4_X16>},
  };
  for (const auto& k : avx2_vnni) {
    t.add({OpKind::kMulMat, KernelTier::kAvx2Vnni, k.mul_mat, k.supports, mul_mat_packed_avx2_vnni,
           true});
    t.add({OpKind::kMulMatId, KernelTier::kAvx2Vnni, k.mul_mat_id, k.supports,
           mul_mat_id_packed_avx2_vnni, true});
  }
  const struct {
    const char* mul_mat;
    const char* mul_mat_id;
    KernelSupportsFn supports;
  } avx512[] = {
      {"mul_mat.q4_0x16.avx512", "mul_mat_id.q4_0x16.avx512", packed_is_with_vnni<DType::Q4_0_X16>},
      {"mul_mat.q5_0x16.avx512", "mul_mat_id.q5_0x16.avx512", packed_is_with_vnni<DType::Q5_0_X16>},
      {"mul_mat.q8_0x16.avx512", "mul_mat_id.q8_0x16.avx512", packed_is_with_vnni<DType::Q8_0_X16>},
      {"mul_mat.q4_Kx16.avx512", "mul_mat_id.q4_Kx16.avx512", packed_is_with_vnni<DType::Q4_K_X16>},
      {"mul_mat.q5_Kx16.avx512", "mul_mat_id.q5_Kx16.avx512", packed_is_with_vnni<DType::Q5_K_X16>},
      {"mul_mat.q6_Kx16.avx512", "mul_mat_id.q6_Kx16.avx512", packed_is_with_vnni<DType::Q6_K_X16>},
      {"mul_mat.q5_1x16.avx512", "mul_mat_id.q5_1x16.avx512", packed_is_with_vnni<DType::Q5_1_X16>},
      {"mul_mat.iq4_nlx16.avx512", "mul_mat_id.iq4_nlx16.avx512",
       packed_is_with_vnni<DType::IQ4_NL_X16>},
      {"mul_mat.iq4_xsx16.avx512", "mul_mat_id.iq4_xsx16.avx512",
       packed_is_with_vnni<DType::IQ4_XS_X16>},
      {"mul_mat.mxfp4x16.avx512", "mul_mat_id.mxfp4x16.avx512",
       packed_is_with_vnni<DType::MXFP4_X16>},
  };
  for (const auto& k : avx512) {
    t.add(
        {OpKind::kMulMat, KernelTier::kAvx512, k.mul_mat, k.supports, mul_mat_packed_avx512, true});
    t.add({OpKind::kMulMatId, KernelTier::kAvx512, k.mul_mat_id, k.supports,
           mul_mat_id_packed_avx512, true});
  }
  const struct {
    const char* mul_mat;
    const char* mul_mat_id;
    KernelSupportsFn supports;
  } amx[] = {
      {"mul_mat.q4_0x16.amx", "mul_mat_id.q4_0x16.amx", packed_is_with_amx<DType::Q4_0_X16>},
      {"mul_mat.q4_1x16.amx", "mul_mat_id.q4_1x16.amx", packed_is_with_amx<DType::Q4_1_X16>},
      {"mul_mat.q5_0x16.amx", "mul_mat_id.q5_0x16.amx", packed_is_with_amx<DType::Q5_0_X16>},
      {"mul_mat.q8_0x16.amx", "mul_mat_id.q8_0x16.amx", packed_is_with_amx<DType::Q8_0_X16>},
      {"mul_mat.q4_Kx16.amx", "mul_mat_id.q4_Kx16.amx", packed_is_with_amx<DType::Q4_K_X16>},
      {"mul_mat.q5_Kx16.amx", "mul_mat_id.q5_Kx16.amx", packed_is_with_amx<DType::Q5_K_X16>},
      {"mul_mat.q6_Kx16.amx", "mul_mat_id.q6_Kx16.amx", packed_is_with_amx<DType::Q6_K_X16>},
      {"mul_mat.q5_1x16.amx", "mul_mat_id.q5_1x16.amx", packed_is_with_amx<DType::Q5_1_X16>},
      {"mul_mat.iq4_nlx16.amx", "mul_mat_id.iq4_nlx16.amx", packed_is_with_amx<DType::IQ4_NL_X16>},
      {"mul_mat.iq4_xsx16.amx", "mul_mat_id.iq4_xsx16.amx", packed_is_with_amx<DType::IQ4_XS_X16>},
      {"mul_mat.mxfp4x16.amx", "mul_mat_id.mxfp4x16.amx", packed_is_with_amx<DType::MXFP4_X16>},
  };
  for (const auto& k : amx) {
    t.add({OpKind::kMulMat, KernelTier::kAmx, k.mul_mat, k.supports, mul_mat_packed_amx, true});
    t.add({OpKind::kMulMatId, KernelTier::kAmx, k.mul_mat_id, k.supports, mul_mat_id_packed_amx,
           true});
  }
  t.add({OpKind::kMulMat, KernelTier::kAmx, "mul_mat.f16x16.amx", f16x16_with_amx,
         mul_mat_f16x16_amx, true});
  t.add({OpKind::kMulMatId, KernelTier::kAmx, "mul_mat_id.f16x16.amx", f16x16_with_amx,
         mul_mat_id_f16x16_amx, true});
#endif
}

}  // namespace folio
