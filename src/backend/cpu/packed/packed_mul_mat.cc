#include "backend/cpu/packed/packed_mul_mat.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/drivers/grow_buffer.h"
#include "backend/cpu/drivers/mul_mat_id.h"
#include "backend/cpu/drivers/parallel.h"
#include "core/aligned.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

// Activation bytes kept hot while the panels of a chunk stream past them.
constexpr size_t kActBlockBytes = 512 * 1024;
// Panels a decode call (one or two activation rows) streams at once: the
// machine's decode_streams() (core/cpu_features.h), at most 4 (the decode
// kernels' instances).
int decode_panels() {
  static const int n = std::clamp(decode_streams(), 1, 4);
  return n;
}
// Below this many multiply-adds an op runs on the calling thread only.
constexpr double kMinParallelMacs = 1 << 18;

void convert_row(const PackedSpec& spec, const float* src, void* dst, int64_t k) {
  if (spec.convert != nullptr) {
    spec.convert(src, dst, k);
  } else {
    convert_act_row(spec.act, src, dst, k);
  }
}

// Converted activation rows are an odd number of cache lines apart: AMX
// reads a block of 16 rows at once (a tile load), and rows a power-of-two
// multiple of lines apart would all fall into a few L1 sets.
size_t act_stride(ActFormat f, int64_t k) {
  const size_t bytes = act_row_bytes(f, k);
  return (bytes / 64) % 2 == 0 ? bytes + 64 : bytes;
}

// Rows of panel p of an n-row matrix.
int last_panel_rows(int64_t n, int64_t p) {
  return static_cast<int>(std::min<int64_t>(quant::kPanelRows, n - p * quant::kPanelRows));
}

// Whether nc activation rows take the spec's main panel (else small_panel).
bool main_panel_rows(const PackedSpec& spec, int64_t nc) {
  return spec.small_panel == nullptr || nc >= spec.min_panel_rows;
}

// The panel function for a call of nc activation rows.
PanelFn panel_for(const PackedSpec& spec, int64_t nc) {
  return main_panel_rows(spec, nc) ? spec.panel : spec.small_panel;
}

// Whether nc activation rows go through the decode function: up to the
// spec's decode_rows (one or two by default), unless the main panel of a
// spec with a small_panel takes them.
bool use_decode(const PackedSpec& spec, int64_t nc) {
  return nc <= spec.decode_rows && spec.decode != nullptr &&
         (spec.small_panel == nullptr || !main_panel_rows(spec, nc));
}

int64_t m_block_rows(const PackedSpec& spec, size_t row_bytes) {
  const size_t block = spec.act_block_bytes != 0 ? spec.act_block_bytes : kActBlockBytes;
  return std::max<int64_t>(
      16, static_cast<int64_t>(block / std::max<size_t>(row_bytes, 1)) / 16 * 16);
}

}  // namespace

void* packed_thread_scratch(int slot, size_t bytes) {
  constexpr int kSlots = 4;
  thread_local GrowBuffer buffers[kSlots];
  FOLIO_CHECK(slot >= 0 && slot < kSlots);
  return buffers[slot].get(bytes);
}

Status packed_mul_mat(const Op& op, const KernelContext& ctx, const PackedSpec& spec) {
  const TensorView& w = op.src[0];  // [K, N, B2w, B3w] packed
  const TensorView& x = op.src[1];  // [K, M, B2, B3]
  const TensorView& y = op.dst;     // [N, M, B2, B3]
  const int64_t k = w.ne[0], n = w.ne[1];
  const int64_t m = x.ne[1], b2 = x.ne[2], b3 = x.ne[3];
  if (n == 0 || m == 0 || b2 == 0 || b3 == 0) return Status();
  const int64_t r2 = b2 / w.ne[2], r3 = b3 / w.ne[3];
  const bool parallel = static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(m) *
                            static_cast<double>(b2 * b3) >=
                        kMinParallelMacs;

  // 1. Activations: converted row (i1, i2, i3) at scratch + ((i3 * b2 + i2) * m + i1) * row bytes.
  const size_t x_row_bytes = act_stride(spec.act, k);
  const int64_t rows = m * b2 * b3;
  auto* scratch = static_cast<unsigned char*>(
      packed_thread_scratch(0, x_row_bytes * static_cast<size_t>(rows)));
  if (scratch == nullptr) {
    return resource_exhausted("mul_mat: cannot allocate {} bytes of activation scratch",
                              x_row_bytes * static_cast<size_t>(rows));
  }
  // A few decode rows convert faster than the pool wakes up for them.
  const bool parallel_rows = parallel && rows * k >= kMinParallelElements;
  run_range_ref(ctx, rows, parallel_rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i1 = r % m, i2 = (r / m) % b2, i3 = r / (m * b2);
      convert_row(spec, x.row<const float>(i1, i2, i3), scratch + r * x_row_bytes, k);
    }
  });

  // 2. Panels. Work item t = batch * n_panels + panel.
  const int64_t n_panels = (n + quant::kPanelRows - 1) / quant::kPanelRows;
  const size_t panel_bytes = quant::packed_panel_bytes(w.dtype, k);
  const int64_t m_block = m_block_rows(spec, x_row_bytes);
  run_range_ref(ctx, b2 * b3 * n_panels, parallel, [&](int64_t begin, int64_t end) {
    int64_t t = begin;
    while (t < end) {
      const int64_t batch = t / n_panels;
      const int64_t t_end = std::min(end, (batch + 1) * n_panels);
      const int64_t i2 = batch % b2, i3 = batch / b2;
      const unsigned char* w_batch =
          static_cast<const unsigned char*>(w.data) + (i2 / r2) * w.nb[2] + (i3 / r3) * w.nb[3];
      const unsigned char* x_batch =
          scratch + (i3 * b2 + i2) * m * static_cast<int64_t>(x_row_bytes);
      for (int64_t m0 = 0; m0 < m; m0 += m_block) {
        const int nc = static_cast<int>(std::min(m_block, m - m0));
        const int64_t p_end = t_end - batch * n_panels;
        int64_t p0 = t - batch * n_panels;
        if (use_decode(spec, nc)) {
          const int max_np = decode_panels();
          for (; p0 < p_end; p0 += max_np) {
            const int np = static_cast<int>(std::min<int64_t>(max_np, p_end - p0));
            const int64_t n0 = p0 * quant::kPanelRows;
            spec.decode(k, w_batch + p0 * panel_bytes, panel_bytes, np,
                        last_panel_rows(n, p0 + np - 1),
                        x_batch + m0 * static_cast<int64_t>(x_row_bytes), x_row_bytes, nc,
                        y.row<float>(m0, i2, i3) + n0, y.nb[1]);
          }
        }
        const PanelFn panel = panel_for(spec, nc);
        for (int64_t p = p0; p < p_end; ++p) {
          const int64_t n0 = p * quant::kPanelRows;
          const int nr = static_cast<int>(std::min<int64_t>(quant::kPanelRows, n - n0));
          panel(k, w_batch + p * panel_bytes, x_batch + m0 * static_cast<int64_t>(x_row_bytes),
                x_row_bytes, nc, nr, y.row<float>(m0, i2, i3) + n0, y.nb[1]);
        }
      }
      t = t_end;
    }
  });
  return Status();
}

