// AMX tile plumbing shared by the amx/ panels: the palette-1 tile
// configuration and the compiler barrier around tile instructions.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

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

// The layout every amx/ panel uses: tmm0-2 A (16 activation rows x a_bytes
// quants) of up to 3 groups, tmm3 B (a_bytes / 4 VNNI rows x 64 signed
// weight values: 4 of each of 16 panel rows), tmm4-6 C (16 x 16 i32) per
// group. a_bytes is the K of one tile product (16, 32 or 64).
FOLIO_TARGET_AMX inline void configure_tiles(int a_bytes) {
  TileConfig cfg;
  for (int t = 0; t < 3; ++t) {
    cfg.colsb[t] = static_cast<uint16_t>(a_bytes);
    cfg.rows[t] = kGroup;
    cfg.colsb[4 + t] = 64;
    cfg.rows[4 + t] = kGroup;
  }
  cfg.colsb[3] = 64;
  cfg.rows[3] = static_cast<uint8_t>(a_bytes / 4);
  memory_barrier();
  _tile_loadconfig(&cfg);
  memory_barrier();
}

// The double-buffered layout: tmm0-1 A (16 activation rows x a_bytes) of up
// to 2 groups, tmm2-3 B (a_bytes / 4 VNNI rows x 64 bytes) of two
// consecutive steps, tmm4-7 C (16 x 16 i32): groups 0, 1 of the even step,
// then of the odd one.
FOLIO_TARGET_AMX inline void configure_tiles_2x2(int a_bytes) {
  TileConfig cfg;
  for (int t = 0; t < 2; ++t) {
    cfg.colsb[t] = static_cast<uint16_t>(a_bytes);
    cfg.rows[t] = kGroup;
    cfg.colsb[2 + t] = 64;
    cfg.rows[2 + t] = static_cast<uint8_t>(a_bytes / 4);
  }
  for (int t = 4; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = kGroup;
  }
  memory_barrier();
  _tile_loadconfig(&cfg);
  memory_barrier();
}

}  // namespace folio::cpu::amx
