// The float kernels written once over the traits type, compiled for the
// avx512 tier: the shared body is simd/tier_kernels.inc.
#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/simd/f32x16_avx512.h"

#define FOLIO_SIMD_TIER Avx512
#define FOLIO_SIMD_TIER_SUFFIX avx512
#define FOLIO_SIMD_TIER_BEGIN FOLIO_SIMD_BEGIN_AVX512
#include "backend/cpu/simd/tier_kernels.inc"
