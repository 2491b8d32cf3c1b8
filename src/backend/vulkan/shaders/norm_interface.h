// Host/shader interface of the row norms (norm.comp, add_rms_norm.comp,
// rms_norm_add_rms_norm.comp; ops_norm.cc): the workgroup bounds, norm.comp's
// modes and the binding-0 parameter structs (interface.h says how the file
// serves both languages).
#ifndef FOLIO_VK_NORM_INTERFACE_H
#define FOLIO_VK_NORM_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// The row-norm workgroup (spec constant 0 of all three shaders) is a power
// of two from kNormMinWorkgroup to kNormMaxWorkgroup (norm_workgroup in
// kernels.h); one workgroup per row.
FOLIO_VK_CONST kNormMinWorkgroup = 32u;
FOLIO_VK_CONST kNormMaxWorkgroup = 256u;
// norm.comp's spec constant MODE.
FOLIO_VK_CONST kNormModeRms = 0u;  // x / sqrt(mean(x^2) + eps)
FOLIO_VK_CONST kNormModeL2 = 1u;   // x / max(sqrt(sum x^2), eps)

// Binding 0 of norm.comp: x F32 rows [ne0, ...]; w F32 with ne0 elements
// (HAS_W; else a default descriptor, never read); d like x.
#define FOLIO_VK_NORM_PARAMS \
  FOLIO_VK_TENSOR x;         \
  FOLIO_VK_TENSOR w;         \
  FOLIO_VK_TENSOR d;         \
  float eps;

// Binding 0 of add_rms_norm.comp and rms_norm_add_rms_norm.comp (one record
// function fills both): a, b F32 rows; w the norm weight (HAS_W); wb
// rms_norm_add_rms_norm's norm weight of b (add_rms_norm: a default
// descriptor, its binding 5 an unread placeholder); d the normalised sum,
// d2 the sum.
#define FOLIO_VK_ADD_RMS_NORM_PARAMS \
  FOLIO_VK_TENSOR a;                 \
  FOLIO_VK_TENSOR b;                 \
  FOLIO_VK_TENSOR w;                 \
  FOLIO_VK_TENSOR wb;                \
  FOLIO_VK_TENSOR d;                 \
  FOLIO_VK_TENSOR d2;                \
  float eps;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_NORM_INTERFACE_H
