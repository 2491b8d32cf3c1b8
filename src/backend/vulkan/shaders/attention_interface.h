// Host/shader interface of the attention-side shaders (flash_attn.comp,
// set_rows.comp, soft_max.comp; ops_attention.cc): flash attention's
// workgroup shape and split-K modes, and the binding-0 parameter structs
// (interface.h says how the file serves both languages; K/V and table
// storage types are its kDtype* codes).
#ifndef FOLIO_VK_ATTENTION_INTERFACE_H
#define FOLIO_VK_ATTENTION_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// flash_attn.comp: invocations per workgroup (one workgroup per (token,
// head) pair, or per pair and partial), lanes per key when scoring.
FOLIO_VK_CONST kFaWorkgroup = 256u;
FOLIO_VK_CONST kFaLanes = 8u;
// Split-K: the most partials per pair (gl_WorkGroupID.z < n_split <= this).
FOLIO_VK_CONST kFaMaxSplits = 64u;
// Spec constant SPLIT: the whole key range in one pass; the split-K
// partials; their combine pass.
FOLIO_VK_CONST kFaSplitNone = 0u;
FOLIO_VK_CONST kFaSplitPartials = 1u;
FOLIO_VK_CONST kFaSplitCombine = 2u;

// Binding 0 of flash_attn.comp: q F32 [D, n_head, n_tokens]; k [D,
// n_kv_head, n_ctx | block_size, n_seq | n_blocks]; v [DV, ...] alike;
// seq_idx, pos I32 [n_tokens]; kv_len I32 [n_seq]; blocks I32 [max_blocks,
// n_seq] (paged only); sinks F32 [n_head] (has_sinks only); dst F32 [DV,
// n_head, n_tokens]; group: query heads per KV head; capacity: positions a
// sequence can hold; n_blocks: physical blocks (paged only); partials F32
// scratch [DV + 2, n_split, n_tokens * n_head] (split-K: m, l, acc);
// split_len: key positions per split-K piece; qo (spec QOUT): where the
// output's int8 activation blocks go (mat_interface.h: kMatQ8BlockWords
// words each, column t of [DV * n_head, n_tokens] from word qo.off / 4 +
// t * (DV * n_head / 32) * kMatQ8BlockWords).
#define FOLIO_VK_FLASH_ATTN_PARAMS \
  FOLIO_VK_TENSOR q;               \
  FOLIO_VK_TENSOR k;               \
  FOLIO_VK_TENSOR v;               \
  FOLIO_VK_TENSOR seq_idx;         \
  FOLIO_VK_TENSOR pos;             \
  FOLIO_VK_TENSOR kv_len;          \
  FOLIO_VK_TENSOR blocks;          \
  FOLIO_VK_TENSOR sinks;           \
  FOLIO_VK_TENSOR dst;             \
  FOLIO_VK_UINT n_head;            \
  FOLIO_VK_UINT group;             \
  FOLIO_VK_UINT n_tokens;          \
  FOLIO_VK_UINT n_seq;             \
  FOLIO_VK_UINT paged;             \
  FOLIO_VK_UINT block_size;        \
  FOLIO_VK_UINT capacity;          \
  FOLIO_VK_UINT n_blocks;          \
  FOLIO_VK_UINT causal;            \
  FOLIO_VK_INT window;             \
  float scale;                     \
  float softcap;                   \
  FOLIO_VK_UINT has_sinks;         \
  FOLIO_VK_TENSOR partials;        \
  FOLIO_VK_UINT n_split;           \
  FOLIO_VK_UINT split_len;         \
  FOLIO_VK_TENSOR qo;

// Binding 0 of set_rows.comp: rows F32 [n_cols, ne1, ne2, ne3] (n rows);
// slots I32 [n] (at most 2-D, read flat); table [n_cols, n_slots] (spec DT:
// kDtype*).
#define FOLIO_VK_SET_ROWS_PARAMS \
  FOLIO_VK_TENSOR rows;          \
  FOLIO_VK_TENSOR slots;         \
  FOLIO_VK_TENSOR table;         \
  FOLIO_VK_UINT n;

// Binding 0 of soft_max.comp: x F32 [ne0, ne1, ne2, ne3]; mask F32 [ne0,
// ne1, m2, m3] (has_mask only); d like x.
#define FOLIO_VK_SOFT_MAX_PARAMS \
  FOLIO_VK_TENSOR x;             \
  FOLIO_VK_TENSOR mask;          \
  FOLIO_VK_TENSOR d;             \
  float scale;                   \
  FOLIO_VK_UINT has_mask;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_ATTENTION_INTERFACE_H
