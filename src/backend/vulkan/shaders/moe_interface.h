// Host/shader interface of the MoE shaders (moe_route.comp, moe_sum.comp;
// ops_moe.cc): moe_route's bounds (its shared arrays) and gating codes, and
// the binding-0 parameter structs (interface.h says how the file serves
// both languages). moe_route runs one workgroup of kElementWorkgroup
// invocations per token; moe_sum one invocation per output element.
#ifndef FOLIO_VK_MOE_INTERFACE_H
#define FOLIO_VK_MOE_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// moe_route.comp: experts per token, expert groups, experts chosen per
// token (larger rows are declined and run on the CPU).
FOLIO_VK_CONST kMoeMaxExperts = 1024u;
FOLIO_VK_CONST kMoeMaxGroups = 64u;
FOLIO_VK_CONST kMoeMaxChosen = 64u;
// Its `gating` parameter (a MoeGating).
FOLIO_VK_CONST kMoeGatingSoftmax = 0u;
FOLIO_VK_CONST kMoeGatingSigmoid = 1u;
FOLIO_VK_CONST kMoeGatingSoftmaxWeight = 2u;

// Binding 0 of moe_route.comp: l F32 [X, n] router logits; b F32 [X]
// selection bias (has_bias only); d I32 [k, n] chosen experts; w F32 [k, n]
// their weights.
#define FOLIO_VK_MOE_ROUTE_PARAMS \
  FOLIO_VK_TENSOR l;              \
  FOLIO_VK_TENSOR b;              \
  FOLIO_VK_TENSOR d;              \
  FOLIO_VK_TENSOR w;              \
  FOLIO_VK_UINT gating;           \
  FOLIO_VK_UINT k;                \
  FOLIO_VK_UINT n_groups;         \
  FOLIO_VK_UINT n_groups_used;    \
  FOLIO_VK_UINT norm;             \
  FOLIO_VK_UINT has_bias;         \
  float scale;

// Binding 0 of moe_sum.comp: e F32 [E, k, n] expert outputs; w F32 [1, k,
// n] their weights; d F32 [E, n].
#define FOLIO_VK_MOE_SUM_PARAMS \
  FOLIO_VK_TENSOR e;            \
  FOLIO_VK_TENSOR w;            \
  FOLIO_VK_TENSOR d;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_MOE_INTERFACE_H
