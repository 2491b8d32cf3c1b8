#include "backend/cpu/drivers/mul_mat_tiled.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/drivers/grow_buffer.h"
#include "backend/cpu/drivers/mul_mat_id.h"
#include "backend/cpu/drivers/parallel.h"
#include "core/aligned.h"
#include "core/check.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_ref.h"

namespace folio::cpu {

namespace {

// Activation bytes kept hot while the row tiles of a chunk stream past them.
constexpr size_t kActBlockBytes = 256 * 1024;
// Below this many multiply-adds an op runs on the calling thread only. The
// pool hands work over in about a microsecond while its threads spin
// (core/thread_pool.h), so even a decode step's small K/V projections
// (e.g. 640 x 256: ~10 us on one core) are worth splitting.
constexpr double kMinParallelMacs = 1 << 16;

// Scratch kept per calling thread and grown on demand, so that the small
// ops of a decode step (run back to back on one thread) reuse their buffers
// instead of allocating on every call. Slot 0: converted activation rows;
// slot 1: mul_mat_id's expert-ordered outputs. nullptr when allocation fails.
void* thread_scratch(int slot, size_t bytes) {
  thread_local GrowBuffer buffers[2];
  return buffers[slot].get(bytes);
}

// Converts src (k floats) into `spec.act` at dst: the tier's quantizer when it
// has one, else the reference; kF32 rows are copied.
void convert_row(const MatMulSpec& spec, const float* src, void* dst, int64_t k) {
  if (spec.act == ActFormat::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(k) * sizeof(float));
  } else if (spec.convert != nullptr) {
    spec.convert(src, dst, k);
  } else {
    convert_act_row(spec.act, src, dst, k);
  }
}

// Rows of `m` activation rows per M block so that a block stays in L2,
// a multiple of the tile's columns.
int64_t m_block_rows(const MatMulSpec& spec, size_t row_bytes) {
  const int64_t tc = spec.tile_cols;
  return std::max<int64_t>(
      tc, static_cast<int64_t>(kActBlockBytes / std::max<size_t>(row_bytes, 1)) / tc * tc);
}

}  // namespace

size_t act_row_bytes(ActFormat f, int64_t k) {
  switch (f) {
    case ActFormat::kF32:
      return 0;
    case ActFormat::kQ8_0:
      return align_up(static_cast<size_t>(k + 12 * (k / 32)), 64);
    case ActFormat::kQ8_K:
      return align_up(static_cast<size_t>(k / quant::kQKK) * sizeof(quant::BlockQ8_K), 64);
    case ActFormat::kBf16Split:
      return align_up(static_cast<size_t>((k + quant::kQK - 1) / quant::kQK * quant::kQK) * 4, 64);
  }
  return 0;
}

void convert_act_row(ActFormat f, const float* src, void* dst, int64_t k) {
  switch (f) {
    case ActFormat::kF32:
      FOLIO_CHECK_MSG(false, "kF32 rows are not converted");
      break;
    case ActFormat::kQ8_0: {
      // Quantize with the reference (blocks of 34 bytes), then unpack the
      // quants, scales and block sums into the SIMD-friendly row layout.
      const int64_t nb = k / quant::kQK;
      std::vector<quant::BlockQ8_0> blocks(static_cast<size_t>(nb));
      quant::ref::quantize_q8_0(src, blocks.data(), k);
      const MutableQ8Row32 row = q8row32(dst, k);
      for (int64_t b = 0; b < nb; ++b) {
        std::memcpy(row.qs + b * quant::kQK, blocks[b].qs, quant::kQK);
        int32_t sum = 0;
        for (int j = 0; j < quant::kQK; ++j) sum += blocks[b].qs[j];
        row.d[b] = f16_to_f32(blocks[b].d);
        row.sum[b] = sum;
        row.ds[b] = row.d[b] * static_cast<float>(sum);
      }
      break;
    }
    case ActFormat::kQ8_K:
      quant::ref::quantize_q8_k(src, dst, k);
      break;
    case ActFormat::kBf16Split: {
      const int64_t kpad = (k + quant::kQK - 1) / quant::kQK * quant::kQK;
      auto* hi = static_cast<uint16_t*>(dst);
      uint16_t* lo = hi + kpad;
      for (int64_t i = 0; i < kpad; ++i) {
        const amx_f16::Split s = i < k ? amx_f16::split_activation(src[i]) : amx_f16::Split{0, 0};
        hi[i] = s.hi;
        lo[i] = s.lo;
      }
      break;
    }
  }
}

