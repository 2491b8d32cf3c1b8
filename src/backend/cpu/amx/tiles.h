// AMX tile plumbing shared by the amx/ panels: the palette-1 tile
// configuration and the compiler barrier around tile instructions.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "core/target.h"

namespace folio::cpu::amx {

// Activation rows per tile group: the rows of an A and of a C tile.
inline constexpr int kGroup = 16;

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Compiler barrier: tile loads and ldtilecfg are asm statements that do not
// tell the compiler which memory they read.
inline void memory_barrier() {
  __asm__ volatile("" ::: "memory");
}

// The layout every amx/ panel uses, double-buffered: tmm0-1 A (`rows`
// activation rows x a_bytes) of up to 2 groups, tmm2-3 B (a_bytes / 4 VNNI
// rows x 64 bytes) of two consecutive steps, tmm4-7 C (`rows` x 16 i32):
// groups 0, 1 of the even step, then of the odd one. rows (1..16) is kGroup
// for full groups; a group of fewer activation rows (a small batch, the
// rows after the last full group) gets A and C tiles of that many rows, so
// the tile loads read only its rows and the products are those rows' dots.
FOLIO_TARGET_AMX inline void configure_tiles_2x2(int a_bytes, int rows = kGroup) {
  TileConfig cfg;
  for (int t = 0; t < 2; ++t) {
    cfg.colsb[t] = static_cast<uint16_t>(a_bytes);
    cfg.rows[t] = static_cast<uint8_t>(rows);
    cfg.colsb[2 + t] = 64;
    cfg.rows[2 + t] = static_cast<uint8_t>(a_bytes / 4);
  }
  for (int t = 4; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = static_cast<uint8_t>(rows);
  }
  memory_barrier();
  _tile_loadconfig(&cfg);
  memory_barrier();
}

// On configure_tiles_2x2: the tile products of step t for G <= 2 groups
// (A_g: the configured rows of xa + g * 16 * xs, stride xs): B of unit t into tmm2 + kOdd,
// C_g into tmm4 + 2 kOdd + g (kOdd = t % 2, so step t + 1 runs in the other
// B and C tiles while step t's C tiles are stored).
// (The tile intrinsics paste their tile numbers into the assembly text:
// literal numbers only.)
// kUnsignedB: B holds unsigned bytes (TDPBSUD), else signed (TDPBSSD).
#define FOLIO_AMX_DP(c, a, b) \
  do {                        \
    if constexpr (kUnsignedB) \
      _tile_dpbsud(c, a, b);  \
    else                      \
      _tile_dpbssd(c, a, b);  \
  } while (0)
template <int G, int kOdd, bool kUnsignedB = false>
FOLIO_TARGET_AMX __attribute__((always_inline)) inline void issue_2x2(const uint8_t* b_tile,
                                                                      const uint8_t* xa,
                                                                      size_t xs) {
  if constexpr (kOdd == 0) {
    _tile_loadd(2, b_tile, 64);
    _tile_loadd(0, xa, xs);
    _tile_zero(4);
    FOLIO_AMX_DP(4, 0, 2);
    if constexpr (G > 1) {
      _tile_loadd(1, xa + kGroup * xs, xs);
      _tile_zero(5);
      FOLIO_AMX_DP(5, 1, 2);
    }
  } else {
    _tile_loadd(3, b_tile, 64);
    if constexpr (G == 1) {  // A double-buffered too: tmm1 is free
      _tile_loadd(1, xa, xs);
      _tile_zero(6);
      FOLIO_AMX_DP(6, 1, 3);
    } else {
      _tile_loadd(0, xa, xs);
      _tile_zero(6);
      FOLIO_AMX_DP(6, 0, 3);
    }
    if constexpr (G > 1) {
      _tile_loadd(1, xa + kGroup * xs, xs);
      _tile_zero(7);
      FOLIO_AMX_DP(7, 1, 3);
    }
  }
}
#undef FOLIO_AMX_DP

// The C tiles of an issue_2x2<G, kOdd> step to c[g] (the configured rows of
// 16 i32).
template <int G, int kOdd>
FOLIO_TARGET_AMX __attribute__((always_inline)) inline void store_2x2(int32_t (*c)[kGroup * 16]) {
  if constexpr (kOdd == 0) {
    _tile_stored(4, c[0], 64);
    if constexpr (G > 1) _tile_stored(5, c[1], 64);
  } else {
    _tile_stored(6, c[0], 64);
    if constexpr (G > 1) _tile_stored(7, c[1], 64);
  }
}

}  // namespace folio::cpu::amx
