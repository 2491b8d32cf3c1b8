// The driver of the float-weight strip panels (F16 / BF16 weights x F32
// activations, many activation rows), shared by the SIMD tiers; each tier
// supplies only its strip tile (the inner FMA loop). A DotPanelFn
// (mul_mat_tiled.h) built on it gets a thread's whole row range:
//
//   for each block of activation rows (about 1 MiB of f32, L2-resident):
//     for each strip of `rows` weight rows:
//       for each K chunk of kStripChunk elements:
//         for each tile of `cols` activation rows:
//           the strip tile over the chunk
//
// The chunk's first tile widens the strip's weights from memory for its own
// FMAs and stores them (f32) to an L1 scratch; the other tiles read the
// scratch, and the second one prefetches the next chunk (widening and
// prefetching in one loop ran ~1.6x slower than either alone). Accumulators
// are carried across chunks in a scratch (a vector stored and reloaded
// keeps its FMA order), so a tile that keeps one accumulator per output,
// K ascending, and reduces it at the last chunk as the tier's plain tile
// does gives that tile's bits: the output does not depend on M, the batch
// composition or the thread count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace folio::cpu {

inline constexpr int kMaxStripRows = 6;
inline constexpr int kMaxStripLanes = 16;
inline constexpr int64_t kStripChunk = 512;
inline constexpr int64_t kStripPitch = kStripChunk + 16;  // floats between widened rows

// One strip tile call: R weight rows x C activation rows over one K chunk
// of kk elements. Accumulators start at zero (first chunk) or from
// acc[(r * C + c) * lanes]; they go back there, or (last chunk) are reduced
// into out(c, r) at (char*)out + c * out_stride + 4 * r.
struct StripArgs {
  int64_t kk;               // elements in this chunk
  bool first, last;         // first / last chunk of K
  const unsigned char* w;   // weight row 0 at the chunk's first element (widening tiles)
  size_t w_stride;          // bytes between weight rows
  const unsigned char* pf;  // prefetch target for row 0 (prefetching tiles)
  float* wb;                // [R][kStripPitch] widened chunk (64-byte aligned rows)
  const float* x;           // activation row 0 at the chunk's first element
  size_t x_stride;          // bytes between activation rows
  float* acc;               // [R][C][lanes] carried accumulators
  float* out;               // out(0, 0) (last chunk only)
  size_t out_stride;        // bytes between output rows
};

// What a strip tile does with the weights besides its FMAs.
enum class StripMode : int {
  kRead,           // reads the widened chunk from wb
  kReadPrefetch,   // ... and prefetches the span at pf
  kWiden,          // widens the chunk from memory and stores it to wb (the
                   // whole chunk, tail elements included)
  kWidenPrefetch,  // ... and prefetches (only when a block has one tile)
};

using StripTileFn = void (*)(const StripArgs&);

struct StripShape {
  int rows;   // weight rows per strip (<= kMaxStripRows)
  int cols;   // activation rows per tile
  int lanes;  // floats per accumulator (<= kMaxStripLanes)
  // The tile for r <= rows weight rows, c <= cols activation rows.
  StripTileFn (*tile)(int r, StripMode mode, int c);
};

namespace strip_detail {
template <template <int, int, StripMode> class Tile, int Cols, int... I>
constexpr std::array<StripTileFn, sizeof...(I)> table(std::integer_sequence<int, I...>) {
  return {Tile<I / (4 * Cols) + 1, I % Cols + 1, static_cast<StripMode>(I / Cols % 4)>::fn...};
}
}  // namespace strip_detail

// A StripShape::tile over a tier's strip tiles: Tile<R, C, M>::fn for
// 1 <= R <= Rows, 1 <= C <= Cols and every mode, in one table.
template <template <int, int, StripMode> class Tile, int Rows, int Cols>
StripTileFn strip_tile_table(int r, StripMode mode, int c) {
  static constexpr std::array<StripTileFn, Rows* 4 * Cols> kFns =
      strip_detail::table<Tile, Cols>(std::make_integer_sequence<int, Rows * 4 * Cols>{});
  return kFns[static_cast<size_t>(((r - 1) * 4 + static_cast<int>(mode)) * Cols + (c - 1))];
}

// out(c, r) = dot(W row r, X row c) for r < nr, c < nc (DotPanelFn
// addressing); elem_bytes: bytes per weight element. k == 0 writes zeros.
void run_float_strips(const StripShape& shape, size_t elem_bytes, int64_t k, const void* w,
                      size_t w_stride, int64_t nr, const void* x, size_t x_stride, int64_t nc,
                      float* out, size_t out_stride);

}  // namespace folio::cpu
