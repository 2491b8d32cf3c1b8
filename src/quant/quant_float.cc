// F32 / F16 / BF16 rows. Element-wise conversions from core/fp16.h: f16 and
// bf16 round to nearest even (bf16 quiets NaNs the way ggml and the gguf
// package do), widening is exact.
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_ref.h"

namespace folio::quant::ref {

void dequantize_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const unsigned char*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = f16_to_f32(h);
  }
}

void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const unsigned char*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    dst[i] = bf16_to_f32(b);
  }
}

void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = f32_to_bf16(src[i]);
    std::memcpy(p + 2 * i, &b, 2);
  }
}

}  // namespace folio::quant::ref
