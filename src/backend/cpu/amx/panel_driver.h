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
// Rows: a call of at most 16 rows (a single pass) unpacks its chunks as it
// goes, into a ring of L::kRingChunks chunks that stays in L1, each chunk
// kRingChunks - 1 chunks ahead of its tile products (a tile load of bytes
// still in the store buffer waits for the stores to drain: unpacking each
// chunk just before its products made 8 rows of Q4_0, K = 2048, ~1.4x
// slower), or, for a layout with kInPlaceB, reads the
// stored blocks as B tiles in place; either way it prefetches the panel
// ahead (prefetch_chunk). Larger calls unpack the whole panel once into
// per-thread scratch (16 x K bytes) shared by all their activation rows,
// then run groups of 16 (two per pass) and one group of the 1..15 rows
// left, on A and C tiles configured with that many rows (ldtilecfg again
// when the row count changes). A layout with a register form of its vector
// side (Rows, below) runs each full group of 16 alone instead, and a
// single pass of 8 to 16 rows, its accumulators in registers: the float
// step of a 32-element block is about as long as its tile work, and
// accumulators in memory add a load and a store per row and block to it.
// Without scratch memory the rows left go to the panel of the tier below
// (L::below()).
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
//   kInPlaceB, Acc<G, true>            optional (below)
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/packed/packed_mul_mat.h"
#include "core/target.h"

namespace folio::cpu::amx {

// Optional layout flag kInPlaceB: each panel block's first bytes are its B
// tile as stored, in unsigned bytes (kStepK == kChunkK), so a single-pass
// call reads them in place at t * kChunkBytes with TDPBSUD instead of
// unpacking signed bytes into the ring, and its vector side is
// L::Acc<G, true> (which corrects for the unsigned codes).
template <class L>
inline constexpr bool kInPlaceB = requires { requires L::kInPlaceB; };

// Where panel_groups finds step t's B tile.
enum class BSource {
  kScratch,  // the unpacked panel: b_tiles + t * kStepTileBytes
  kRing,     // a single pass: chunk c (steps c * steps-per-chunk on) unpacked into slot
             // c % kRingChunks of the ring at b_tiles at the first step of chunk
             // c - (kRingChunks - 1) (the first kRingChunks - 1 at step 0)
  kInPlace,  // a single pass, kInPlaceB: the panel's bytes at t * kChunkBytes
};

// A single-pass call (kRing, kInPlace) streams its panel from memory once,
// and a tile load or an unpack waits for its bytes. When chunk c is first
// read: two prefetch streams, chunk c of the next panel (panels of a call
// are adjacent; a prefetch never faults) into L2, so that two streams are
// in flight as in the decode functions' four, and the chunk about 4 KB
// ahead in this panel into L1. (The addresses may lie past the
// allocation: they are formed as integers, never as pointers into it.)
template <class L>
FOLIO_TARGET_AMX __attribute__((always_inline)) inline void prefetch_chunk(const uint8_t* panel,
                                                                           int64_t c,
                                                                           int64_t n_chunks) {
  constexpr uintptr_t kAhead = L::kChunkBytes >= 4096 ? 1 : 4096 / L::kChunkBytes;
  const uintptr_t base =
      reinterpret_cast<uintptr_t>(panel) + static_cast<uintptr_t>(c) * L::kChunkBytes;
  const uintptr_t next = base + static_cast<uintptr_t>(n_chunks) * L::kChunkBytes;
  const uintptr_t ahead = base + kAhead * L::kChunkBytes;
  for (uintptr_t o = 0; o < L::kChunkBytes; o += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(next + o), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(ahead + o), _MM_HINT_T0);
  }
}

template <class L, int G, BSource kSrc>
struct AccFor {
  using type = typename L::template Acc<G>;
};
template <class L, int G>
struct AccFor<L, G, BSource::kInPlace> {
  using type = typename L::template Acc<G, true>;
};

// B tile bytes of a step and of an unpacked chunk of layout L.
template <class L>
inline constexpr size_t kStepTileBytes = static_cast<size_t>(L::kStepK) * 16;
template <class L>
inline constexpr size_t kChunkTileBytes = static_cast<size_t>(L::kChunkK) * 16;

