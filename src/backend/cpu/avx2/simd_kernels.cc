// The float kernels written once over the traits type, compiled for the
// avx2 tier: the shared body is simd/tier_kernels.inc.
//
// Float weights (F32, F16, BF16) x F32 activations (simd/mul_mat_float.h)
// on simd::Avx2, whose 16-lane accumulator is two ymm parts (lanes 0-7,
// 8-15): AVX-512's arithmetic lane for lane, so the two tiers give the same
// bits. Shapes:
//   decode (M = 1): both parts at once (two FMA chains per output), one
//     weight row per tile where decode_streams() is 1, else 4;
//   tile (M 2 .. 15, and F32 beyond): 4 weight rows x 3 activation rows,
//     the parts in turn over blocks of 256 elements (12 accumulators, 7
//     loads per 12 FMAs);
//   panel (F16 / BF16, M >= 16): strips of 4 weight rows widened once per
//     K chunk, tiles of 4 weight rows x 3 activation rows, the parts in turn
//     (12 accumulators, 7 loads per 12 FMAs, no conversions).
#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/simd/f32x16_avx2.h"

#define FOLIO_SIMD_TIER Avx2
#define FOLIO_SIMD_TIER_SUFFIX avx2
#define FOLIO_SIMD_TIER_BEGIN FOLIO_SIMD_BEGIN_AVX2
// Decode 4 rows; from 8 activation rows the wide tile; panels from 16.
#define FOLIO_SIMD_FLOAT_SHAPES simd::FloatShapes<4, 8, 4, 3, true, 4, 3, true, 16, 4, 3>
#include "backend/cpu/simd/tier_kernels.inc"
