// The float kernels written once over the traits type (simd/f32x16.h),
// compiled for the neon tier: every header they need is included first, with
// baseline flags, then the kernel bodies inside the tier's target region.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/row_drivers.h"
#include "backend/cpu/simd/f32x16_neon.h"
#include "backend/cpu/simd/kernels.h"
#include "backend/cpu/simd/recurrent_kernels.h"
#include "quant/blocks.h"

FOLIO_SIMD_BEGIN_NEON
#include "backend/cpu/simd/elementwise.h"
#include "backend/cpu/simd/norm.h"
#include "backend/cpu/simd/quantize_act.h"
#include "backend/cpu/simd/softmax.h"
#include "backend/cpu/simd/gated_delta_net.h"
#include "backend/cpu/simd/ssm_scan.h"
#include "backend/cpu/simd/ssm_conv.h"
FOLIO_SIMD_END

FOLIO_SIMD_INSTANTIATE(folio::cpu::simd::Neon)
FOLIO_SIMD_INSTANTIATE_RECURRENT(folio::cpu::simd::Neon)

namespace folio::cpu {

// The activation quantizers <tier>/kernels.h declares (simd/quantize_act.h).
void quantize_act_q8_0_neon(const float* x, void* dst, int64_t k) {
  simd::quantize_q8_0<simd::Neon>(x, dst, k);
}
void quantize_act_q8_k_neon(const float* x, void* dst, int64_t k) {
  simd::quantize_q8_k<simd::Neon>(x, dst, k);
}

}  // namespace folio::cpu
