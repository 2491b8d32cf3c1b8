// The AMX panel driver every packed layout shares: mul_mat_amx.cc's
// 32-element layouts and packed_kquant_amx.cc's K-quants and IQ4_XS differ
// only in how a panel's codes become tile bytes, where a step's activation
// quants lie and what the vector side does with a C tile; this file runs
// the tiles around them.
//
// Steps: a panel call walks K in steps of L::kStepK elements (one B tile of
// kStepK / 4 VNNI rows x 64 bytes against up to 2 A tiles of 16 activation
// rows x kStepK bytes: TDPBSSD, one per group). Codes are unpacked into
// tile bytes a chunk of L::kChunkK elements at a time (16 x kChunkK bytes,
// one or more steps).
//
// Rows: a call of at most 16 rows (a single pass) unpacks each chunk just
// before its first step's tile product, into a ring of L::kRingChunks
// chunks that stays in L1. Larger calls unpack the whole panel once into
// per-thread scratch (16 x K bytes) shared by all their activation rows,
// then run groups of 16 (two per pass) and one group of the 1..15 rows
// left, on A and C tiles configured with that many rows (ldtilecfg again
// when the row count changes). Without scratch memory the rows left go to
// the panel of the tier below (L::below()).
//
// Pipeline: the B and C tiles are double-buffered (even and odd steps), so
// step t issues its tile products, stores step t - 1's C tiles (done
// meanwhile) and runs the vector work on step t - 2's from memory: the
// tile unit does not wait for stores, nor the vector loads for tile
// results. Two groups, not three, so that the double buffers fit the 8
// tiles (tiles.h configure_tiles_2x2, issue_2x2 / store_2x2).
//
// Each thread configures its tiles at the start of a panel call and
// releases them at its end (tilerelease); the OS grants the tile state
// once per process (core/cpu_features.cc, arch_prctl).
//
// A layout L gives:
//   kStepK, kChunkK, kRingChunks       as above (kChunkK a multiple of kStepK)
//   kChunkBytes                        panel bytes of one chunk
//   unpack(panel, n_chunks, dst)       tile bytes of n_chunks chunks
//   a_tile(x, t)                       step t's A operand in activation row x
//   below()                            the PanelFn of the tier below
//   Acc<G>                             the vector side of G groups of `rows`
//                                      rows: Acc(x, xs, rows, k); step(panel,
//                                      t, c_rows, x, xs) with step t's C tiles
//                                      (c_rows[g]: rows x 16 i32); acc[g]:
//                                      rows x 16 results, 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/packed/packed_mul_mat.h"
#include "core/target.h"

