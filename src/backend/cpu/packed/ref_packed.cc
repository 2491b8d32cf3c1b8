// Reference mul_mat / mul_mat_id on packed weights: each weight row is
// unpacked back to its GGUF bytes (quant/repack.h layouts are lossless),
// dequantized with the reference dequantizer and dotted in double, exactly
// as backend/cpu/ref/mul_mat.cc does for the plain weight. So the parity
// harness compares every packed kernel with the reference on the very
// weight the GGUF file held, and a backend without packed kernels at its
// tier still runs packed weights correctly (slowly).
#include <vector>

#include "backend/cpu/packed/packed_kernels.h"
#include "quant/quant.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

double dot(const float* w, const float* x, int64_t k) {
  double acc = 0.0;
  for (int64_t i = 0; i < k; ++i) acc += static_cast<double>(w[i]) * static_cast<double>(x[i]);
  return acc;
}

// Row `row` of packed matrix `matrix` as floats.
void packed_row(const TensorView& w, const void* matrix, int64_t row, std::vector<uint8_t>& raw,
                float* out) {
  const DType source = packed_source(w.dtype);
  raw.resize(row_size(source, w.ne[0]));
  quant::unpack_row(w.dtype, matrix, w.ne[0], row, raw.data());
  quant::dequantize_row_ref(source, raw.data(), out, w.ne[0]);
}

}  // namespace

bool supports_packed_ref(const Op& op) {
  return quant::is_packed_view(op.src[0]);
}

Status mul_mat_packed_ref(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];  // [K, N, B2w, B3w] packed
  const TensorView& x = op.src[1];  // [K, M, B2, B3]
  const TensorView& d = op.dst;     // [N, M, B2, B3]
  const int64_t k = w.ne[0], n = w.ne[1], m = x.ne[1];
  const int64_t r2 = x.ne[2] / w.ne[2], r3 = x.ne[3] / w.ne[3];
  std::vector<float> wrow(static_cast<size_t>(k));
  std::vector<uint8_t> raw;
  for (int64_t b3 = 0; b3 < x.ne[3]; ++b3) {
    for (int64_t b2 = 0; b2 < x.ne[2]; ++b2) {
      const char* matrix =
          static_cast<const char*>(w.data) + (b2 / r2) * w.nb[2] + (b3 / r3) * w.nb[3];
      for (int64_t in = 0; in < n; ++in) {
        packed_row(w, matrix, in, raw, wrow.data());
        for (int64_t im = 0; im < m; ++im) {
          d.row<float>(im, b2, b3)[in] =
              static_cast<float>(dot(wrow.data(), x.row<const float>(im, b2, b3), k));
        }
      }
    }
  }
  return Status();
}

Status mul_mat_id_packed_ref(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];    // [K, N, E] packed
  const TensorView& x = op.src[1];    // [K, X1, T]
  const TensorView& ids = op.src[2];  // I32 [n_used, T]
  const TensorView& d = op.dst;       // [N, n_used, T]
  if (w.ne[3] != 1 || x.ne[3] != 1 || ids.ne[2] != 1 || ids.ne[3] != 1 || d.ne[3] != 1) {
    return invalid_argument("mul_mat_id: experts, input, ids and dst must be at most 3-D: {}",
                            op.describe());
  }
  const int64_t k = w.ne[0], n = w.ne[1], n_exp = w.ne[2];
  const int64_t n_used = ids.ne[0], n_tok = ids.ne[1], x1 = x.ne[1];
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t e = *ids.at<const int32_t>(u, t);
      if (e < 0 || e >= n_exp) {
        return out_of_range("mul_mat_id: expert id {} at ids[{}, {}] out of range [0, {})", e, u, t,
                            n_exp);
      }
    }
  }
  std::vector<float> wrow(static_cast<size_t>(k));
  std::vector<uint8_t> raw;
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t e = *ids.at<const int32_t>(u, t);
      const float* xr = x.row<const float>(u % x1, t);
      float* dr = d.row<float>(u, t);
      const char* matrix = static_cast<const char*>(w.data) + e * w.nb[2];
      for (int64_t in = 0; in < n; ++in) {
        packed_row(w, matrix, in, raw, wrow.data());
        dr[in] = static_cast<float>(dot(wrow.data(), xr, k));
      }
    }
  }
  return Status();
}

}  // namespace folio::cpu