// Step t's B tile (of n steps) from kSrc (BSource), unpacking or
// prefetching the panel as that source needs.
template <class L, BSource kSrc>
FOLIO_TARGET_AMX __attribute__((always_inline)) inline const uint8_t* b_tile_of(
    int64_t t, int64_t n, uint8_t* b_tiles, const uint8_t* panel) {
  constexpr int64_t kStepsPerChunk = L::kChunkK / L::kStepK;
  static_assert(kStepsPerChunk * L::kStepK == L::kChunkK);
  if constexpr (kSrc == BSource::kScratch) {
    return b_tiles + t * kStepTileBytes<L>;
  } else if constexpr (kSrc == BSource::kInPlace) {
    static_assert(L::kStepK == L::kChunkK);
    prefetch_chunk<L>(panel, t, n);
    return panel + t * L::kChunkBytes;
  } else {
    const int64_t chunk = t / kStepsPerChunk, s = t % kStepsPerChunk;
    const int64_t n_chunks = n / kStepsPerChunk;
    constexpr int64_t kLead = L::kRingChunks - 1;
    auto slot_of = [&](int64_t c) { return b_tiles + (c % L::kRingChunks) * kChunkTileBytes<L>; };
    if (s == 0) {
      prefetch_chunk<L>(panel, chunk, n_chunks);
      if (chunk == 0) {
        for (int64_t c = 0; c < kLead && c < n_chunks; ++c)
          L::unpack(panel + c * L::kChunkBytes, 1, slot_of(c));
      }
      if (chunk + kLead < n_chunks)
        L::unpack(panel + (chunk + kLead) * L::kChunkBytes, 1, slot_of(chunk + kLead));
    }
    return slot_of(chunk) + s * kStepTileBytes<L>;
  }
}

// The three pipeline stages over the n = k / kStepK steps of one panel, for
// G groups of activation rows at x (stride xs) on the configured tiles:
// step t's tile products, step t - 1's C tiles stored to c_rows, the
// vector side's step(panel, t - 2, C tiles, x, xs). B tiles: from kSrc
// (BSource).
template <class L, int G, BSource kSrc, class Vector>
FOLIO_TARGET_AMX __attribute__((always_inline)) inline void run_pipeline(
    int64_t k, uint8_t* b_tiles, const uint8_t* panel, const uint8_t* x, size_t xs,
    Vector& vector) {
  alignas(64) int32_t c_rows[3][G][kGroup * 16];
  const int64_t n = k / L::kStepK;
  for (int64_t t = 0; t < n + 2; ++t) {
    if (t < n) {
      const uint8_t* b_tile = b_tile_of<L, kSrc>(t, n, b_tiles, panel);
      const uint8_t* xa = L::a_tile(x, t);
      if (t & 1) {
        issue_2x2<G, 1, kSrc == BSource::kInPlace>(b_tile, xa, xs);
      } else {
        issue_2x2<G, 0, kSrc == BSource::kInPlace>(b_tile, xa, xs);
      }
    }
    if (t >= 1 && t <= n) {
      if ((t - 1) & 1) {
        store_2x2<G, 1>(c_rows[(t - 1) % 3]);
      } else {
        store_2x2<G, 0>(c_rows[(t - 1) % 3]);
      }
    }
    if (t >= 2) vector.step(panel, t - 2, c_rows[(t - 2) % 3], x, xs);
  }
}

// G groups of `rows` activation rows (G <= 2; G == 2: rows == 16; on tiles
// configured for `rows`) against one panel, the accumulators in memory
// (L::Acc).
template <class L, int G, BSource kSrc>
FOLIO_TARGET_AMX void panel_groups(int64_t k, uint8_t* b_tiles, const uint8_t* panel,
                                   const uint8_t* x, size_t xs, int rows, uint8_t* out, size_t os,
                                   __mmask16 mask) {
  typename AccFor<L, G, kSrc>::type acc(x, xs, rows, k);
  run_pipeline<L, G, kSrc>(k, b_tiles, panel, x, xs, acc);
  for (int g = 0; g < G; ++g) {
    for (int i = 0; i < rows; ++i) {
      _mm512_mask_storeu_ps(out + (g * kGroup + i) * os, mask, _mm512_load_ps(acc.acc[g] + 16 * i));
    }
  }
}

