// Host/shader interface of the recurrent shaders (ssm_conv.comp,
// ssm_conv_update.comp, gated_delta_net.comp, ssm_scan.comp,
// state_slots_check.comp; ops_recurrent.cc): workgroup sizes and the
// binding-0 parameter structs (interface.h says how the file serves both
// languages). ssm_conv and ssm_conv_update (unstaged) run kElementWorkgroup
// invocations per workgroup, one per output element or channel.
#ifndef FOLIO_VK_RECURRENT_INTERFACE_H
#define FOLIO_VK_RECURRENT_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// ssm_scan.comp: invocations per workgroup, one per state row.
FOLIO_VK_CONST kSsmScanWorkgroup = 64u;

// Binding 0 of state_slots_check.comp (one workgroup, before a fused
// state update): ids I32, n_seq elements; dst_slots I32, n_seq elements
// (has_dst); n_slots the pool's slots.
#define FOLIO_VK_SLOT_CHECK_PARAMS \
  FOLIO_VK_TENSOR ids;             \
  FOLIO_VK_TENSOR dst_slots;       \
  FOLIO_VK_UINT n_seq;             \
  FOLIO_VK_UINT n_slots;           \
  FOLIO_VK_UINT has_dst;

// Binding 0 of ssm_conv.comp: x F32 [K - 1 + T, C, n_seq]; w F32 [K, C];
// bias F32, C elements in any shape (has_bias); d F32 [C, T, n_seq].
#define FOLIO_VK_SSM_CONV_PARAMS \
  FOLIO_VK_TENSOR x;             \
  FOLIO_VK_TENSOR w;             \
  FOLIO_VK_TENSOR bias;          \
  FOLIO_VK_TENSOR d;             \
  FOLIO_VK_UINT has_bias;        \
  FOLIO_VK_UINT silu;

// Binding 0 of ssm_conv_update.comp: x F32 [C, n_seq]; w, bias as
// ssm_conv's; pool F32 [K - 1, C, n_slots]; ids I32, n_seq elements;
// dst_slots I32, n_seq elements (has_dst); d F32 [C, n_seq]; cb: channels
// per workgroup (STAGED).
#define FOLIO_VK_SSM_CONV_UPDATE_PARAMS \
  FOLIO_VK_TENSOR x;                    \
  FOLIO_VK_TENSOR w;                    \
  FOLIO_VK_TENSOR bias;                 \
  FOLIO_VK_TENSOR pool;                 \
  FOLIO_VK_TENSOR ids;                  \
  FOLIO_VK_TENSOR dst_slots;            \
  FOLIO_VK_TENSOR d;                    \
  FOLIO_VK_UINT has_bias;               \
  FOLIO_VK_UINT has_dst;                \
  FOLIO_VK_UINT silu;                   \
  FOLIO_VK_UINT cb;

// Binding 0 of gated_delta_net.comp: q, k F32 [S_k, H_k, T, n_seq]; v F32
// [S_v, H_v, T, n_seq]; g, beta F32 [H_v, T, n_seq]; state F32 [S_k, S_v,
// H_v, n_seq] (UPDATE: the pool [.., .., H_v, n_slots]); ids I32, n_seq
// elements (UPDATE); dst_slots (UPDATE and has_dst); o F32 [S_v, H_v, T,
// n_seq]; state_out like state; ratio H_v / H_k; head_mod 1: key head
// h % H_k, 0: h / ratio; row_blocks: workgroups per (value head, sequence).
#define FOLIO_VK_GDN_PARAMS \
  FOLIO_VK_TENSOR q;        \
  FOLIO_VK_TENSOR k;        \
  FOLIO_VK_TENSOR v;        \
  FOLIO_VK_TENSOR g;        \
  FOLIO_VK_TENSOR beta;     \
  FOLIO_VK_TENSOR state;    \
  FOLIO_VK_TENSOR ids;      \
  FOLIO_VK_TENSOR dst_slots;   \
  FOLIO_VK_TENSOR o;        \
  FOLIO_VK_TENSOR state_out;   \
  FOLIO_VK_UINT h_k;        \
  FOLIO_VK_UINT ratio;      \
  FOLIO_VK_UINT head_mod;   \
  FOLIO_VK_UINT l2_norm;    \
  FOLIO_VK_UINT has_dst;    \
  FOLIO_VK_UINT row_blocks; \
  float scale;              \
  float eps;

// Binding 0 of ssm_scan.comp: x F32 [P, H, T, n_seq]; dt F32 [H, T, n_seq];
// a F32, H elements in any shape; b, c F32 [N, G, T, n_seq]; state F32 [N,
// P, H, n_seq] (UPDATE: the pool [N, P, H, n_slots]); y F32 [P, H, T,
// n_seq]; state_out like state (may be the same view); ids I32, n_seq
// elements (UPDATE).
#define FOLIO_VK_SSM_SCAN_PARAMS \
  FOLIO_VK_TENSOR x;             \
  FOLIO_VK_TENSOR dt;            \
  FOLIO_VK_TENSOR a;             \
  FOLIO_VK_TENSOR b;             \
  FOLIO_VK_TENSOR c;             \
  FOLIO_VK_TENSOR state;         \
  FOLIO_VK_TENSOR y;             \
  FOLIO_VK_TENSOR state_out;     \
  FOLIO_VK_TENSOR ids;           \
  FOLIO_VK_UINT heads_per_group;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_RECURRENT_INTERFACE_H