Status packed_mul_mat_id(const Op& op, const KernelContext& ctx, const PackedSpec& spec) {
  const TensorView& w = op.src[0];  // [K, N, E] packed
  const TensorView& y = op.dst;     // [N, n_used, T]
  const auto [k, n, n_exp, n_used, n_pairs] = mul_mat_id_dims(op);
  if (n == 0 || n_pairs == 0) return Status();
  std::vector<int64_t> first, order, next;
  FOLIO_RETURN_IF_ERROR(group_pairs_by_expert(op, first, order, next));
  const bool parallel =
      static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(n_pairs) >=
      kMinParallelMacs;

  // 1. Activation rows in slot order, and a slot-ordered output buffer.
  const size_t x_row_bytes = act_stride(spec.act, k);
  const size_t y_row_bytes = static_cast<size_t>(n) * 4;
  auto* xb = static_cast<unsigned char*>(
      packed_thread_scratch(0, x_row_bytes * static_cast<size_t>(n_pairs)));
  auto* yb = static_cast<unsigned char*>(
      packed_thread_scratch(1, y_row_bytes * static_cast<size_t>(n_pairs)));
  if (xb == nullptr || yb == nullptr) {
    return resource_exhausted("mul_mat_id: cannot allocate {} bytes of scratch",
                              (x_row_bytes + y_row_bytes) * static_cast<size_t>(n_pairs));
  }
  gather_expert_rows(ctx, parallel, order, n_used, op.src[1], xb, x_row_bytes,
                     [&](const float* src, void* dst) { convert_row(spec, src, dst, k); });

  // 2. Work items: (expert in use, panel).
  std::vector<int64_t> experts;
  for (int64_t e = 0; e < n_exp; ++e) {
    if (first[e + 1] > first[e]) experts.push_back(e);
  }
  const int64_t n_panels = (n + quant::kPanelRows - 1) / quant::kPanelRows;
  const size_t panel_bytes = quant::packed_panel_bytes(w.dtype, k);
  const int64_t m_block = m_block_rows(spec, x_row_bytes);
  run_range_ref(
      ctx, static_cast<int64_t>(experts.size()) * n_panels, parallel,
      [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end;) {
          const int64_t e = experts[item / n_panels], p = item % n_panels;
          const int64_t n0 = p * quant::kPanelRows;
          const int nr = static_cast<int>(std::min<int64_t>(quant::kPanelRows, n - n0));
          const unsigned char* panel =
              static_cast<const unsigned char*>(w.data) + e * w.nb[2] + p * panel_bytes;
          const int64_t rows = first[e + 1] - first[e];
          if (use_decode(spec, rows)) {
            // One or two tokens meet this expert: panels of it as decode streams.
            const int np =
                static_cast<int>(std::min({int64_t{decode_panels()}, n_panels - p, end - item}));
            spec.decode(k, panel, panel_bytes, np, last_panel_rows(n, p + np - 1),
                        xb + first[e] * static_cast<int64_t>(x_row_bytes), x_row_bytes,
                        static_cast<int>(rows),
                        reinterpret_cast<float*>(yb + first[e] * y_row_bytes) + n0, y_row_bytes);
            item += np;
            continue;
          }
          ++item;
          for (int64_t m0 = first[e]; m0 < first[e + 1]; m0 += m_block) {
            const int nc = static_cast<int>(std::min(first[e + 1], m0 + m_block) - m0);
            panel_for(spec, nc)(k, panel, xb + m0 * static_cast<int64_t>(x_row_bytes), x_row_bytes,
                                nc, nr, reinterpret_cast<float*>(yb + m0 * y_row_bytes) + n0,
                                y_row_bytes);
          }
        }
      });

  // 3. Scatter the slot-ordered outputs to dst[:, u, t].
  scatter_expert_rows(ctx, parallel, order, n_used, yb, y_row_bytes, y);
  return Status();
}

}  // namespace folio::cpu
