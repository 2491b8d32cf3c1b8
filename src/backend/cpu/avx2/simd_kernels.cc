// The float kernels written once over the traits type, compiled for the
// avx2 tier: the shared body is simd/tier_kernels.inc.
#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/simd/f32x16_avx2.h"

#define FOLIO_SIMD_TIER Avx2
#define FOLIO_SIMD_TIER_SUFFIX avx2
#define FOLIO_SIMD_TIER_BEGIN FOLIO_SIMD_BEGIN_AVX2
#include "backend/cpu/simd/tier_kernels.inc"
