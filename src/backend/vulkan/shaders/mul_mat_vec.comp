// kMulMat / kMulMatId and the decode fusions for few activation columns,
// float path: mul_mat_vec.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "mul_mat_vec.glsl"
