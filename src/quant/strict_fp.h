// Include LAST in a scalar reference translation unit: the reference results
// are bit-exact with the gguf package, which rounds after every f32 operation.
// A compiler allowed to fuse a*b+c into one FMA (GCC contracts by default
// whenever the target has FMA) would change the last bit, so contraction is
// switched off for the rest of the including file.
#pragma once

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
