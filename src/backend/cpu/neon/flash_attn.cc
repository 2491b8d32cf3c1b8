// NEON flash attention (kFlashAttn): the tile primitives of
// drivers/flash_attn_tiled.h, which owns the plan, the block-table reads,
// split-K and threads. K / V rows are f32, f16 (FCVTL) or q8_0 (int8 ->
// f32 times the block scale), converted the same way into tile buffers
// (prefill) or into one row buffer on the fly (decode), so both paths give
// every score the same bits.
// scores   one dot product per (row, key): four 4-lane FMA chains over the
//          padded head dimension (a multiple of 16), added pairwise, then
//          across lanes.
// softmax  4-lane groups of [jb, je), the tail through a -inf padded
//          vector; p = exp(x - m) by neon::exp; the sum in 4 lanes.
// pv       acc * ms, then p_j v_j for j ascending, 4 columns at a time;
//          f32 V rows read in place, others converted once per key.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/drivers/flash_attn_tiled.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

void convert_row(DType dtype, const void* src, int64_t d, float* out, int64_t ld) {
  int64_t c = 0;
  if (dtype == DType::F32) {
    std::memcpy(out, src, sizeof(float) * static_cast<size_t>(d));
    c = d;
  } else if (dtype == DType::F16) {
    const auto* x = static_cast<const uint16_t*>(src);
    for (; c + 4 <= d; c += 4) vst1q_f32(out + c, neon::load_f16x4(x + c));
    for (; c < d; ++c) {
      uint16_t bits;
      std::memcpy(&bits, x + c, sizeof(bits));
      out[c] = f16_to_f32(bits);
    }
  } else {  // Q8_0: d % 32 == 0
    const auto* b = static_cast<const quant::BlockQ8_0*>(src);
    for (; c < d; c += 32, ++b) {
      const float32x4_t scale = vdupq_n_f32(neon::half_to_float(&b->d));
      for (int k = 0; k < 32; k += 8) {
        const int16x8_t q = vmovl_s8(vld1_s8(b->qs + k));
        vst1q_f32(out + c + k, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), scale));
        vst1q_f32(out + c + k + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(q)), scale));
      }
    }
  }
  for (; c < ld; ++c) out[c] = 0.0f;
}

void convert_rows_neon(DType dtype, const void* const* src, int n, int64_t d, float* dst,
                       int64_t ld) {
  for (int i = 0; i < n; ++i) convert_row(dtype, src[i], d, dst + i * ld, ld);
}

// ld % 16 == 0.
float dot(const float* a, const float* b, int64_t ld) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t c = 0; c < ld; c += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + c), vld1q_f32(b + c));
    s1 = vfmaq_f32(s1, vld1q_f32(a + c + 4), vld1q_f32(b + c + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(a + c + 8), vld1q_f32(b + c + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(a + c + 12), vld1q_f32(b + c + 12));
  }
  return neon::hsum(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

void scores_neon(const float* q, int n_rows, const float* k, int64_t ld, const int* lo,
                 const int* hi, float* s, int lds) {
  for (int r = 0; r < n_rows; ++r) {
    for (int j = lo[r]; j < hi[r]; ++j) s[r * lds + j] = dot(q + r * ld, k + j * ld, ld);
  }
}

thread_local std::vector<float> t_row;  // one converted K / V row

float* row_buffer(int64_t ld) {
  if (t_row.size() < static_cast<size_t>(ld)) t_row.resize(static_cast<size_t>(ld));
  return t_row.data();
}

void scores_packed_neon(const float* q, int n_rows, int64_t ld, DType dtype, const void* const* k,
                        int64_t d, int jb, int je, float* s, int lds) {
  float* kf = row_buffer(ld);
  for (int j = jb; j < je; ++j) {
    convert_row(dtype, k[j], d, kf, ld);
    for (int r = 0; r < n_rows; ++r) s[r * lds + j] = dot(q + r * ld, kf, ld);
  }
}

float softmax_neon(const float* s, int jb, int je, const FlashScoreParams& p, float* m_io,
                   float* l_io, float* pr) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const float tmax = flash_logits(s, jb, je, p, pr);
  float m = *m_io, l = *l_io;
  const float ms = flash_raise_max(
      tmax, m, l, [](float x) { return vgetq_lane_f32(neon::exp(vdupq_n_f32(x)), 0); });
  const float32x4_t mv = vdupq_n_f32(m);
  float32x4_t sum = vdupq_n_f32(0.0f);
  int j = jb;
  for (; j + 4 <= je; j += 4) {
    const float32x4_t e = neon::exp(vsubq_f32(vld1q_f32(pr + j), mv));
    vst1q_f32(pr + j, e);
    sum = vaddq_f32(sum, e);
  }
  if (j < je) {
    float t[4] = {kNegInf, kNegInf, kNegInf, kNegInf};
    for (int i = 0; j + i < je; ++i) t[i] = pr[j + i];
    const float32x4_t e = neon::exp(vsubq_f32(vld1q_f32(t), mv));  // padding: exp(-inf) = 0
    vst1q_f32(t, e);
    for (int i = 0; j + i < je; ++i) pr[j + i] = t[i];
    sum = vaddq_f32(sum, e);
  }
  *m_io = m;
  *l_io = l + neon::hsum(sum);
  return ms;
}

void pv_neon(const float* p, int ldp, const float* ms, int n_rows, int jb, int je, float* acc,
             int64_t lda, DType dtype, const void* const* v, int64_t dv, int64_t ldv) {
  for (int r = 0; r < n_rows; ++r) {
    float* a = acc + r * lda;
    const float32x4_t f = vdupq_n_f32(ms[r]);
    int64_t c = 0;
    for (; c + 4 <= ldv; c += 4) vst1q_f32(a + c, vmulq_f32(vld1q_f32(a + c), f));
    for (; c < ldv; ++c) a[c] *= ms[r];
  }
  // f32 V rows are read in place (a cache row holds only dv floats: the
  // columns past it take a zero, as from a padded buffer); f16 / q8_0 rows
  // are converted once per key into the zero-padded buffer.
  float* buf = dtype == DType::F32 ? nullptr : row_buffer(ldv);
  for (int j = jb; j < je; ++j) {
    const float* vr = static_cast<const float*>(v[j]);
    int64_t valid = dv;
    if (buf != nullptr) {
      convert_row(dtype, v[j], dv, buf, ldv);
      vr = buf;
      valid = ldv;
    }
    for (int r = 0; r < n_rows; ++r) {
      float* a = acc + r * lda;
      const float pj = p[r * ldp + j];
      const float32x4_t pv = vdupq_n_f32(pj);
      int64_t c = 0;
      for (; c + 4 <= valid; c += 4) {
        vst1q_f32(a + c, vfmaq_f32(vld1q_f32(a + c), pv, vld1q_f32(vr + c)));
      }
      for (; c < valid; ++c) a[c] = std::fma(pj, vr[c], a[c]);
      for (; c < ldv; ++c) a[c] = std::fma(pj, 0.0f, a[c]);
    }
  }
}

}  // namespace

FOLIO_FLASH_ATTN_KERNEL(neon)

}  // namespace folio::cpu