namespace folio::cpu::amx {

// B tile bytes of a step and of an unpacked chunk of layout L.
template <class L>
inline constexpr size_t kStepTileBytes = static_cast<size_t>(L::kStepK) * 16;
template <class L>
inline constexpr size_t kChunkTileBytes = static_cast<size_t>(L::kChunkK) * 16;

// G groups of `rows` activation rows (G <= 2; G == 2: rows == 16; on tiles
// configured for `rows`) against one panel, in the three pipeline stages.
// B tiles: step t at b_tiles + t * kStepTileBytes (the unpacked panel), or,
// kRing (a call's only pass over the panel), its chunk unpacked at the
// chunk's first step into slot chunk % kRingChunks of the ring at b_tiles.
template <class L, int G, bool kRing>
FOLIO_TARGET_AMX void panel_groups(int64_t k, uint8_t* b_tiles, const uint8_t* panel,
                                   const uint8_t* x, size_t xs, int rows, uint8_t* out, size_t os,
                                   __mmask16 mask) {
  constexpr int64_t kStepsPerChunk = L::kChunkK / L::kStepK;
  static_assert(kStepsPerChunk * L::kStepK == L::kChunkK);
  alignas(64) int32_t c_rows[3][G][kGroup * 16];
  typename L::template Acc<G> acc(x, xs, rows, k);
  const int64_t n = k / L::kStepK;
  for (int64_t t = 0; t < n + 2; ++t) {
    if (t < n) {
      const uint8_t* b_tile = b_tiles + t * kStepTileBytes<L>;
      if constexpr (kRing) {
        const int64_t chunk = t / kStepsPerChunk, s = t % kStepsPerChunk;
        uint8_t* slot = b_tiles + (chunk % L::kRingChunks) * kChunkTileBytes<L>;
        if (s == 0) L::unpack(panel + chunk * L::kChunkBytes, 1, slot);
        b_tile = slot + s * kStepTileBytes<L>;
      }
      const uint8_t* xa = L::a_tile(x, t);
      if (t & 1) {
        issue_2x2<G, 1>(b_tile, xa, xs);
      } else {
        issue_2x2<G, 0>(b_tile, xa, xs);
      }
    }
    if (t >= 1 && t <= n) {
      if ((t - 1) & 1) {
        store_2x2<G, 1>(c_rows[(t - 1) % 3]);
      } else {
        store_2x2<G, 0>(c_rows[(t - 1) % 3]);
      }
    }
    if (t >= 2) acc.step(panel, t - 2, c_rows[(t - 2) % 3], x, xs);
  }
  for (int g = 0; g < G; ++g) {
    for (int i = 0; i < rows; ++i) {
      _mm512_mask_storeu_ps(out + (g * kGroup + i) * os, mask, _mm512_load_ps(acc.acc[g] + 16 * i));
    }
  }
}

// The PanelFn of layout L on the tiles (packed/packed_mul_mat.h: nc
// activation rows at x, stride xs; nr <= 16 panel rows into out, stride os).
template <class L>
FOLIO_TARGET_AMX void packed_panel(int64_t k, const void* panel, const void* x, size_t xs, int nc,
                                   int nr, float* out, size_t os) {
  const auto* p = static_cast<const uint8_t*>(panel);
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* ob = reinterpret_cast<uint8_t*>(out);
  int done = 0;
  const __mmask16 mask = static_cast<__mmask16>((1u << nr) - 1);
  if (nc <= kGroup) {  // one pass: the chunks unpacked as the tiles take them
    alignas(64) uint8_t ring[L::kRingChunks * kChunkTileBytes<L>];
    configure_tiles_2x2(L::kStepK, nc);
    panel_groups<L, 1, true>(k, ring, p, xb, xs, nc, ob, os, mask);
    _tile_release();
    return;
  }
  // No scratch memory: every row through the panel below.
  auto* b_tiles = static_cast<uint8_t*>(packed_thread_scratch(2, static_cast<size_t>(k) * 16));
  if (b_tiles != nullptr) {
    L::unpack(p, k / L::kChunkK, b_tiles);
    int configured = 0;  // A and C tile rows of the loaded configuration
    while (done < nc) {
      const int left = nc - done, rows = left < kGroup ? left : kGroup;
      if (rows != configured) {
        configure_tiles_2x2(L::kStepK, rows);
        configured = rows;
      }
      const uint8_t* xg = xb + static_cast<size_t>(done) * xs;
      uint8_t* og = ob + static_cast<size_t>(done) * os;
      if (left >= 2 * kGroup) {
        panel_groups<L, 2, false>(k, b_tiles, p, xg, xs, kGroup, og, os, mask);
        done += 2 * kGroup;
      } else {
        panel_groups<L, 1, false>(k, b_tiles, p, xg, xs, rows, og, os, mask);
        done += rows;
      }
    }
    // Back to the init state: the OS need not save 8 KB of tiles on every
    // context switch of this thread until its next tile work.
    _tile_release();
  }
  if (done < nc) {
    L::below()(k, panel, xb + done * xs, xs, nc - done, nr,
               reinterpret_cast<float*>(ob + done * os), os);
  }
}

}  // namespace folio::cpu::amx
