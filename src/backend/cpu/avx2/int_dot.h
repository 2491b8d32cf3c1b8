// The two ways the AVX2 quantized panels (packed_legacy.cc,
// packed_kquant.cc) take byte dot products on 8 i32 lanes, as a policy type
// D the panel templates take:
//   Maddubs      plain AVX2: vpmaddubsw (u8 x s8 pairs to i16) then vpmaddwd
//                to i32; the kernels bound their i16 sums so none saturates.
//   Vnni<E>      vpdpbusd / vpdpwssd on ymm registers: 4 byte products (or 2
//                i16 products) added to each i32 lane in one instruction,
//                exact. E picks the encoding of the same operation: VEX
//                (AVX-VNNI: Alder Lake and later Intel client chips, Zen 5)
//                or EVEX (AVX-512 VNNI with VL, e.g. Zen 4, Ice Lake), so
//                every CPU that has a 256-bit form runs the same kernel.
// The instructions are written as inline assembly, which names its
// encoding: the templates need no target attribute beyond AVX2, and the
// two encodings are one instantiation each. Both policies produce the same
// integers, so every tier gives the same bits.
#pragma once

#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/packed/packed_kernels.h"

namespace folio::cpu::avx2 {

enum class VnniEncoding { kVex, kEvex };

struct Maddubs {
  static constexpr bool kVnni = false;
};

// acc = INSN(acc, a, b) on ymm registers, in Vnni<E>'s encoding.
#define FOLIO_AVX2_VNNI(E, INSN, acc, a, b)                                \
  do {                                                                     \
    if constexpr (E == VnniEncoding::kVex) {                               \
      asm("%{vex%} " INSN " %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));     \
    } else {                                                               \
      asm("%{evex%} " INSN " %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));    \
    }                                                                      \
  } while (false)

template <VnniEncoding E>
struct Vnni {
  static constexpr bool kVnni = true;

  // acc.i32[n] += sum over j < 4 of u.u8[4n + j] * s.i8[4n + j].
  FOLIO_INLINE_AVX2 __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
    FOLIO_AVX2_VNNI(E, "vpdpbusd", acc, u, s);
    return acc;
  }

  // acc.i32[n] += a.i16[2n] * b.i16[2n] + a.i16[2n + 1] * b.i16[2n + 1].
  FOLIO_INLINE_AVX2 __m256i dpwssd(__m256i acc, __m256i a, __m256i b) {
    FOLIO_AVX2_VNNI(E, "vpdpwssd", acc, a, b);
    return acc;
  }
};

using VnniVex = Vnni<VnniEncoding::kVex>;
using VnniEvex = Vnni<VnniEncoding::kEvex>;

// f(policy) for the policy `dot` names (packed_kernels.h): f is called
// with a Maddubs, VnniVex or VnniEvex value.
template <typename F>
auto with_dot(Avx2Dot dot, F&& f) {
  switch (dot) {
    case Avx2Dot::kVnniVex: return f(VnniVex{});
    case Avx2Dot::kVnniEvex: return f(VnniEvex{});
    case Avx2Dot::kMaddubs: break;
  }
  return f(Maddubs{});
}

// Lane n = [lo16(a_n), lo16(b_n)] as an i16 pair (a, b: i32 lanes whose
// values fit in i16).
FOLIO_INLINE_AVX2 __m256i pair16(__m256i a, __m256i b) {
  return _mm256_blend_epi16(a, _mm256_slli_epi32(b, 16), 0xAA);
}

}  // namespace folio::cpu::avx2
