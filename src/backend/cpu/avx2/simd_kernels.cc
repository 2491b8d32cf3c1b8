// The float kernels written once over the traits type (simd/f32x16.h),
// compiled for the avx2 tier: every header they need is included first, with
// baseline flags, then the kernel bodies inside the tier's target region.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/row_drivers.h"
#include "backend/cpu/simd/f32x16_avx2.h"
#include "backend/cpu/simd/kernels.h"
#include "backend/cpu/simd/recurrent_kernels.h"
#include "quant/blocks.h"

FOLIO_SIMD_BEGIN_AVX2
#include "backend/cpu/simd/elementwise.h"
#include "backend/cpu/simd/norm.h"
#include "backend/cpu/simd/quantize_act.h"
#include "backend/cpu/simd/softmax.h"
#include "backend/cpu/simd/gated_delta_net.h"
#include "backend/cpu/simd/ssm_scan.h"
#include "backend/cpu/simd/ssm_conv.h"
FOLIO_SIMD_END

FOLIO_SIMD_INSTANTIATE(folio::cpu::simd::Avx2)
FOLIO_SIMD_INSTANTIATE_RECURRENT(folio::cpu::simd::Avx2)

namespace folio::cpu {

// The activation quantizers <tier>/kernels.h declares (simd/quantize_act.h).
void quantize_act_q8_0_avx2(const float* x, void* dst, int64_t k) {
  simd::quantize_q8_0<simd::Avx2>(x, dst, k);
}
void quantize_act_q8_k_avx2(const float* x, void* dst, int64_t k) {
  simd::quantize_q8_k<simd::Avx2>(x, dst, k);
}

}  // namespace folio::cpu
