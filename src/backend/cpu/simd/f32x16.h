// The ISA traits type: one float kernel body, written once over a 16-lane
// f32 vector, compiled for every SIMD tier of the build.
//
// Contract. A traits type S (simd::Avx2, simd::Avx512, simd::Neon; one header
// each: f32x16_avx2.h, f32x16_avx512.h, f32x16_neon.h) has
//   S::kLanes = 16            lanes per vector, the same on every tier, so a
//                             loop's step and tail are the same code everywhere
//   S::kTier, S::kName        the KernelTier and the name suffix ("avx2", ...)
//   S::kHasExpfLibm           whether expf_libm (below) exists
//   S::V                      16 f32 lanes: AVX-512 one __m512; AVX2 two __m256
//                             halves (lanes 0-7, 8-15); NEON four float32x4_t
//                             (lanes 0-3, 4-7, 8-11, 12-15)
//   S::M                      which lanes of a V are live (a tail): first(n)
// and these static functions, each lane-wise unless said otherwise:
//   zero() set1(x) load(p) store(p, v)       full 16 lanes, unaligned
//   first(n)                                 lanes [0, min(n, 16)) live
//   load(p, m) store(p, v, m)                masked: dead lanes read as 0 and
//                                            are never read or written in memory
//   keep(v, m)                               dead lanes set to 0
//   select(m, a, b)                          a in live lanes, b in dead ones
//   add sub mul div min max                  one rounding each, IEEE; min /
//                                            max with a NaN first operand
//                                            differ (x86: the second operand,
//                                            NEON: NaN), so a body passes the
//                                            value that may be NaN second
//   fma(a, b, c)                             a * b + c, one rounding
//   fnma(a, b, c)                            c - a * b, one rounding
//   exp(v)                                   a 2-ulp exp (same bits on every
//                                            tier, see below)
//   expf_libm(v, f)                          (where S::kHasExpfLibm: AVX-512)
//                                            libm's expf bits in every lane,
//                                            f (the scalar expf) where the
//                                            vector path cannot settle them
//                                            (avx512/simd.h)
//   exp_normal(v)                            exp, but 0 where the result would
//                                            be subnormal (x < kExpNormalFloor):
//                                            for values that feed long FMA
//                                            chains, where each subnormal
//                                            operand costs a microcode assist
//   hsum(v) hmax(v)                          one float from 16 lanes
//   S::I: 16 int32 lanes, for the activation quantizers:
//   max_abs(acc, x)                          max(acc, |x|), a NaN x keeps acc
//   first_abs_equal(x, a)                    first lane with |x| == a, or -1
//   round_away_i8(v)                         roundf, clamped to [-128, 127]
//   round_even_max127(v)                     nearest even, at most 127
//                                            (both: NaN -> 0)
//   add(i, j) hsum(i) store_i8(p, i)         int32 sum; lanes as 16 bytes
//   round_f16(x)                             a float rounded to f16 and back
//   store_f16(p, v)                          16 lanes rounded to f16 (RNE,
//                                            NaN quieted: core/fp16.h) at p
//   For simd/mul_mat_float.h (x86 tiers; NEON keeps its own mul_mat) and
//   simd/flash_attn.h (every tier):
//   S::Part, S::kParts, join(parts)          V as kParts registers of
//                                            Part::kLanes lanes (AVX2: two
//                                            8-lane halves, AVX-512: one,
//                                            NEON: four quarters); Part has
//                                            zero set1 load store mul fma
//                                            load_f16(p) load_bf16(p)
//                                            load_i8(p) (Part::kLanes int8,
//                                            exactly), load_first(p, n)
//                                            load_f16_first(p, n) (the first
//                                            0 < n < Part::kLanes values,
//                                            dead lanes 0, never read)
//   load_f16(p) load_bf16(p)                 (AVX-512) 16 widened values
//   hsums(a)                                 a Part::V whose lane L is
//                                            hsum(a[L]), L < Part::kLanes:
//                                            the same tree, all at once
//   abs(v) copysign(a, b)                    sign-bit operations
//   widen_f16(h)                             the f16 h as a float (exact)
//   For simd/rope.h: S::D, D::kLanes doubles (the tier's f64 register
//   width: AVX-512 8, AVX2 4, NEON 4 in two q registers) with + - *, and
//   load_d(p) widen(p) narrow(p, d)          D::kLanes doubles; floats
//                                            widened; rounded once to float
//   widen_pairs(p, &even, &odd)              2 D::kLanes floats split into
//   narrow_pairs(p, even, odd)               even / odd elements, and back
// and V has the operators + - * / for add sub mul div.
//
// Same bits on every tier: lane i of every operation does the same IEEE
// operation on every tier, and the reductions combine lanes in one fixed
// order, AVX-512's: lanes i and i + 8, then i and i + 4, i and i + 2, i and
// i + 1 (hsum); AVX2 adds its two halves first and NEON its q registers
// (0 + 2, 1 + 3, then the two) to get there. exp is the Cody-Waite, degree-7
// Taylor exp of each tier, which give the same bits (AVX-512 scales by 2^n
// with vscalefps, the others by two exact power-of-two factors: both round
// once). A kernel written over S thus gives the same bytes on each tier
// (written with the operators, not FMA: the regions switch contraction off).
//
// Adding an op: a static function in each of the three headers (same lane
// semantics on all three; a reduction in the fixed order above), listed
// here. An op that cannot give the same bits on every tier (a hardware
// approximation, another reduction order) does not belong here.
//
// Compiling a kernel body per tier. The body is a header of templates over
// S (e.g. simd/norm.h), with no target attribute of its own. A tier's
// simd_kernels.cc (avx2/, avx512/, neon/) includes the standard and project
// headers first, then the body headers between FOLIO_SIMD_BEGIN_<TIER> and
// FOLIO_SIMD_END: GCC's `#pragma GCC target` gives every function defined
// in between (templates, their lambdas) that tier's instructions, so the
// always_inline traits functions inline into them; code defined outside
// (the standard library, the drivers under drivers/) keeps the baseline and
// cannot leak AVX into shared inline functions. Then it explicitly
// instantiates the entry points for its S (FOLIO_SIMD_INSTANTIATE, simd/
// kernels.h), and the tier's register_*.cc calls register_simd_kernels<S>
// (simd/kernels.h): the one list of these kernels, their names and
// `supports`. Rules for a body header: only templates over S (a non-template
// function compiled in two tiers' regions would be one symbol with two
// targets); no standard headers inside the region. NEON's region sets
// only the FP contraction (below). SimdTiers.Avx2AndAvx512GiveTheSameBytes
// (tests/backend/simd_elementwise_test.cc) checks the bytes across tiers.
#pragma once

#include <cstdint>

namespace folio::cpu::simd {
// exp_normal's floor: the float just above ln(FLT_MIN) = -87.3365447...,
// so every x at or above it has a normal e^x.
inline constexpr float kExpNormalFloor = -87.33654f;
}  // namespace folio::cpu::simd

// fp-contract=off in the region: GCC would otherwise fuse a * b + c written
// with the operators into one FMA where its optimiser happens to see both,
// which differs between tiers (and from the reference); S::fma is the one
// fused operation.
#if defined(__x86_64__)
#define FOLIO_SIMD_BEGIN_AVX2                                          \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")") \
      _Pragma("GCC optimize(\"fp-contract=off\")")
#define FOLIO_SIMD_BEGIN_AVX512                                                                 \
  _Pragma("GCC push_options") _Pragma(                                                          \
      "GCC target(\"avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16\")") \
      _Pragma("GCC optimize(\"fp-contract=off\")")
#else
#define FOLIO_SIMD_BEGIN_NEON \
  _Pragma("GCC push_options") _Pragma("GCC optimize(\"fp-contract=off\")")
#endif
#define FOLIO_SIMD_END _Pragma("GCC pop_options")
