// Parity cases: cache writes (set_rows through a slot mapping).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <numeric>

#include "parity/harness.h"

namespace folio::parity {
namespace {

// Q8_0 blocks that take the quantizer's rare paths, one per 32 values (the
// rest of the row stays uniform): an all-zero block led by -0.0, a scale of
// exactly 1 with ties of x * id at k + 0.5 (roundf rounds them away from
// zero), an infinity (d = inf, codes 0), a NaN among finite values (ignored by
// the maximum, code 0), denormal values (d and its f16 underflow, 1 / d
// overflows), tiny normals whose d is denormal, values at the edge of f32
// range, and values whose x * id lies within an ulp or two of k + 0.5 (a
// scale or inverse one ulp off, as an inexact division gives, flips codes).
void fill_q8_0_edge_blocks(float* x, int64_t n_cols, int64_t n_rows) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm = std::numeric_limits<float>::denorm_min();
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = x + r * n_cols;
    const int64_t n_blk = n_cols / 32;
    for (int64_t b = 0; b < n_blk; ++b) {
      float* blk = row + 32 * b;
      switch ((b + r) % 9) {
        case 0:
          for (int j = 0; j < 32; ++j) blk[j] = 0.0f;
          blk[0] = -0.0f;
          break;
        case 1:
          for (int j = 0; j < 32; ++j) blk[j] = static_cast<float>(j % 8) - 3.5f;
          blk[5] = 127.0f, blk[6] = -0.5f, blk[7] = 0.5f;
          break;
        case 2:
          blk[3] = -inf;
          break;
        case 3:
          blk[9] = nan;
          break;
        case 4:
          for (int j = 0; j < 32; ++j) blk[j] = static_cast<float>(j - 16) * denorm * 1000.0f;
          break;
        case 5:
          for (int j = 0; j < 32; ++j) blk[j] *= 1e-36f;
          break;
        case 6:
          blk[0] = std::numeric_limits<float>::max(), blk[1] = -1e38f;
          break;
        case 7: {
          // blk[0] (uniform, the largest magnitude) sets d = |blk[0]| / 127
          // and id = 1 / d as the reference computes them.
          blk[0] = std::copysign(2.0f + std::fabs(blk[0]), blk[0]);
          const float id = 1.0f / (std::fabs(blk[0]) / 127.0f);
          for (int j = 1; j < 32; ++j) {
            const float half = static_cast<float>((j * 37) % 126) + 0.5f;
            float v = half / id;
            for (int u = 0; u < (j % 5); ++u) v = std::nextafter(v, 0.0f);
            for (int u = 0; u < 2; ++u) v = std::nextafter(v, 1000.0f);
            blk[j] = (j % 2 == 0) ? -v : v;
          }
          break;
        }
        default:
          break;  // uniform values
      }
    }
  }
}

// Values that take f32 -> f16's rare paths, cycling along each row: NaNs
// (quiet, signalling, with payload bits below and within f16's mantissa),
// infinities, the largest f16 and the overflow boundary around 65520, ties
// to even in the normal and subnormal ranges, f16 subnormals, values that
// round to 0 or to the smallest subnormal, f32 denormals and signed zeros.
void fill_f16_edge_values(float* x, int64_t n) {
  auto bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  const float values[] = {
      bits(0x7fc00000u), bits(0xffc00001u), bits(0x7f800001u), bits(0x7fa02000u),
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      65504.0f, -65504.0f, 65519.996f, 65520.0f, -65520.0f, 65536.0f, 1e30f,
      1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.0f + 0x1p-11f + 0x1p-20f,  // ties, above a tie
      0x1p-14f, 0x1p-15f, 0x3p-25f, 0x5p-25f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f,
      -0x1p-26f, 1e-8f, std::numeric_limits<float>::denorm_min(), -1e-40f, 0.0f, -0.0f,
      6.1e-5f, 3.14159265f, -2.71828182f};
  constexpr int64_t kN = sizeof(values) / sizeof(values[0]);
  for (int64_t i = 0; i < n; ++i) x[i] = values[(i * 7) % kN];
}

}  // namespace

