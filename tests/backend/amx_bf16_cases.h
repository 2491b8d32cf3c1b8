// BF16 and F16 mul_mat / mul_mat_id problems for the AMX BF16 tile kernel
// (amx/mul_mat_bf16_amx.cc), shared by amx_bf16_test.cc (the real tile
// instructions) and amx_emulated_test.cc (the scalar tile model): every
// output must be exactly the model's dot (amx_bf16::dot_model, F16:
// amx_f16::dot_model) of its weight row and activation row, in shapes that reach each edge of the kernel (K tails and
// several K blocks, partial strips and groups, one activation row,
// activation rows with padding, expert groups). With `packed`, F16 weights
// are first packed into F16_X16 (quant/repack.h), as the AMX buffer type
// holds them, for the kernels of amx/mul_mat_f16_x16.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/amx/bf16_tile_model.h"
#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/kernel.h"
#include "core/fp16.h"
#include "core/status.h"
#include "quant/repack.h"

namespace folio::amx_bf16_cases {

using KernelRun = Status (*)(const Op& op, const KernelContext& ctx);

struct Shape {
  int64_t k, n, m;
  int64_t x_pad;  // extra floats after each activation row
};

// K: one step, a tail, several 512-element blocks with a tail; N: a strip
// of 16, partial strips; M: 1 to 32 (the weights as A tiles), 33 and 40
// (the repacked strips).
inline constexpr Shape kShapes[] = {{32, 16, 16, 0},  {100, 37, 1, 0},   {1100, 70, 40, 0},
                                    {512, 64, 33, 0}, {2048, 33, 5, 16}, {96, 5, 17, 3},
                                    {200, 50, 32, 0}};

inline std::vector<uint16_t> bf16_weights(int64_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> w(static_cast<size_t>(count));
  for (uint16_t& v : w) v = f32_to_bf16(u(rng));
  return w;
}

// Uniform in (-1, 1) as F16 (wt F16) or BF16 bits.
inline std::vector<uint16_t> weights(DType wt, int64_t count, std::mt19937& rng) {
  if (wt == DType::BF16) return bf16_weights(count, rng);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> w(static_cast<size_t>(count));
  for (uint16_t& v : w) v = f32_to_f16(u(rng));
  return w;
}

// The model's output for weight row w (wt) and activation row x.
inline float model_dot(DType wt, const uint16_t* w, const float* x, int64_t k) {
  return wt == DType::F16 ? cpu::amx_f16::dot_model(w, x, k) : cpu::amx_bf16::dot_model(w, x, k);
}

// F16 weights [k, n, e] (w) packed into F16_X16 in `store`: the view the AMX
// buffer type gives (quant::packed_view).
inline TensorView packed_f16(const std::vector<uint16_t>& w, int64_t k, int64_t n, int64_t e,
                             std::vector<uint8_t>& store) {
  const size_t matrix = quant::packed_matrix_bytes(DType::F16_X16, k, n);
  store.assign(matrix * static_cast<size_t>(e), 0xa5);
  for (int64_t i = 0; i < e; ++i) {
    quant::pack_rows(DType::F16_X16, w.data() + i * n * k, static_cast<size_t>(k) * 2, k, n,
                     store.data() + i * matrix);
  }
  return quant::packed_view(store.data(), DType::F16_X16, {k, n, e, 1});
}

inline std::vector<float> activations(int64_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = u(rng);
  return x;
}

// mul_mat through `run` on every shape, each output against the model.
inline void expect_mul_mat_is_model(KernelRun run, DType wt = DType::BF16, bool packed = false) {
  std::mt19937 rng(41);
  for (const Shape& s : kShapes) {
    const std::vector<uint16_t> w = weights(wt, s.k * s.n, rng);
    const int64_t row = s.k + s.x_pad;
    const std::vector<float> x = activations(row * s.m, rng);
    std::vector<float> y(static_cast<size_t>(s.n * s.m), -7.0f);
    Op op;
    op.kind = OpKind::kMulMat;
    std::vector<uint8_t> store;
    op.src[0] = packed ? packed_f16(w, s.k, s.n, 1, store)
                       : TensorView::contiguous(const_cast<uint16_t*>(w.data()), wt, {s.k, s.n});
    op.src[1] = TensorView::contiguous(const_cast<float*>(x.data()), DType::F32, {s.k, s.m});
    op.src[1].nb[1] = static_cast<size_t>(row) * 4;
    op.src[1].nb[2] = op.src[1].nb[3] = op.src[1].nb[1] * static_cast<size_t>(s.m);
    op.dst = TensorView::contiguous(y.data(), DType::F32, {s.n, s.m});
    ASSERT_TRUE(run(op, KernelContext{}).ok());
    int64_t bad = 0;
    for (int64_t c = 0; c < s.m; ++c) {
      for (int64_t r = 0; r < s.n; ++r) {
        const float want = model_dot(wt, w.data() + r * s.k, x.data() + c * row, s.k);
        const float got = y[static_cast<size_t>(c * s.n + r)];
        if (std::memcmp(&want, &got, 4) != 0 && bad++ < 3) {
          ADD_FAILURE() << "K=" << s.k << " N=" << s.n << " M=" << s.m << " out(" << r << ", " << c
                        << ") = " << got << ", the model gives " << want;
        }
      }
    }
    EXPECT_EQ(bad, 0) << "K=" << s.k << " N=" << s.n << " M=" << s.m;
  }
}

// mul_mat_id: 6 experts, 3 used by each of 40 tokens, against the model.
inline void expect_mul_mat_id_is_model(KernelRun run, DType wt = DType::BF16,
                                       bool packed = false) {
  std::mt19937 rng(43);
  const int64_t k = 200, n = 37, n_exp = 6, n_used = 3, n_tok = 40;
  const std::vector<uint16_t> w = weights(wt, k * n * n_exp, rng);
  const std::vector<float> x = activations(k * n_tok, rng);
  std::vector<int32_t> ids(static_cast<size_t>(n_used * n_tok)), all(static_cast<size_t>(n_exp));
  for (int64_t t = 0; t < n_tok; ++t) {
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::copy_n(all.begin(), n_used, ids.begin() + t * n_used);
  }
  std::vector<float> y(static_cast<size_t>(n * n_used * n_tok), -7.0f);
  Op op;
  op.kind = OpKind::kMulMatId;
  std::vector<uint8_t> store;
  op.src[0] = packed ? packed_f16(w, k, n, n_exp, store)
                     : TensorView::contiguous(const_cast<uint16_t*>(w.data()), wt, {k, n, n_exp});
  op.src[1] = TensorView::contiguous(const_cast<float*>(x.data()), DType::F32, {k, 1, n_tok});
  op.src[2] = TensorView::contiguous(ids.data(), DType::I32, {n_used, n_tok});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {n, n_used, n_tok});
  ASSERT_TRUE(run(op, KernelContext{}).ok());
  int64_t bad = 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int64_t e = ids[static_cast<size_t>(t * n_used + u)];
      for (int64_t r = 0; r < n; ++r) {
        const float want = model_dot(wt, w.data() + (e * n + r) * k, x.data() + t * k, k);
        const float got = y[static_cast<size_t>((t * n_used + u) * n + r)];
        bad += std::memcmp(&want, &got, 4) != 0;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace folio::amx_bf16_cases
