// The tiling and threading driver shared by every optimised mul_mat kernel
// (all tiers): the ISA files only provide a dot-product *tile* function.
//
//   W   src0 [K, N, B2w, B3w]  weight rows (any dtype the tile reads)
//   X   src1 [K, M, B2, B3]    F32 activations
//   Y   dst  [N, M, B2, B3]    Y[n, m] = dot(W row n, X row m)
//
// 1. Activations are converted once per op into the format the tile reads
//    (ActFormat): kept as F32, or quantized row by row to Q8_0 (legacy
//    weights) or Q8_K (K-quants) exactly as the reference quantizers do
//    (the tier may supply a SIMD quantizer with the same output bytes).
//    Rows are independent, so this step is parallel too. Converted rows
//    live in a per-thread scratch buffer that only grows, so the many small
//    ops of a decode step allocate nothing.
// 2. The output is cut into tiles of `tile_rows` weight rows x `tile_cols`
//    activation rows. Work items are (batch, row tile) pairs; the thread pool
//    splits them into contiguous chunks. Within a chunk, activation rows are
//    visited in blocks that fit in L2 (M blocking) and every row tile of the
//    chunk streams past each block, so a weight tile stays in L1/L2 while it
//    meets all columns of the block.
//
// Determinism: the tile decomposition depends only on the shapes (never on
// the thread count) and each output element is computed by exactly one tile
// call, with no reduction split across threads; results are bit-identical
// for any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// How activation rows are stored for the tile functions.
enum class ActFormat : int {
  kF32,   // src1 rows as they are (float, src1 strides)
  kQ8_0,  // Q8Row32 below (from the reference Q8_0 quantizer)
  kQ8_K,  // BlockQ8_K[K / 256] (reference Q8_K quantizer output, unchanged)
  // Each element split into BF16 parts as amx/f16_tile_model.h's
  // split_activation does: uint16 ah[kpad] then al[kpad], kpad = K rounded
  // up to 32, zeros past K (the F16_X16 kernels' A operands).
  kBf16Split,
};

// One activation row quantized to Q8_0 and unpacked for SIMD loads:
//   int8  qs[K]       the Q8_0 quants, contiguous
//   float d[K / 32]   block scales (the f16 scale of the block, widened)
//   int32 sum[K / 32] sum of the block's quants (for offset corrections)
//   float ds[K / 32]  d[b] * float(sum[b]): the min term's factor of Q4_1 /
//                     Q5_1 weights, computed once per row instead of once
//                     per weight panel (the same float product)
// Row size is rounded up to 64 bytes.
struct Q8Row32 {
  const int8_t* qs;
  const float* d;
  const int32_t* sum;
  const float* ds;
};
struct MutableQ8Row32 {
  int8_t* qs;
  float* d;
  int32_t* sum;
  float* ds;
};

inline MutableQ8Row32 q8row32(void* row, int64_t k) {
  auto* p = static_cast<unsigned char*>(row);
  return {reinterpret_cast<int8_t*>(p), reinterpret_cast<float*>(p + k),
          reinterpret_cast<int32_t*>(p + k + 4 * (k / 32)),
          reinterpret_cast<float*>(p + k + 8 * (k / 32))};
}
inline Q8Row32 q8row32(const void* row, int64_t k) {
  const auto* p = static_cast<const unsigned char*>(row);
  return {reinterpret_cast<const int8_t*>(p), reinterpret_cast<const float*>(p + k),
          reinterpret_cast<const int32_t*>(p + k + 4 * (k / 32)),
          reinterpret_cast<const float*>(p + k + 8 * (k / 32))};
}

// Bytes of one converted activation row of k elements (0 for kF32).
size_t act_row_bytes(ActFormat f, int64_t k);

// Converts one F32 row (k elements) into `f` (not kF32) at dst.
void convert_act_row(ActFormat f, const float* src, void* dst, int64_t k);

// Computes out(r, c) = dot(W row r, X row c) for r < nr, c < nc, where
//   W row r   starts at w + r * w_stride (bytes)
//   X row c   starts at x + c * x_stride (bytes), in the spec's ActFormat
//   out(r, c) is the float at (char*)out + c * out_stride + r * 4.
// nr <= tile_rows and nc <= tile_cols of the spec; k may be 0 (gives 0).
// A tile may prefetch the weight rows that follow its own (from w +
// nr * w_stride on, possibly past the end of the matrix: prefetches never
// fault): the driver visits a chunk's row tiles in ascending order, so these
// are the next tile's, and a decode step streams every weight exactly once.
using DotTileFn = void (*)(int64_t k, const void* w, size_t w_stride, int nr, const void* x,
                           size_t x_stride, int nc, float* out, size_t out_stride);