// Optional layout member Rows<kInPlace, R>: the vector side of one group
// of R rows (8 <= R <= 16) with its R accumulators (one per row, 16 results
// each) in registers instead of memory, where the G-group Acc keeps them:
//   Rows(x, xs, k); step(panel, t, c, r) adds step t's C tile c (R x 16
//   i32) into r[R]: the same operations in the same order as Acc<1>.
template <class L>
inline constexpr bool kHasRows = requires { typename L::template Rows<false, kGroup>; };
// The fewest rows a single pass takes Rows for.
inline constexpr int kMinRegisterRows = 8;

// One group of R activation rows against one panel, accumulating in
// registers (L::Rows), on tiles configured for R rows: the pipeline of
// panel_groups<L, 1, kSrc>. (A second group's 16 accumulators would not
// fit the 32 vector registers, hence one group per pass.)
template <class L, BSource kSrc, int R>
FOLIO_TARGET_AMX void panel_rows(int64_t k, uint8_t* b_tiles, const uint8_t* panel,
                                 const uint8_t* x, size_t xs, uint8_t* out, size_t os,
                                 __mmask16 mask) {
  // run_pipeline's vector side: L::Rows stepping the register accumulators.
  struct InRegisters {
    typename L::template Rows<kSrc == BSource::kInPlace, R> rows;
    __m512 r[R];
    FOLIO_TARGET_AMX __attribute__((always_inline)) void step(const uint8_t* p, int64_t t,
                                                              int32_t (*c)[kGroup * 16],
                                                              const uint8_t*, size_t) {
      rows.step(p, t, c[0], r);
    }
  } acc{{x, xs, k}, {}};
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc.r[i] = _mm512_setzero_ps();
  run_pipeline<L, 1, kSrc>(k, b_tiles, panel, x, xs, acc);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(out + i * os, mask, acc.r[i]);
}

// panel_rows<L, kSrc, rows> for kMinRegisterRows <= rows <= 16; false for
// other row counts (nothing run).
template <class L, BSource kSrc, int R = kMinRegisterRows>
FOLIO_TARGET_AMX __attribute__((always_inline)) inline bool panel_rows_any(
    int rows, int64_t k, uint8_t* b_tiles, const uint8_t* panel, const uint8_t* x, size_t xs,
    uint8_t* out, size_t os, __mmask16 mask) {
  if (rows == R) {
    panel_rows<L, kSrc, R>(k, b_tiles, panel, x, xs, out, os, mask);
    return true;
  }
  if constexpr (R < kGroup) {
    return panel_rows_any<L, kSrc, R + 1>(rows, k, b_tiles, panel, x, xs, out, os, mask);
  }
  return false;
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
  if (nc <= kGroup) {  // one pass: B in place, or the chunks unpacked as the tiles take them
    configure_tiles_2x2(L::kStepK, nc);
    constexpr BSource kOnePass = kInPlaceB<L> ? BSource::kInPlace : BSource::kRing;
    alignas(64) uint8_t ring[kInPlaceB<L> ? 64 : L::kRingChunks * kChunkTileBytes<L>];
    if constexpr (kHasRows<L>) {
      if (panel_rows_any<L, kOnePass>(nc, k, ring, p, xb, xs, ob, os, mask)) {
        _tile_release();
        return;
      }
    }
    if constexpr (kInPlaceB<L>) {
      panel_groups<L, 1, BSource::kInPlace>(k, nullptr, p, xb, xs, nc, ob, os, mask);
    } else {
      panel_groups<L, 1, BSource::kRing>(k, ring, p, xb, xs, nc, ob, os, mask);
    }
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
      if constexpr (kHasRows<L>) {
        if (rows == kGroup) {
          panel_rows<L, BSource::kScratch, kGroup>(k, b_tiles, p, xg, xs, og, os, mask);
          done += kGroup;
          continue;
        }
      }
      if (left >= 2 * kGroup) {
        panel_groups<L, 2, BSource::kScratch>(k, b_tiles, p, xg, xs, kGroup, og, os, mask);
        done += 2 * kGroup;
      } else {
        panel_groups<L, 1, BSource::kScratch>(k, b_tiles, p, xg, xs, rows, og, os, mask);
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