void add_cache_cases(CaseList& cases) {
  struct Shape {
    DType type;
    int64_t n_cols, n_rows, n_slots;
    bool duplicates = false;   // slots drawn with repeats: the last row wins
    bool edge_values = false;  // q8_0: blocks of fill_q8_0_edge_blocks; f16: fill_f16_edge_values
    int64_t heads = 1;         // rows as [n_cols, heads, n_rows / heads] (a K tensor's view)
  };
  const Shape shapes[] = {
      {DType::F32, 128, 7, 64},  {DType::F16, 128, 7, 64},   {DType::BF16, 96, 5, 40},
      {DType::Q8_0, 256, 9, 48}, {DType::F16, 1024, 1, 16},  {DType::Q8_0, 512, 33, 128},
      // Odd widths: 16-bit rows that share 32-bit words with their neighbours.
      {DType::F16, 33, 40, 12, true}, {DType::BF16, 17, 9, 30}, {DType::F32, 5, 300, 7, true},
      // Q8_0 rows of an odd block count (102 and 4454 bytes: rows share 32-bit
      // words), and rows longer than a Vulkan chunk of 128 blocks.
      {DType::Q8_0, 96, 11, 20, true}, {DType::Q8_0, 32 * 131, 5, 9},
      {DType::Q8_0, 288, 36, 40, false, true}, {DType::F16, 100, 30, 40, false, true},
      // Tables written by several threads (from 2^16 values): a prefill's K
      // rows, with repeated slots, and rows given per head.
      {DType::F16, 192, 512, 700}, {DType::F16, 192, 512, 300, true},
      {DType::Q8_0, 256, 300, 200, true}, {DType::F32, 128, 600, 900, true},
      {DType::F16, 64, 1536, 2048, false, false, 3},
  };
  for (const Shape& sh : shapes) {
    auto c = std::make_unique<OpCase>(
        fmt::format("set_rows {} cols={} rows={} slots={}{}{}{}", dtype_name(sh.type), sh.n_cols,
                    sh.n_rows, sh.n_slots, sh.duplicates ? " duplicates" : "",
                    sh.edge_values ? " edge values" : "",
                    sh.heads > 1 ? fmt::format(" as {} heads", sh.heads) : ""));
    Op& op = c->op;
    op.kind = OpKind::kSetRows;
    op.src[0] = sh.heads > 1 ? c->alloc(DType::F32, {sh.n_cols, sh.heads, sh.n_rows / sh.heads})
                             : c->alloc(DType::F32, {sh.n_cols, sh.n_rows});
    op.src[1] = c->alloc(DType::I32, {sh.n_rows});
    op.dst = c->alloc(sh.type, {sh.n_cols, sh.n_slots});
    c->fill_uniform(op.src[0], -3.0f, 3.0f);
    if (sh.edge_values && sh.type == DType::Q8_0) {
      fill_q8_0_edge_blocks(static_cast<float*>(op.src[0].data), sh.n_cols, sh.n_rows);
    } else if (sh.edge_values) {
      fill_f16_edge_values(static_cast<float*>(op.src[0].data), sh.n_cols * sh.n_rows);
    }
    c->fill_uniform(op.dst, -1.0f, 1.0f);  // untouched rows must survive
    if (sh.duplicates) {
      c->fill_ints(op.src[1], 0, static_cast<int32_t>(sh.n_slots) - 1);
    } else {
      // Distinct shuffled slots: a scattered slot mapping like a paged cache's.
      std::vector<int32_t> perm(static_cast<size_t>(sh.n_slots));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), c->rng());
      std::copy_n(perm.begin(), sh.n_rows, static_cast<int32_t*>(op.src[1].data));
    }
    c->exact = true;  // a conversion has one right answer
    c->in_place = true;
    c->bytes = static_cast<double>(op.src[0].nbytes_contiguous() + op.dst.row_bytes() * sh.n_rows);
    cases.push_back(std::move(c));
  }
}

}  // namespace folio::parity