// Optional whole-block form of a tile function: computes out(r, c) for
// r < nr, c < nc (any counts) with the same addressing as DotTileFn, and
// each output bit-identical to what `tile` gives for it. The driver hands it
// a thread's contiguous range of weight rows and all activation rows of a
// batch, and leaves the blocking (and any weight pre-conversion) to it.
using DotPanelFn = void (*)(int64_t k, const void* w, size_t w_stride, int64_t nr, const void* x,
                            size_t x_stride, int64_t nc, float* out, size_t out_stride);

// Converts one F32 row of k elements into the spec's ActFormat; must give
// the same bytes as convert_act_row (SIMD versions of the reference).
using ConvertRowFn = void (*)(const float* src, void* dst, int64_t k);

struct MatMulSpec {
  ActFormat act = ActFormat::kF32;
  int tile_rows = 1;  // weight rows per tile
  int tile_cols = 1;  // activation rows per tile
  DotTileFn tile = nullptr;
  ConvertRowFn convert = nullptr;  // nullptr: convert_act_row (scalar reference)
  // When set, mul_mat_tiled calls it instead of visiting tiles itself
  // (mul_mat_id always uses `tile`).
  DotPanelFn panel = nullptr;
};

// Runs a (validated) kMulMat op with `spec`. Allocation failure of the
// activation scratch is kResourceExhausted.
Status mul_mat_tiled(const Op& op, const KernelContext& ctx, const MatMulSpec& spec);

// Runs a (validated) kMulMatId op with `spec`: the (slot, token) pairs are
// grouped by expert (stable order), their activation rows converted into one
// contiguous block per expert, and the work items are (expert in use, row
// tile) with the same tiles as mul_mat; outputs are scattered back at the
// end. Expert ids outside [0, E) are kOutOfRange before anything is written;
// views of more than 3 dims are kInvalidArgument (as the reference).
Status mul_mat_id_tiled(const Op& op, const KernelContext& ctx, const MatMulSpec& spec);

// A tier's tile spec for weight type w when m activation rows meet each
// weight row (m picks the tile shape only, never a result bit).
using MatMulSpecFn = MatMulSpec (*)(DType w, int64_t m);

// The spec of a tier with one spec function for float weights (F32, F16,
// BF16) and one for the quantized types.
template <MatMulSpecFn Float, MatMulSpecFn Quant>
MatMulSpec float_or_quant_spec(DType w, int64_t m) {
  const bool is_float = w == DType::F32 || w == DType::F16 || w == DType::BF16;
  return is_float ? Float(w, m) : Quant(w, m);
}

// A tier's kMulMat and kMulMatId kernels from its spec function: the weight
// type picks the tile spec and the driver above does the blocking, threading
// and, for mul_mat_id, the grouping of tokens by expert. mul_mat_id takes
// the spec for one activation row: few tokens meet each expert, and how many
// varies.
template <MatMulSpecFn Spec>
Status mul_mat_kernel(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, Spec(op.src[0].dtype, op.src[1].ne[1]));
}
template <MatMulSpecFn Spec>
Status mul_mat_id_kernel(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, Spec(op.src[0].dtype, 1));
}

// The kMulMat / kMulMatId kernels of an x86 tier whose float and quantized
// weights take the spec functions Float and Quant (float_or_quant_spec).
template <MatMulSpecFn Float, MatMulSpecFn Quant>
inline constexpr KernelFn tier_mul_mat = &mul_mat_kernel<&float_or_quant_spec<Float, Quant>>;
template <MatMulSpecFn Float, MatMulSpecFn Quant>
inline constexpr KernelFn tier_mul_mat_id =
    &mul_mat_id_kernel<&float_or_quant_spec<Float, Quant>>;

// The (u, t) pairs of a kMulMatId op (src[2] = I32 ids [n_used, T]) grouped
// by expert, in (t, u) order within an expert: slot s holds pair
// order[s] = t * n_used + u; expert e owns slots [first[e], first[e + 1]).
// Checks that experts, input, ids and dst are at most 3-D (kInvalidArgument)
// and every id is in [0, E) (kOutOfRange) before filling anything the caller
// reads; `next` is scratch. Shared by the tiled and the packed drivers.
Status group_pairs_by_expert(const Op& op, std::vector<int64_t>& first, std::vector<int64_t>& order,
                             std::vector<int64_t>& next);

}  // namespace folio::cpu
