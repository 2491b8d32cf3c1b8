// The float kernels written once over the traits type, compiled for the
// avx512 tier: the shared body is simd/tier_kernels.inc.
//
// Float weights (F32, F16, BF16) x F32 activations (simd/mul_mat_float.h)
// on simd::Avx512, one zmm per 16-lane accumulator. Shapes:
//   decode (M = 1): one weight row per tile where decode_streams() is 1,
//     without software prefetch (the rows stream as one sequential read);
//     else 4 rows;
//   narrow (M < 8): 4 weight rows x 4 activation rows: each step of 16
//     elements loads (and widens) 4 W vectors and 4 X vectors for 16 FMAs
//     into 16 independent accumulators, so loads stay at half the FMA count;
//   wide (M >= 8): 6 weight rows x 4 activation rows, 24 accumulators:
//     batched decode is compute-bound, and the activation rows stream from
//     L2 once per row tile, a third as often as with 4 rows;
//   panel (F16 / BF16, M >= 16): strips of 6 weight rows widened once per
//     512-element K chunk into an L1 scratch that tiles of 4 activation rows
//     read; below 16 rows the extra store per widened vector costs more than
//     it saves.
#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/simd/f32x16_avx512.h"

#define FOLIO_SIMD_TIER Avx512
#define FOLIO_SIMD_TIER_SUFFIX avx512
#define FOLIO_SIMD_TIER_BEGIN FOLIO_SIMD_BEGIN_AVX512
// Decode 4 rows; from 8 activation rows the wide tile; panels from 16.
#define FOLIO_SIMD_FLOAT_SHAPES simd::FloatShapes<4, 8, 4, 4, false, 6, 4, false, 16, 6, 4>
#include "backend/cpu/simd/tier_kernels.inc"
