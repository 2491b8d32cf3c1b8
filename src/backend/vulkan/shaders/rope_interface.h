// Host/shader interface of the rotary embeddings (rope.comp,
// rope_set_rows.comp, rope_math.glsl; ops_rope.cc): the modes, the bound on
// the coefficient table and the binding-0 parameter structs (interface.h
// says how the file serves both languages). Both shaders run
// kElementWorkgroup invocations per workgroup, one per rotary pair or
// pass-through dim of a (head, token) row.
#ifndef FOLIO_VK_ROPE_INTERFACE_H
#define FOLIO_VK_ROPE_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// Spec constant MODE (a RopeMode).
FOLIO_VK_CONST kRopeModeNormal = 0u;  // pairs (2i, 2i + 1)
FOLIO_VK_CONST kRopeModeNeox = 1u;    // pairs (i, i + n_dims / 2)
FOLIO_VK_CONST kRopeModeMrope = 2u;   // neox pairs, positions by section
FOLIO_VK_CONST kRopeModeImrope = 3u;  // neox pairs, sections interleaved
// The most rotary pairs (n_dims / 2): the coefficient table's length.
FOLIO_VK_CONST kRopeMaxPairs = 256u;

// The tail of both parameter structs, read by rope_math.glsl: n_dims;
// pairs per position section (multi-section modes, else 0); mscale, the
// factor of cos and sin; coef[i], everything about pair i's angle but the
// position and freq factor.
#define FOLIO_VK_ROPE_TABLE       \
  FOLIO_VK_UINT n_dims;           \
  FOLIO_VK_UINT sec0;             \
  FOLIO_VK_UINT sec1;             \
  FOLIO_VK_UINT sec2;             \
  FOLIO_VK_UINT sec3;             \
  float mscale;                   \
  float coef[kRopeMaxPairs];

// Binding 0 of rope.comp: x F32 [head_dim, n_head, n_tok, ne3]; pos I32
// [n_tok] or [4 * n_tok] (multi-section); ff F32 [n_dims / 2] (HAS_FF, else
// a default descriptor, never read); d like x.
#define FOLIO_VK_ROPE_PARAMS \
  FOLIO_VK_TENSOR x;         \
  FOLIO_VK_TENSOR pos;       \
  FOLIO_VK_TENSOR ff;        \
  FOLIO_VK_TENSOR d;         \
  FOLIO_VK_ROPE_TABLE

// Binding 0 of rope_set_rows.comp: rope.comp's x, pos, ff, d (x contiguous
// [head_dim, n_head, n_tok]); slots I32 [n_tok]; v F32 [v_cols, n_tok]; kt
// the K table [head_dim * HK, n_slots], vt the V table [v_cols, n_slots]
// (F32, F16 or BF16: spec KDT, VDT as kDtype*); hk0 the first K head
// (n_head - HK); rope_groups the workgroups of the rotation (the V rows'
// workgroups follow).
#define FOLIO_VK_ROPE_SET_ROWS_PARAMS \
  FOLIO_VK_TENSOR x;                  \
  FOLIO_VK_TENSOR pos;                \
  FOLIO_VK_TENSOR ff;                 \
  FOLIO_VK_TENSOR d;                  \
  FOLIO_VK_TENSOR slots;              \
  FOLIO_VK_TENSOR v;                  \
  FOLIO_VK_TENSOR kt;                 \
  FOLIO_VK_TENSOR vt;                 \
  FOLIO_VK_UINT hk0;                  \
  FOLIO_VK_UINT rope_groups;          \
  FOLIO_VK_ROPE_TABLE

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_ROPE_INTERFACE_H
