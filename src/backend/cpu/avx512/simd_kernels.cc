// The float kernels written once over the traits type (simd/f32x16.h),
// compiled for the avx512 tier: every header they need is included first, with
// baseline flags, then the kernel bodies inside the tier's target region.
#include <cmath>
#include <cstdint>

#include "backend/cpu/scalar/row_drivers.h"
#include "backend/cpu/simd/f32x16_avx512.h"
#include "backend/cpu/simd/kernels.h"

FOLIO_SIMD_BEGIN_AVX512
#include "backend/cpu/simd/norm.h"
FOLIO_SIMD_END

FOLIO_SIMD_INSTANTIATE(folio::cpu::simd::Avx512)
