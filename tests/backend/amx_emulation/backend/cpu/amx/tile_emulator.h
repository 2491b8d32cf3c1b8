// A scalar model of the AMX tile instructions that the amx/ panels use
// (ldtilecfg, tileloadd, tilestored, tilezero, tdpbssd, tdpbsud, tdpbf16ps,
// tilerelease), per thread: as the Intel SDM states them, tdpbf16ps as
// src/backend/cpu/amx/bf16_tile_model.h measured it. tiles.h beside this file maps the
// intrinsics onto it, so that the panels run on CPUs without AMX
// (tests/backend/amx_emulated_test.cc). A misuse that the hardware would
// fault on or compute differently (a tile used before ldtilecfg, shapes that
// do not match) aborts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/amx/bf16_tile_model.h"

namespace folio::cpu::amx_emulation {

struct TileState {
  bool configured = false;
  uint8_t rows[8] = {};
  uint16_t colsb[8] = {};
  uint8_t data[8][16][64] = {};  // [tile][row][byte]
};

inline thread_local TileState tile_state;
// Tile products (tdpbssd, tdpbf16ps) run so far, all threads.
inline std::atomic<int64_t> tile_products{0};

[[noreturn]] inline void misuse(const char* what) {
  std::fprintf(stderr, "amx emulation: %s\n", what);
  std::abort();
}

// Palette 1: colsb as 16 u16 at byte 16, rows as 16 u8 at byte 48.
inline void load_config(const void* cfg) {
  const auto* c = static_cast<const uint8_t*>(cfg);
  if (c[0] != 1) misuse("palette other than 1");
  TileState& s = tile_state;
  for (int t = 0; t < 8; ++t) {
    std::memcpy(&s.colsb[t], c + 16 + 2 * t, 2);
    s.rows[t] = c[48 + t];
    if (s.colsb[t] > 64 || s.rows[t] > 16) misuse("tile larger than 16 x 64 bytes");
  }
  s.configured = true;
}

inline TileState& configured() {
  if (!tile_state.configured) misuse("tile instruction before ldtilecfg");
  return tile_state;
}

inline void load(int t, const void* base, size_t stride) {
  TileState& s = configured();
  std::memset(s.data[t], 0, sizeof(s.data[t]));
  for (int r = 0; r < s.rows[t]; ++r)
    std::memcpy(s.data[t][r], static_cast<const uint8_t*>(base) + r * stride, s.colsb[t]);
}

inline void store(int t, void* base, size_t stride) {
  TileState& s = configured();
  for (int r = 0; r < s.rows[t]; ++r)
    std::memcpy(static_cast<uint8_t*>(base) + r * stride, s.data[t][r], s.colsb[t]);
}

inline void zero(int t) {
  std::memset(configured().data[t], 0, sizeof(tile_state.data[t]));
}

// tdpbssd: C[m][n] += sum over k, i < 4 of s8(A[m][4k + i]) * s8(B[k][4n + i]);
// tdpbsud (kUnsignedB): the same with u8(B[k][4n + i]).
template <bool kUnsignedB = false>
inline void dpbssd(int c, int a, int b) {
  TileState& s = configured();
  const int m_rows = s.rows[c], n_cols = s.colsb[c] / 4, k_words = s.colsb[a] / 4;
  if (s.rows[a] != m_rows || s.rows[b] != k_words || s.colsb[b] != s.colsb[c]) {
    misuse("tdpbssd / tdpbsud shapes do not match");
  }
  for (int m = 0; m < m_rows; ++m) {
    for (int n = 0; n < n_cols; ++n) {
      int32_t acc;
      std::memcpy(&acc, &s.data[c][m][4 * n], 4);
      for (int k = 0; k < k_words; ++k) {
        for (int i = 0; i < 4; ++i) {
          const uint8_t bv = s.data[b][k][4 * n + i];
          acc += static_cast<int8_t>(s.data[a][m][4 * k + i]) *
                 (kUnsignedB ? static_cast<int32_t>(bv) : static_cast<int8_t>(bv));
        }
      }
      std::memcpy(&s.data[c][m][4 * n], &acc, 4);
    }
  }
  tile_products.fetch_add(1, std::memory_order_relaxed);
}

// tdpbf16ps: C[m][n] (f32) = amx_bf16::dpbf16ps over the pairs k of
// A[m] (bf16 pairs) and column n of B (row k: the pair of column n).
inline void dpbf16ps(int c, int a, int b) {
  TileState& s = configured();
  const int m_rows = s.rows[c], n_cols = s.colsb[c] / 4, k_pairs = s.colsb[a] / 4;
  if (s.rows[a] != m_rows || s.rows[b] != k_pairs || s.colsb[b] != s.colsb[c]) {
    misuse("tdpbf16ps shapes do not match");
  }
  for (int m = 0; m < m_rows; ++m) {
    for (int n = 0; n < n_cols; ++n) {
      uint16_t av[32], bv[32];
      std::memcpy(av, s.data[a][m], 4 * static_cast<size_t>(k_pairs));
      for (int k = 0; k < k_pairs; ++k) std::memcpy(bv + 2 * k, &s.data[b][k][4 * n], 4);
      float acc;
      std::memcpy(&acc, &s.data[c][m][4 * n], 4);
      acc = amx_bf16::dpbf16ps(acc, av, bv, k_pairs);
      std::memcpy(&s.data[c][m][4 * n], &acc, 4);
    }
  }
  tile_products.fetch_add(1, std::memory_order_relaxed);
}

inline void release() {
  tile_state.configured = false;
}

}  // namespace folio::cpu::amx_emulation
