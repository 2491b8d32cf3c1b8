// kMulMat and the decode fusions for few activation columns, int8 path
// (weights of 32-element blocks on a device with integer dot products):
// mul_mat_vec.glsl's Q8 mode.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#define MUL_MAT_VEC_Q8 1
#include "mul_mat_vec.glsl"
