// What every host/shader interface header builds on (mat_interface.h,
// norm_interface.h, elementwise_interface.h, rope_interface.h,
// attention_interface.h, recurrent_interface.h, moe_interface.h,
// sort_interface.h): one spelling of
// a constant or a binding-0 field list that both GLSL
// (GL_GOOGLE_include_directive; common.glsl includes this) and C++ (the
// ops_*.cc record functions, after kernels.h) compile. Constants are
// `FOLIO_VK_CONST kName = value;`; a parameter struct is a macro of fields
// of 4-byte types (FOLIO_VK_TENSOR, FOLIO_VK_UINT, FOLIO_VK_INT, float), so
// std430 lays it out as C++ does, which the record function checks with
// static_asserts on its size and offsets.
#ifndef FOLIO_VK_INTERFACE_H
#define FOLIO_VK_INTERFACE_H

#ifdef __cplusplus
#include <cstdint>
#define FOLIO_VK_CONST inline constexpr uint32_t
#define FOLIO_VK_TENSOR TensorDesc
#define FOLIO_VK_UINT uint32_t
#define FOLIO_VK_INT int32_t
#define FOLIO_VK_NAMESPACE_BEGIN namespace folio::vulkan {
#define FOLIO_VK_NAMESPACE_END }
#else
#define FOLIO_VK_CONST const uint
#define FOLIO_VK_TENSOR Tensor
#define FOLIO_VK_UINT uint
#define FOLIO_VK_INT int
#define FOLIO_VK_NAMESPACE_BEGIN
#define FOLIO_VK_NAMESPACE_END
#endif

FOLIO_VK_NAMESPACE_BEGIN

// Error codes a shader writes to binding 1 (report_error in common.glsl);
// vulkan_backend.cc turns them into a Status at its next synchronize().
FOLIO_VK_CONST kErrIdRange = 1u;     // an id / slot / index outside its table
FOLIO_VK_CONST kErrSeqRange = 2u;    // attention: seq_idx or kv_len out of range
FOLIO_VK_CONST kErrBlockRange = 3u;  // attention: block-table entry out of range
FOLIO_VK_CONST kErrDupSlot = 4u;     // fused state ops: a destination slot used twice

// Storage types of K/V rows and cache tables as spec constants
// (flash_attn.comp's KT / VT, set_rows.comp's DT, rope_set_rows.comp's
// KDT / VDT).
FOLIO_VK_CONST kDtypeF32 = 0u;
FOLIO_VK_CONST kDtypeF16 = 1u;
FOLIO_VK_CONST kDtypeBF16 = 2u;
FOLIO_VK_CONST kDtypeQ8_0 = 3u;

// The workgroup of the shaders that give each invocation one element or
// work item (add, scale, cpy, unary, glu, rope, rope_set_rows, moe_sum,
// ssm_conv, ssm_conv_update) and of moe_route (one per token).
FOLIO_VK_CONST kElementWorkgroup = 256u;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_INTERFACE_H