Status mul_mat_tiled(const Op& op, const KernelContext& ctx, const MatMulSpec& spec) {
  const TensorView& w = op.src[0];  // [K, N, B2w, B3w]
  const TensorView& x = op.src[1];  // [K, M, B2, B3]
  const TensorView& y = op.dst;     // [N, M, B2, B3]
  const int64_t k = w.ne[0], n = w.ne[1];
  const int64_t m = x.ne[1], b2 = x.ne[2], b3 = x.ne[3];
  if (n == 0 || m == 0 || b2 == 0 || b3 == 0) return Status();
  const int64_t r2 = b2 / w.ne[2], r3 = b3 / w.ne[3];  // W broadcast factors
  const bool parallel = static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(m) *
                            static_cast<double>(b2 * b3) >=
                        kMinParallelMacs;

  // 1. Activations in the tile's format. Converted row (i1, i2, i3) lives at
  //    scratch + ((i3 * b2 + i2) * m + i1) * x_row_bytes.
  unsigned char* scratch = nullptr;
  size_t x_row_bytes = x.nb[1];
  if (spec.act != ActFormat::kF32) {
    x_row_bytes = act_row_bytes(spec.act, k);
    const int64_t rows = m * b2 * b3;
    scratch =
        static_cast<unsigned char*>(thread_scratch(0, x_row_bytes * static_cast<size_t>(rows)));
    if (scratch == nullptr) {
      return resource_exhausted("mul_mat: cannot allocate {} bytes of activation scratch",
                                x_row_bytes * static_cast<size_t>(rows));
    }
    unsigned char* base = scratch;
    run_range_ref(ctx, rows, parallel, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i1 = r % m, i2 = (r / m) % b2, i3 = r / (m * b2);
        convert_row(spec, x.row<const float>(i1, i2, i3), base + r * x_row_bytes, k);
      }
    });
  }
  auto x_row = [&](int64_t i1, int64_t i2, int64_t i3) -> const unsigned char* {
    if (spec.act == ActFormat::kF32) return x.row<const unsigned char>(i1, i2, i3);
    return scratch + ((i3 * b2 + i2) * m + i1) * static_cast<int64_t>(x_row_bytes);
  };

  // 2. Tiles. Work item t = batch * n_tiles + row tile.
  const int tr = spec.tile_rows, tc = spec.tile_cols;
  const int64_t n_tiles = (n + tr - 1) / tr;
  const int64_t m_block =
      m_block_rows(spec, spec.act == ActFormat::kF32 ? static_cast<size_t>(k) * 4 : x_row_bytes);
  run_range_ref(ctx, b2 * b3 * n_tiles, parallel, [&](int64_t begin, int64_t end) {
    int64_t t = begin;
    while (t < end) {
      const int64_t batch = t / n_tiles;
      const int64_t t_end = std::min(end, (batch + 1) * n_tiles);  // tiles of this batch
      const int64_t i2 = batch % b2, i3 = batch / b2;
      const unsigned char* w_batch =
          static_cast<const unsigned char*>(w.data) + (i2 / r2) * w.nb[2] + (i3 / r3) * w.nb[3];
      if (spec.panel != nullptr) {
        // The chunk's rows of this batch against all its activation rows.
        const int64_t n0 = (t - batch * n_tiles) * tr;
        const int64_t n1 = std::min(n, (t_end - batch * n_tiles) * tr);
        const size_t x_stride = spec.act == ActFormat::kF32 ? x.nb[1] : x_row_bytes;
        spec.panel(k, w_batch + n0 * w.nb[1], w.nb[1], n1 - n0, x_row(0, i2, i3), x_stride, m,
                   y.row<float>(0, i2, i3) + n0, y.nb[1]);
        t = t_end;
        continue;
      }
      for (int64_t m0 = 0; m0 < m; m0 += m_block) {
        const int64_t m1 = std::min(m, m0 + m_block);
        for (int64_t tile = t - batch * n_tiles; tile < t_end - batch * n_tiles; ++tile) {
          const int64_t n0 = tile * tr;
          const int nr = static_cast<int>(std::min<int64_t>(tr, n - n0));
          for (int64_t c0 = m0; c0 < m1; c0 += tc) {
            const int nc = static_cast<int>(std::min<int64_t>(tc, m1 - c0));
            const size_t x_stride = spec.act == ActFormat::kF32 ? x.nb[1] : x_row_bytes;
            spec.tile(k, w_batch + n0 * w.nb[1], w.nb[1], nr, x_row(c0, i2, i3), x_stride, nc,
                      y.row<float>(c0, i2, i3) + n0, y.nb[1]);
          }
        }
      }
      t = t_end;
    }
  });
  return Status();
}

