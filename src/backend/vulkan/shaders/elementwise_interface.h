// Host/shader interface of the element-wise shaders (add.comp, scale.comp,
// cpy.comp, unary.comp, glu.comp; ops_elementwise.cc) and of
// activation.glsl's codes, which the decode matvec's GLU epilogue takes too:
// constants and the binding-0 parameter structs (interface.h says how the
// file serves both languages). Each shader runs kElementWorkgroup
// invocations per workgroup, one per element of d.
#ifndef FOLIO_VK_ELEMENTWISE_INTERFACE_H
#define FOLIO_VK_ELEMENTWISE_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// add.comp's spec constant OP.
FOLIO_VK_CONST kBinaryAdd = 0u;
FOLIO_VK_CONST kBinaryMul = 1u;

// activation.glsl's activation codes: unary.comp's spec constant KIND (a
// UnaryKind), glu.comp's KIND and mul_mat_vec's GLU_ACT (a GluKind's act).
FOLIO_VK_CONST kActSilu = 0u;
FOLIO_VK_CONST kActGelu = 1u;
FOLIO_VK_CONST kActGeluErf = 2u;
FOLIO_VK_CONST kActSigmoid = 3u;
FOLIO_VK_CONST kActSoftplus = 4u;
FOLIO_VK_CONST kActExp = 5u;
FOLIO_VK_CONST kActTanh = 6u;
FOLIO_VK_CONST kActRelu = 7u;
FOLIO_VK_CONST kActNeg = 8u;
// glu.comp's KIND for gpt-oss's clamped swiglu (no activation code).
FOLIO_VK_CONST kGluSwiGluOai = 100u;

// Binding 0 of add.comp: d = a (+|*) b, b broadcast (each dim modulo its
// size); F32.
#define FOLIO_VK_BINARY_PARAMS \
  FOLIO_VK_TENSOR a;           \
  FOLIO_VK_TENSOR b;           \
  FOLIO_VK_TENSOR d;

// Binding 0 of scale.comp: d = x * scale + bias (one rounding), F32.
#define FOLIO_VK_SCALE_PARAMS \
  FOLIO_VK_TENSOR x;          \
  FOLIO_VK_TENSOR d;          \
  float scale;                \
  float bias;

// Binding 0 of cpy.comp (4-byte words) and unary.comp (F32): d = f(x).
#define FOLIO_VK_UNARY_PARAMS \
  FOLIO_VK_TENSOR x;          \
  FOLIO_VK_TENSOR d;

// Binding 0 of glu.comp: gate g and up u with d's row length (src0 and
// src1, or the two halves of each src0 row), d F32; alpha and limit:
// kGluSwiGluOai only.
#define FOLIO_VK_GLU_PARAMS \
  FOLIO_VK_TENSOR g;        \
  FOLIO_VK_TENSOR u;        \
  FOLIO_VK_TENSOR d;        \
  float alpha;              \
  float limit;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_ELEMENTWISE_INTERFACE_H
