// Host/shader interface of the matrix shaders (get_rows.comp,
// mul_mat_vec.comp, mul_mat.comp, the int8 path's quant_act_q8.comp and
// mul_mat*_q8.comp, mul_mat_sum.glsl; ops_matmul.cc): the constants both
// sides must agree on and the binding-0 parameter structs (interface.h says
// how the file serves both languages).
#ifndef FOLIO_VK_MAT_INTERFACE_H
#define FOLIO_VK_MAT_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// Binding 0 of get_rows: t the table [n_cols, n_rows] (any weight dtype),
// ids I32 (any shape, n elements, read in flat order), d F32 [n_cols, n]
// (rows in the flat order of ids).
#define FOLIO_VK_GET_ROWS_PARAMS \
  FOLIO_VK_TENSOR t;             \
  FOLIO_VK_TENSOR ids;           \
  FOLIO_VK_TENSOR d;

// Elements per partial sum of every output (the summation order of
// mul_mat_sum.glsl): a multiple of the int8 block (32) and of mul_mat.comp's
// K step (16). mul_mat_vec.comp gives each chunk of a row its own lane, so
// the chunk bounds how many lanes a row can use: 64 gives a row of 2048
// elements 32 lanes, each reading its weights beside its neighbours'.
FOLIO_VK_CONST kMatSumChunk = 64u;
// mul_mat_vec.comp: its workgroup (lanes), and the most activation columns
// one dispatch takes (spec constant NCOLS); more go to mul_mat.comp.
FOLIO_VK_CONST kMatVecWorkgroup = 128u;
FOLIO_VK_CONST kMatVecMaxCols = 8u;
// mul_mat.comp's output tile (BN = BM).
FOLIO_VK_CONST kMatTile = 64u;
// mul_mat_vec.comp's spec constant GLU (kMulMatGlu): off, or act(gate) * up
// (act: spec constant GLU_ACT) with gate rows first or up rows first in W.
FOLIO_VK_CONST kMatGluOff = 0u;
FOLIO_VK_CONST kMatGluGateFirst = 1u;
FOLIO_VK_CONST kMatGluUpFirst = 2u;

// mul_mat_vec.comp's prologue NORM (kRmsNormMulMat): x normalised by
// rms_norm with norm.comp's workgroup (spec constant NORM_B, a power of two
// up to this), emulated by the 128 lanes so the sums are norm.comp's.
FOLIO_VK_CONST kMatNormMaxWorkgroup = 256u;

// mul_mat_vec.comp's spec constant ADD (kMulMatAdd): off, + r, or + r after
// scaling each column by sigmoid of its gate (a gated shared expert).
FOLIO_VK_CONST kMatAddOff = 0u;
FOLIO_VK_CONST kMatAddPlain = 1u;
FOLIO_VK_CONST kMatAddGated = 2u;

// mul_mat_vec_q8's spec constant TAIL: off, or the last workgroup to
// finish quantizes the output (one batch, N a multiple of kMatQ8Block) as
// quant_act_q8 would for the next int8 product, normalised first
// (kMatTailNormQuant: rms_norm with weight nw2, epsilon eps2, norm.comp's
// workgroup NORM_B) or not; the workgroups count on cnt.
FOLIO_VK_CONST kMatTailOff = 0u;
FOLIO_VK_CONST kMatTailQuant = 1u;
FOLIO_VK_CONST kMatTailNormQuant = 2u;

// Binding 0 of mul_mat_vec and mul_mat: w [K, N, B2w, B3w] (mul_mat_id:
// [K, N, E]); x F32 [K, M, B2, B3] (mul_mat_id: [K, X1, T]); d F32
// [N, M, B2, B3] (mul_mat_id: [N, n_used, T]); ids I32 [n_used, T]
// (mul_mat_id only; mul_mat binds x there and never reads it); mul_mat_vec
// only: nw F32 [K] the norm weight of NORM, or under kMatAddGated the gate
// logits F32 [1, M]; r F32 [N, M] the residual that ADD adds to the
// products (kMulMatAdd; it may be d), eps NORM's epsilon; q (the int8
// matvec, mul_mat_vec_q8, only) x as quant_act_q8 wrote it, in the buffer
// bound for x: its blocks at word q.off / 4 on, x's shape taken from x;
// TAIL (mul_mat_vec_q8 only): qo where the output's blocks go, nw2 F32 [N]
// and eps2 the norm's, cnt I32 [1] the workgroups' count (zero between
// dispatches).
#define FOLIO_VK_MAT_PARAMS \
  FOLIO_VK_TENSOR w;        \
  FOLIO_VK_TENSOR x;        \
  FOLIO_VK_TENSOR d;        \
  FOLIO_VK_TENSOR ids;      \
  FOLIO_VK_TENSOR nw;       \
  FOLIO_VK_TENSOR r;        \
  FOLIO_VK_TENSOR q;        \
  float eps;                \
  FOLIO_VK_TENSOR qo;       \
  FOLIO_VK_TENSOR nw2;      \
  FOLIO_VK_TENSOR cnt;      \
  float eps2;

// The int8 path (weights Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K ... Q6_K,
// IQ4_NL, IQ4_XS, MXFP4, NVFP4 on a device with integer dot products;
// mul_mat_q8.glsl): activations quantized per 32
// elements (kMatQ8Block) into blocks of kMatQ8BlockWords words: 8 words of
// packed int8 codes (element 4i + j in byte j of word i), the scale as f32
// bits (the f16 rounding of max|x| / 127, widened), the codes' sum (int).
FOLIO_VK_CONST kMatQ8Block = 32u;
FOLIO_VK_CONST kMatQ8BlockWords = 10u;

// Binding 0 of quant_act_q8: x F32 [K, M, B2, B3] (rows contiguous), q
// the quantized activations: block kb of column (m, b2, b3) at word
// (q.off / 4) + ((b3 * B2 + b2) * M + m) * (K / 32) + kb) * 10; under its
// NORM mode (one batch) nw F32 [K] the rms norm's weight and eps its
// epsilon: x is normalised first.
#define FOLIO_VK_QUANT_ACT_PARAMS \
  FOLIO_VK_TENSOR x;              \
  FOLIO_VK_TENSOR q;              \
  FOLIO_VK_TENSOR nw;             \
  float eps;

// Binding 0 of mul_mat_q8: w [K, N, B2w, B3w], x F32 [K, M, B2, B3] (its
// shape), d F32 [N, M, B2, B3], q the quantized activations as above.
#define FOLIO_VK_MATQ8_PARAMS \
  FOLIO_VK_TENSOR w;          \
  FOLIO_VK_TENSOR x;          \
  FOLIO_VK_TENSOR d;          \
  FOLIO_VK_TENSOR q;

// Binding 0 of mul_mat_id_q8 (kMulMatId's int8 tiles): as above with w
// [K, N, E], x F32 [K, X1, T] (quantized by quant_act_q8 as M = X1, B2 =
// T: pair (u, t) reads column (u % X1, t)), d F32 [N, n_used, T] and ids
// I32 [n_used, T].
#define FOLIO_VK_MATQ8_ID_PARAMS \
  FOLIO_VK_MATQ8_PARAMS          \
  FOLIO_VK_TENSOR ids;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_MAT_INTERFACE_H