Status group_pairs_by_expert(const Op& op, std::vector<int64_t>& first, std::vector<int64_t>& order,
                             std::vector<int64_t>& next) {
  FOLIO_RETURN_IF_ERROR(check_mul_mat_id(op));
  const TensorView& ids = op.src[2];  // I32 [n_used, T]
  const int64_t n_exp = op.src[0].ne[2], n_used = ids.ne[0], n_tok = ids.ne[1];
  first.assign(static_cast<size_t>(n_exp) + 1, 0);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u)
      ++first[static_cast<size_t>(*ids.at<const int32_t>(u, t)) + 1];
  }
  for (int64_t e = 0; e < n_exp; ++e) first[e + 1] += first[e];
  order.resize(static_cast<size_t>(n_used * n_tok));
  next.assign(first.begin(), first.end() - 1);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u)
      order[next[*ids.at<const int32_t>(u, t)]++] = t * n_used + u;
  }
  return Status();
}

Status mul_mat_id_tiled(const Op& op, const KernelContext& ctx, const MatMulSpec& spec) {
  const TensorView& w = op.src[0];  // [K, N, E]
  const auto [k, n, n_exp, n_used, n_pairs] = mul_mat_id_dims(op);
  // Index vectors reused across calls. Lambdas below run on pool threads:
  // they must see the caller's vectors through these references, never name
  // a thread_local themselves.
  thread_local std::vector<int64_t> tl_first, tl_order, tl_next, tl_experts;
  if (n == 0 || n_pairs == 0) return Status();
  std::vector<int64_t>& first = tl_first;
  std::vector<int64_t>& order = tl_order;
  std::vector<int64_t>& experts = tl_experts;
  FOLIO_RETURN_IF_ERROR(group_pairs_by_expert(op, first, order, tl_next));
  const bool parallel =
      static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(n_pairs) >=
      kMinParallelMacs;

  // 1. Activation rows in slot order (converted, or copied for kF32), and a
  //    slot-ordered output buffer: a tile sees its expert's rows contiguously.
  const size_t x_row_bytes = spec.act == ActFormat::kF32 ? align_up(static_cast<size_t>(k) * 4, 64)
                                                         : act_row_bytes(spec.act, k);
  const size_t y_row_bytes = static_cast<size_t>(n) * 4;
  const size_t bytes = x_row_bytes * static_cast<size_t>(n_pairs);
  auto* xb = static_cast<unsigned char*>(thread_scratch(0, bytes));
  auto* yb =
      static_cast<unsigned char*>(thread_scratch(1, y_row_bytes * static_cast<size_t>(n_pairs)));
  if (xb == nullptr || yb == nullptr) {
    return resource_exhausted("mul_mat_id: cannot allocate {} bytes of scratch",
                              bytes + y_row_bytes * static_cast<size_t>(n_pairs));
  }
  gather_expert_rows(ctx, parallel, order, n_used, op.src[1], xb, x_row_bytes,
                     [&](const float* src, void* dst) { convert_row(spec, src, dst, k); });

  // 2. Work items: (expert, row tile) for the experts in use.
  const int tr = spec.tile_rows, tc = spec.tile_cols;
  const int64_t n_tiles = (n + tr - 1) / tr;
  experts.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    if (first[e + 1] > first[e]) experts.push_back(e);
  }
  const int64_t m_block = m_block_rows(spec, x_row_bytes);
  run_range_ref(ctx, static_cast<int64_t>(experts.size()) * n_tiles, parallel,
                [&](int64_t begin, int64_t end) {
                  for (int64_t item = begin; item < end; ++item) {
                    const int64_t e = experts[item / n_tiles], n0 = (item % n_tiles) * tr;
                    const int nr = static_cast<int>(std::min<int64_t>(tr, n - n0));
                    const unsigned char* w_rows =
                        static_cast<const unsigned char*>(w.data) + e * w.nb[2] + n0 * w.nb[1];
                    for (int64_t m0 = first[e]; m0 < first[e + 1]; m0 += m_block) {
                      const int64_t m1 = std::min(first[e + 1], m0 + m_block);
                      for (int64_t c0 = m0; c0 < m1; c0 += tc) {
                        const int nc = static_cast<int>(std::min<int64_t>(tc, m1 - c0));
                        spec.tile(k, w_rows, w.nb[1], nr, xb + c0 * x_row_bytes, x_row_bytes, nc,
                                  reinterpret_cast<float*>(yb + c0 * y_row_bytes) + n0,
                                  y_row_bytes);
                      }
                    }
                  }
                });

  // 3. Scatter the slot-ordered outputs to dst[:, u, t].
  scatter_expert_rows(ctx, parallel, order, n_used, yb, y_row_bytes, op.dst);
  return Status();
}

}  // namespace folio::cpu
