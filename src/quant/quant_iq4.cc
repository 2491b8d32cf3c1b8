// IQ4_NL (32-element blocks) and IQ4_XS (256-element super-blocks): 4-bit
// indices into the non-linear level table kIQ4NLValues (blocks.h). IQ4_XS
// adds a 6-bit signed scale (offset 32) per 32 elements under an f16 super
// scale. Dequantize only: value = (d [* (ls - 32)]) * level, rounded in that
// order as the gguf package computes it.
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_ref.h"
#include "quant/strict_fp.h"

namespace folio::quant::ref {

void dequantize_iq4_nl(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockIQ4_NL>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIQ4NLValues[b.qs[j] & 0xF]);
      dst[j + kQK / 2] = d * static_cast<float>(kIQ4NLValues[b.qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockIQ4_XS>(src, i);
    const float d = f16_to_f32(b.d);
    for (int g = 0; g < kQKK / 32; ++g) {
      const int ls =
          ((b.scales_l[g / 2] >> (4 * (g % 2))) & 0xF) | (((b.scales_h >> (2 * g)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = b.qs + 16 * g;
      float* y = dst + 32 * g;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIQ4NLValues[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIQ4NLValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace folio::quant::ref
