// Shared declarations of every folio compute shader (see ../kernels.h for the
// binding conventions). Include after #version and the extension line:
//   #extension GL_GOOGLE_include_directive : require
//   #include "common.glsl"

#include "interface.h"

// A tensor as the host describes it (TensorDesc in kernels.h): byte offset of
// element 0 within the bound buffer, elements per dim, byte strides.
struct Tensor {
  uint off;
  uint ne0, ne1, ne2, ne3;
  uint nb0, nb1, nb2, nb3;
};

layout(std430, binding = 1) buffer Errors {
  uint err_code;
  uint err_arg;
};

// report_error's codes are interface.h's kErr*.
void report_error(uint code, uint arg) {
  if (atomicCompSwap(err_code, 0u, code) == 0u) err_arg = arg;
}

// Linear workgroup index over a (x, y) grid (the host splits large counts).
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Byte offset of element (i0 (a plain type's element), i1, i2, i3).
uint elem_off(Tensor t, uint i0, uint i1, uint i2, uint i3) {
  return t.off + i0 * t.nb0 + i1 * t.nb1 + i2 * t.nb2 + i3 * t.nb3;
}
uint row_off(Tensor t, uint i1, uint i2, uint i3) {
  return t.off + i1 * t.nb1 + i2 * t.nb2 + i3 * t.nb3;
}

// Splits a flat row index into (i1, i2, i3) for a tensor's ne1, ne2.
uvec3 unflatten_rows(uint r, uint ne1, uint ne2) {
  uint i1 = r % ne1;
  uint r2 = r / ne1;
  return uvec3(i1, r2 % ne2, r2 / ne2);
}

// Reading raw words of a buffer declared `uint NAME[]`: byte helpers. Used as
// macros so one definition serves every binding.
#define READ_U8(buf, byte_off) ((buf[(byte_off) >> 2] >> (((byte_off) & 3u) * 8u)) & 0xffu)
#define READ_U16(buf, byte_off) \
  ((((byte_off) & 3u) == 0u) ? (buf[(byte_off) >> 2] & 0xffffu) \
   : (((byte_off) & 3u) == 2u) ? (buf[(byte_off) >> 2] >> 16) \
   : (READ_U8(buf, byte_off) | (READ_U8(buf, (byte_off) + 1u) << 8)))
#define READ_U32(buf, byte_off) \
  ((((byte_off) & 3u) == 0u) ? buf[(byte_off) >> 2] \
   : (READ_U16(buf, byte_off) | (READ_U16(buf, (byte_off) + 2u) << 16)))
#define READ_F32(buf, byte_off) uintBitsToFloat(READ_U32(buf, byte_off))
#define READ_F16(buf, byte_off) unpackHalf2x16(READ_U16(buf, byte_off)).x
#define READ_BF16(buf, byte_off) uintBitsToFloat(READ_U16(buf, byte_off) << 16)
#define READ_I32(buf, byte_off) int(READ_U32(buf, byte_off))
