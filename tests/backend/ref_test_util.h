// Helpers for the reference-kernel tests (ref_*_test.cc): owning tensors,
// random quantized rows, and one reference-only CPU backend.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/op.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "tensor/tensor_view.h"

namespace folio::reftest {

// A contiguous tensor that owns its bytes (zeroed).
struct Tensor {
  std::vector<uint8_t> bytes;
  TensorView v;

  Tensor() = default;
  Tensor(DType dtype, std::initializer_list<int64_t> shape) {
    v = TensorView::contiguous(nullptr, dtype, shape);
    bytes.assign(v.nbytes_contiguous() + 64, 0);  // slack so an empty tensor still has an address
    v.data = bytes.data();
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&&) = default;  // the heap block (and so v.data) moves with it
  Tensor& operator=(Tensor&&) = default;

  float* f() const { return static_cast<float*>(v.data); }
  int32_t* i() const { return static_cast<int32_t*>(v.data); }
  std::vector<float> floats() const { return std::vector<float>(f(), f() + v.nelements()); }
  std::vector<int32_t> ints() const { return std::vector<int32_t>(i(), i() + v.nelements()); }
};

inline void set_f32(const Tensor& t, const std::vector<float>& x) {
  ASSERT_EQ(static_cast<int64_t>(x.size()), t.v.nelements());
  std::memcpy(t.v.data, x.data(), x.size() * sizeof(float));
}
inline void set_i32(const Tensor& t, const std::vector<int32_t>& x) {
  ASSERT_EQ(static_cast<int64_t>(x.size()), t.v.nelements());
  std::memcpy(t.v.data, x.data(), x.size() * sizeof(int32_t));
}

inline void fill_uniform(const Tensor& t, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.v.nelements(); ++i) t.f()[i] = dist(rng);
}

// Random blocks of a quantized / plain weight type, row by row: through the
// reference quantizer where one exists, else random bytes with the block's
// half-precision scales replaced by small finite values.
inline void fill_weight(const Tensor& t, std::mt19937& rng) {
  const DType dt = t.v.dtype;
  const int64_t k = t.v.ne[0], rows = t.v.nrows();
  if (quant::has_quantize(dt)) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& x : row) x = dist(rng);
      quant::quantize_row_ref(dt, row.data(), static_cast<uint8_t*>(t.v.data) + r * t.v.nb[1], k);
    }
    return;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> sd(0.002f, 0.03f);
  uint8_t* raw = static_cast<uint8_t*>(t.v.data);
  for (size_t i = 0; i < t.v.nbytes_contiguous(); ++i) raw[i] = static_cast<uint8_t>(byte(rng));
  const size_t bs = type_size(dt);
  const int64_t n_blocks = t.v.nelements() / block_size(dt);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = static_cast<uint8_t*>(t.v.data) + b * bs;
    auto put = [&](size_t off, float value) {
      const uint16_t h = f32_to_f16(value);
      std::memcpy(blk + off, &h, 2);
    };
    switch (dt) {
      case DType::Q2_K:
        put(offsetof(quant::BlockQ2_K, d), sd(rng));
        put(offsetof(quant::BlockQ2_K, dmin), sd(rng));
        break;
      case DType::Q3_K:
        put(offsetof(quant::BlockQ3_K, d), sd(rng));
        break;
      case DType::IQ4_NL:
        put(offsetof(quant::BlockIQ4_NL, d), sd(rng));
        break;
      case DType::IQ4_XS:
        put(offsetof(quant::BlockIQ4_XS, d), sd(rng) * 0.1f);
        break;
      default:
        FAIL() << "no random fill for " << dtype_name(dt);
    }
  }
}

// Every weight dtype folio computes with.
inline constexpr DType kWeightTypes[] = {
    DType::F32,  DType::F16,  DType::BF16,   DType::Q4_0,   DType::Q4_1,  DType::Q5_0,
    DType::Q5_1, DType::Q8_0, DType::Q2_K,   DType::Q3_K,   DType::Q4_K,  DType::Q5_K,
    DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::NVFP4};

// Op builders over owned tensors (params NoParams unless given).
inline Op make_op(OpKind kind, std::initializer_list<const Tensor*> srcs, const Tensor& dst,
                  OpParams params = NoParams{}) {
  Op op;
  op.kind = kind;
  int i = 0;
  for (const Tensor* t : srcs) op.src[i++] = t->v;
  op.dst = dst.v;
  op.params = params;
  return op;
}
inline Op get_rows_op(const Tensor& table, const Tensor& ids, const Tensor& d) {
  return make_op(OpKind::kGetRows, {&table, &ids}, d);
}
inline Op mul_mat_op(const Tensor& w, const Tensor& x, const Tensor& d) {
  return make_op(OpKind::kMulMat, {&w, &x}, d);
}
inline Op mul_mat_id_op(const Tensor& w, const Tensor& x, const Tensor& ids, const Tensor& d) {
  return make_op(OpKind::kMulMatId, {&w, &x, &ids}, d);
}
inline Op binary_op(OpKind kind, const Tensor& a, const Tensor& b, const Tensor& d) {
  return make_op(kind, {&a, &b}, d);
}
inline Op unary_like(OpKind kind, const Tensor& x, const Tensor& d, OpParams params) {
  return make_op(kind, {&x}, d, params);
}

// The reference-only CPU backend (tier kRef kernels), as the parity harness builds it.
inline CpuBackend& ref_backend() {
  static CpuBackend b(CpuBackendOptions{Isa::kScalar, true, nullptr});
  return b;
}

// Runs `op` on the reference backend and checks it went to `kernel`.
inline Status run_ref(const Op& op, const char* kernel) {
  EXPECT_EQ(ref_backend().kernel_name(op), kernel) << op.describe();
  return ref_backend().run(op);
}

}  // namespace folio::reftest
