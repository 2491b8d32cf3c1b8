// Reference mul_mat / mul_mat_id on packed weights: each weight row is
// unpacked back to its GGUF bytes (quant/repack.h layouts are lossless),
// dequantized with the reference dequantizer and dotted in double, exactly
// as backend/cpu/ref/mul_mat.cc does for the plain weight. So the parity
// harness compares every packed kernel with the reference on the very
// weight the GGUF file held, and a backend without packed kernels at its
// tier still runs packed weights correctly (slowly).
#include <vector>

#include "backend/cpu/packed/packed_kernels.h"
#include "backend/cpu/ref/mul_mat_ref.h"
#include "quant/quant.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

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
  std::vector<uint8_t> raw;
  return ref::mul_mat_rows(op, [&](int64_t in, int64_t i2, int64_t i3, float* out) {
    packed_row(w, static_cast<const char*>(w.data) + i2 * w.nb[2] + i3 * w.nb[3], in, raw, out);
  });
}

Status mul_mat_id_packed_ref(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];  // [K, N, E] packed
  std::vector<uint8_t> raw;
  return ref::mul_mat_id_rows(op, [&](int64_t in, int64_t e, int64_t, float* out) {
    packed_row(w, static_cast<const char*>(w.data) + e * w.nb[2], in, raw, out);
  });
}

}  // namespace folio::cpu
