// What the SIMD tiers' quantized mul_mat tile files (avx2/, avx512/, neon/
// mul_mat_quant.cc and friends) share around their instruction-specific
// inner loops: the DotTileFn that dispatches a (rows, columns) remainder to
// a fixed-shape template instance, the lookup from a weight type to its
// tile among the types a file handles, the row pointers of a tile, the
// format facts of the 32-element blocks and the scalar unpacking of the
// K-quant scale bytes (quant/blocks.h). Portable code: no target attribute;
// the tiles the tables point at carry their tier's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/cpu/drivers/dtype_switch.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "quant/blocks.h"
#include "tensor/dtype.h"

namespace folio::cpu {

// A tile of a fixed shape: dot_tile_table's entries (DotTileFn without nr, nc).
using FixedTileFn = void (*)(int64_t k, const void* w, size_t w_stride, const void* x,
                             size_t x_stride, float* out, size_t out_stride);

namespace quant_tile_detail {
template <template <int, int> class Tile, int Cols, int... I>
constexpr std::array<FixedTileFn, sizeof...(I)> table(std::integer_sequence<int, I...>) {
  return {Tile<I / Cols + 1, I % Cols + 1>::run...};
}
}  // namespace quant_tile_detail

// A DotTileFn that runs Tile<nr, nc>::run (a FixedTileFn), for
// 1 <= nr <= Rows and 1 <= nc <= Cols.
template <template <int, int> class Tile, int Rows, int Cols>
void dot_tile_table(int64_t k, const void* w, size_t w_stride, int nr, const void* x,
                    size_t x_stride, int nc, float* out, size_t out_stride) {
  static constexpr std::array<FixedTileFn, Rows * Cols> kFns =
      quant_tile_detail::table<Tile, Cols>(std::make_integer_sequence<int, Rows * Cols>{});
  kFns[static_cast<size_t>((nr - 1) * Cols + (nc - 1))](k, w, w_stride, x, x_stride, out,
                                                        out_stride);
}

namespace quant_tile_detail {
template <typename Pick, DType W>
struct Picked {
  template <int R, int C>
  struct Shape {
    static constexpr FixedTileFn run = Pick{}(DTypeConstant<W>{}, std::integral_constant<int, R>{},
                                              std::integral_constant<int, C>{});
  };
};
}  // namespace quant_tile_detail

// The Rows x Cols dot_tile_table of weight type w if w is one of Ws, else
// nullptr; pick(w, r, c) (a captureless lambda over compile-time constants)
// names the tile of each shape.
template <int Rows, int Cols, DType... Ws, typename Pick>
DotTileFn dot_tile_for(DType w, Pick) {
  return dtype_switch<Ws...>(w, [](auto wt) -> DotTileFn {
    return &dot_tile_table<quant_tile_detail::Picked<Pick, decltype(wt)::value>::template Shape,
                           Rows, Cols>;
  });
}

// The format facts of the 32-element block types the integer tiles read:
// the block struct, the offset of unsigned codes (value = d * (code -
// offset)), whether a minimum m follows the scale (value = d * code + m),
// whether the codes are signed bytes (Q8_0 quants, IQ4_NL levels).
template <DType WT>
struct LegacyFormat;
template <>
struct LegacyFormat<DType::Q8_0> {
  using Block = quant::BlockQ8_0;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = false, kSigned = true;
};
template <>
struct LegacyFormat<DType::Q4_0> {
  using Block = quant::BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr bool kMin = false, kSigned = false;
};
template <>
struct LegacyFormat<DType::Q5_0> {
  using Block = quant::BlockQ5_0;
  static constexpr int kOffset = 16;
  static constexpr bool kMin = false, kSigned = false;
};
template <>
struct LegacyFormat<DType::Q4_1> {
  using Block = quant::BlockQ4_1;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = true, kSigned = false;
};
template <>
struct LegacyFormat<DType::Q5_1> {
  using Block = quant::BlockQ5_1;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = true, kSigned = false;
};
template <>
struct LegacyFormat<DType::IQ4_NL> {
  using Block = quant::BlockIQ4_NL;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = false, kSigned = true;
};

// p[r] = the row at base + r * stride, as a T*.
template <typename T, int R>
inline void tile_row_ptrs(const void* base, size_t stride, const T* (&p)[R]) {
  for (int r = 0; r < R; ++r) {
    p[r] = reinterpret_cast<const T*>(static_cast<const unsigned char*>(base) + r * stride);
  }
}

// The C activation rows at x + c * stride, as Q8Row32 rows of k elements.
template <int C>
inline void tile_q8_rows(const void* x, size_t stride, int64_t k, Q8Row32 (&xr)[C]) {
  for (int c = 0; c < C; ++c) xr[c] = q8row32(static_cast<const unsigned char*>(x) + c * stride, k);
}

// Asks for the cache lines of [p, p + N) in L1 (prefetcht0, prfm
// pldl1keep), one request per 64 bytes, so spans visited back to back (a
// stream) request every line of the stream. The mat-vec tiles ask for the
// next tile's weight rows while they compute on their own: a decode step
// streams each weight once, and the hardware prefetchers alone left the
// loads waiting on memory.
template <size_t N>
__attribute__((always_inline)) inline void prefetch_span(const void* p) {
  for (size_t off = 0; off < N; off += 64) {
    __builtin_prefetch(static_cast<const char*>(p) + off, 0, 3);
  }
}

// The rows a quantized tile reads: R weight rows of blocks WB (unsigned
// char where the tile walks the bytes itself) and C activation rows XRow:
// `const BlockQ8_K*` for the super-block types, Q8Row32 (k elements) for
// the 32-element ones.
template <typename WB, typename XRow, int R, int C>
struct QuantTileRows {
  const WB* w[R];
  XRow x[C];
  size_t pf;  // bytes from a weight row to the same place in the next tile's

