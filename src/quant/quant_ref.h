// Per-format scalar reference rows, one function per (format, direction).
// quant.h dispatches to these by DType; SIMD kernels are tested against them
// and may call them directly (e.g. quantize_q8_k for activations).
//
// `n` is the number of elements, a multiple of the format's block size; the
// packed side holds n / block_size blocks of the format's Block* struct
// (blocks.h) and needs no alignment. Floating-point expressions follow the
// gguf package / ggml reference operation by operation (no fused
// multiply-add, no reassociation): results are bit-exact, not just close.
#pragma once

#include <cstdint>
#include <cstring>

namespace folio::quant::ref {

// Plain floats.
void dequantize_f32(const void* src, float* dst, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void quantize_f32(const float* src, void* dst, int64_t n);
void quantize_f16(const float* src, void* dst, int64_t n);
void quantize_bf16(const float* src, void* dst, int64_t n);

// Legacy 32-element blocks.
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q8_1(const void* src, float* dst, int64_t n);
void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q4_1(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
void quantize_q5_1(const float* src, void* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n);
void quantize_q8_1(const float* src, void* dst, int64_t n);

// K-quants, 256-element super-blocks.
void dequantize_q2_k(const void* src, float* dst, int64_t n);
void dequantize_q3_k(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);
void dequantize_q8_k(const void* src, float* dst, int64_t n);
void quantize_q4_k(const float* src, void* dst, int64_t n);
void quantize_q5_k(const float* src, void* dst, int64_t n);
void quantize_q6_k(const float* src, void* dst, int64_t n);
void quantize_q8_k(const float* src, void* dst, int64_t n);

// Non-linear 4-bit.
void dequantize_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_iq4_xs(const void* src, float* dst, int64_t n);

// FP4 (E2M1) codes with power-of-two (MXFP4) or UE4M3 (NVFP4) scales.
void dequantize_mxfp4(const void* src, float* dst, int64_t n);
void dequantize_nvfp4(const void* src, float* dst, int64_t n);
void quantize_mxfp4(const float* src, void* dst, int64_t n);
void quantize_nvfp4(const float* src, void* dst, int64_t n);

// Block i of an unaligned packed row, by value (memcpy: no alignment or
// aliasing assumptions about the caller's buffer).
template <typename Block>
inline Block load_block(const void* base, int64_t i) {
  Block b;
  std::memcpy(&b, static_cast<const unsigned char*>(base) + i * sizeof(Block), sizeof(Block));
  return b;
}
template <typename Block>
inline void store_block(void* base, int64_t i, const Block& b) {
  std::memcpy(static_cast<unsigned char*>(base) + i * sizeof(Block), &b, sizeof(Block));
}

}  // namespace folio::quant::ref
