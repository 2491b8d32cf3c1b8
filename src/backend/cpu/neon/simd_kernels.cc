// The float kernels written once over the traits type, compiled for the
// neon tier: the shared body is simd/tier_kernels.inc.
#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/simd/f32x16_neon.h"

#define FOLIO_SIMD_TIER Neon
#define FOLIO_SIMD_TIER_SUFFIX neon
#define FOLIO_SIMD_TIER_BEGIN FOLIO_SIMD_BEGIN_NEON
#include "backend/cpu/simd/tier_kernels.inc"