  QuantTileRows(int64_t k, const void* wp, size_t w_stride, const void* xp, size_t x_stride)
      : pf(R * w_stride) {
    tile_row_ptrs(wp, w_stride, w);
    if constexpr (std::is_same_v<XRow, Q8Row32>) {
      tile_q8_rows(xp, x_stride, k, x);
    } else {
      tile_row_ptrs(xp, x_stride, x);
    }
  }
  // Asks for N bytes from p, moved to the next tile's rows.
  template <size_t N>
  __attribute__((always_inline)) void prefetch_next(const void* p) const {
    prefetch_span<N>(static_cast<const char*>(p) + pf);
  }
  // Asks for block i of each of the next tile's weight rows.
  __attribute__((always_inline)) void prefetch(int64_t i) const {
    for (int r = 0; r < R; ++r) prefetch_next<sizeof(WB)>(w[r] + i);
  }
};

// acc[r][c] = 0 for a tile's accumulators of any tier's vector type.
template <typename V, int R, int C>
__attribute__((always_inline)) inline void zero_tile(V (&acc)[R][C]) {
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = V{};
  }
}

// The 8 six-bit scales and mins of a Q4_K / Q5_K super-block, as bytes
// (bytes 0-3 / 4-7 hold scales / mins 0-3 in their low 6 bits and the top
// 2 bits of scales / mins 4-7; bytes 8-11 the low nibbles of scales 4-7
// and, above them, of mins 4-7).
struct K4ScalesMins {
  uint64_t scales;
  uint64_t mins;
};

inline K4ScalesMins unpack_k4_scales(const uint8_t* s) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t sc_lo = a & 0x3F3F3F3F;
  const uint32_t sc_hi = (c & 0x0F0F0F0F) | ((a >> 2) & 0x30303030);
  const uint32_t mn_lo = b & 0x3F3F3F3F;
  const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0F) | ((b >> 2) & 0x30303030);
  return {static_cast<uint64_t>(sc_hi) << 32 | sc_lo, static_cast<uint64_t>(mn_hi) << 32 | mn_lo};
}

// The 16 unsigned 6-bit Q3_K scales (subtract 32 for the signed value) as
// bytes, 4 per word in little-endian order: scale j has the low nibble of
// byte j % 8 (high nibble for j >= 8) and bits 2 * (j / 4) of byte
// 8 + j % 4 as bits 4-5.
inline std::array<uint32_t, 4> unpack_q3_k_scales(const uint8_t* s) {
  uint32_t a0, a1, t;
  std::memcpy(&a0, s, 4);
  std::memcpy(&a1, s + 4, 4);
  std::memcpy(&t, s + 8, 4);
  const uint32_t m4 = 0x0F0F0F0F, m2 = 0x03030303;
  return {(a0 & m4) | ((t & m2) << 4), (a1 & m4) | (((t >> 2) & m2) << 4),
          ((a0 >> 4) & m4) | (((t >> 4) & m2) << 4), ((a1 >> 4) & m4) | (((t >> 6) & m2) << 4)};
}

// The 8 signed 6-bit IQ4_XS group scales (minus 32) of a super-block.
template <typename Block>
inline void unpack_iq4_xs_scales(const Block& b, int16_t (&sc)[8]) {
  for (int g = 0; g < 8; ++g) {
    const int lo = (b.scales_l[g / 2] >> (4 * (g % 2))) & 0xF;
    const int hi = (b.scales_h >> (2 * g)) & 3;
    sc[g] = static_cast<int16_t>((lo | hi << 4) - 32);
  }
}

}  // namespace folio::cpu
