// Parity cases: basic ops (get_rows ... argsort). Every optimised CPU kernel
// is compared with the scalar reference on these.
//
// Tolerances (NMSE vs the reference, which accumulates in double):
//   exact     add, mul, get_rows of f32/f16/bf16, top_k, argsort (I32): one
//             IEEE operation or a pure copy / ordering per element.
//   5e-7      mul_mat / mul_mat_id with f32 weights (float accumulation).
//   1e-5      f16 weights: kernels may round activations to f16 (~1.6e-7
//             expected).
//   5e-4      bf16 and every quantized weight type: kernels may round
//             activations to bf16 or quantize them to q8_0 / q8_1 / q8_K
//             (~1.5e-5 expected for q8 with uniform inputs); 5e-4 is
//             llama.cpp test-backend-ops' mul_mat bound.
//   1e-10     get_rows of quantized types (FMA vs mul+add in dequantization).
//   1e-6      rope (float angles p * base^(-2i/n) at positions up to ~4k lose
//             ~1e-4 rad), gelu / geglu (table or polynomial approximations).
//   1e-7      everything else (norms, softmax, other activations, scale):
//             llama.cpp's default; float kernels land around 1e-13.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

#include "core/check.h"
#include "core/fp16.h"
#include "parity/harness.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace folio::parity {
namespace {

constexpr DType kWeightTypes[] = {
    DType::F32,  DType::F16,  DType::BF16,   DType::Q4_0,   DType::Q4_1,  DType::Q5_0,
    DType::Q5_1, DType::Q8_0, DType::Q2_K,   DType::Q3_K,   DType::Q4_K,  DType::Q5_K,
    DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::NVFP4};

// Fills a weight tensor: through the reference quantizer where the type has
// one (OpCase::fill_uniform), else random bytes with each block's half
// scales replaced by small finite values (q2_K, q3_K, iq4_nl, iq4_xs).
void fill_weight(OpCase& c, const TensorView& t) {
  if (quant::has_quantize(t.dtype)) {
    c.fill_uniform(t);
    return;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002f, 0.03f);
  uint8_t* p = static_cast<uint8_t*>(t.data);
  for (size_t i = 0; i < t.nbytes_contiguous(); ++i) p[i] = static_cast<uint8_t>(byte(c.rng()));
  const size_t bs = type_size(t.dtype);
  auto put = [&](uint8_t* blk, size_t off, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(blk + off, &h, 2);
  };
  for (int64_t b = 0; b < t.nelements() / block_size(t.dtype); ++b) {
    uint8_t* blk = p + b * bs;
    switch (t.dtype) {
      case DType::Q2_K:
        put(blk, offsetof(quant::BlockQ2_K, d), scale(c.rng()));
        put(blk, offsetof(quant::BlockQ2_K, dmin), scale(c.rng()));
        break;
      case DType::Q3_K:
        put(blk, offsetof(quant::BlockQ3_K, d), scale(c.rng()));
        break;
      case DType::IQ4_NL:
        put(blk, offsetof(quant::BlockIQ4_NL, d), scale(c.rng()));
        break;
      case DType::IQ4_XS:
        put(blk, offsetof(quant::BlockIQ4_XS, d), 0.1f * scale(c.rng()));
        break;
      default:
        FOLIO_CHECK_MSG(false, "no random fill for {}", dtype_name(t.dtype));
    }
  }
}

// A filled F32 tensor whose rows are `pad` elements longer than ne0: the view
// covers the first ne0 of each row, so nb[1] is larger than a row.
TensorView strided_f32(OpCase& c, std::array<int64_t, kMaxDims> ne, int64_t pad, float lo = -1,
                       float hi = 1) {
  std::array<int64_t, kMaxDims> wide = ne;
  wide[0] += pad;
  TensorView t = c.alloc(DType::F32, wide);
  c.fill_uniform(t, lo, hi);
  t.ne = ne;
  return t;
}

// Random I32 ids of shape [n_used, n_tok]: n_used distinct values in [0, n)
// per token (what a router's top-k produces).
void fill_distinct_ids(OpCase& c, const TensorView& ids, int64_t n) {
  std::vector<int32_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < ids.ne[1]; ++t) {
    std::shuffle(all.begin(), all.end(), c.rng());
    for (int64_t u = 0; u < ids.ne[0]; ++u) *ids.at<int32_t>(u, t) = all[u];
  }
}

double mul_mat_nmse(DType w) {
  switch (w) {
    case DType::F32:
      return 5e-7;
    case DType::F16:
      return 1e-5;
    default:
      return 5e-4;
  }
}

// ---------------------------------------------------------------------------

void add_get_rows(CaseList& cases) {
  for (DType dt : kWeightTypes) {
    const int64_t k = block_size(dt) == 1 ? 96 : 2 * block_size(dt);
    auto c = new_case(fmt::format("get_rows {} [{}, 50] x 7", dtype_name(dt), k), OpKind::kGetRows);
    c->op.src[0] = c->alloc(dt, {k, 50});
    fill_weight(*c, c->op.src[0]);
    c->op.src[1] = c->alloc(DType::I32, {7});
    c->fill_ints(c->op.src[1], 0, 49);
    c->op.dst = c->alloc(DType::F32, {k, 7});
    c->exact = !is_quantized(dt);
    c->max_nmse = 1e-10;
    cases.push_back(std::move(c));
  }
  // 2-D ids (tokens x sequences), f16 table.
  auto c = new_case("get_rows f16 [64, 1000] ids [5, 3]", OpKind::kGetRows);
  c->op.src[0] = c->alloc(DType::F16, {64, 1000});
  c->fill_uniform(c->op.src[0]);
  c->op.src[1] = c->alloc(DType::I32, {5, 3});
  c->fill_ints(c->op.src[1], 0, 999);
  c->op.dst = c->alloc(DType::F32, {64, 5, 3});
  c->exact = true;
  cases.push_back(std::move(c));
}

void add_mul_mat_case(CaseList& cases, DType dt, int64_t k, int64_t n, int64_t m,
                      std::array<int64_t, 2> wb = {1, 1}, std::array<int64_t, 2> xb = {1, 1},
                      int64_t x_pad = 0) {
  std::string name = fmt::format("mul_mat {} K={} N={} M={}", dtype_name(dt), k, n, m);
  if (xb[0] * xb[1] > 1) name += fmt::format(" w[{},{}] x[{},{}]", wb[0], wb[1], xb[0], xb[1]);
  if (x_pad > 0) name += " strided";
  auto c = new_case(name, OpKind::kMulMat);
  c->op.src[0] = c->alloc(dt, {k, n, wb[0], wb[1]});
  fill_weight(*c, c->op.src[0]);
  c->op.src[1] = strided_f32(*c, {k, m, xb[0], xb[1]}, x_pad);
  c->op.dst = c->alloc(DType::F32, {n, m, xb[0], xb[1]});
  c->max_nmse = mul_mat_nmse(dt);
  const double batches = static_cast<double>(xb[0] * xb[1]);
  c->flops = 2.0 * k * n * m * batches;
  c->bytes = static_cast<double>(row_size(dt, k)) * n * wb[0] * wb[1] + 4.0 * k * m * batches +
             4.0 * n * m * batches;
  cases.push_back(std::move(c));
}

void add_mul_mat(CaseList& cases) {
  for (DType dt : kWeightTypes) {
    const int64_t bs = block_size(dt);
    if (bs <= 32) add_mul_mat_case(cases, dt, 32, 9, 5);  // a single block per row
    add_mul_mat_case(cases, dt, 256, 37, 1);              // decode: one token
    add_mul_mat_case(cases, dt, 512, 19, 7);
    add_mul_mat_case(cases, dt, 256, 16, 32);  // prefill-like batch
    add_mul_mat_case(cases, dt, 4096, 48, 3);  // long rows
    // Decode at the width of a small model's layers (Gemma 3 270M: ffn
    // gate / up [640 -> 2048], ffn down [2048 -> 640]).
    if (bs == quant::kQKK) {
      add_mul_mat_case(cases, dt, 2048, 640, 1);
    } else {
      add_mul_mat_case(cases, dt, 640, 2048, 1);
    }
  }
  // Prefill-sized batches for the default model's weight types.
  for (DType dt : {DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
    add_mul_mat_case(cases, dt, block_size(dt) == quant::kQKK ? 1024 : 640, 256, 64);
  }
  // Float weights with 16+ activation rows (the AVX-512 strip panels for
  // F16 / BF16): K over several 512-element chunks with a tail, a partial
  // 6-row strip, more than one column tile.
  for (DType dt : {DType::F16, DType::BF16}) add_mul_mat_case(cases, dt, 1100, 20, 40);
  // Batch broadcast (GQA-style): weight batches shared by groups of inputs.
  for (DType dt : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K}) {
    add_mul_mat_case(cases, dt, 256, 12, 5, {2, 1}, {6, 2});
    add_mul_mat_case(cases, dt, 256, 7, 3, {3, 2}, {3, 2});
  }
  // Activations with padded rows (a view into a wider buffer).
  for (DType dt : {DType::F32, DType::Q4_0, DType::Q6_K}) {
    add_mul_mat_case(cases, dt, 256, 21, 7, {1, 1}, {1, 1}, 64);
  }
  // Several 64 x 64 output tiles in both directions with partial edges
  // (Vulkan's tiled kernel), and tiled column counts with batch broadcast
  // and padded activation rows.
  for (DType dt : {DType::F16, DType::Q4_0, DType::Q4_K}) add_mul_mat_case(cases, dt, 256, 70, 100);
  for (DType dt : {DType::F32, DType::Q8_0}) {
    add_mul_mat_case(cases, dt, 256, 12, 20, {2, 1}, {6, 2});
    add_mul_mat_case(cases, dt, 256, 21, 17, {1, 1}, {1, 1}, 64);
  }
}

void add_mul_mat_id_case(CaseList& cases, DType dt, int64_t k, int64_t n, int64_t n_exp,
                         int64_t n_used, int64_t n_tok, int64_t x1) {
  auto c = new_case(fmt::format("mul_mat_id {} K={} N={} E={} used={} T={} X1={}", dtype_name(dt),
                                k, n, n_exp, n_used, n_tok, x1),
                    OpKind::kMulMatId);
  c->op.src[0] = c->alloc(dt, {k, n, n_exp});
  fill_weight(*c, c->op.src[0]);
  c->op.src[1] = c->alloc(DType::F32, {k, x1, n_tok});
  c->fill_uniform(c->op.src[1]);
  c->op.src[2] = c->alloc(DType::I32, {n_used, n_tok});
  fill_distinct_ids(*c, c->op.src[2], n_exp);
  c->op.dst = c->alloc(DType::F32, {n, n_used, n_tok});
  c->max_nmse = mul_mat_nmse(dt);
  c->flops = 2.0 * k * n * n_used * n_tok;
  c->bytes = static_cast<double>(row_size(dt, k)) * n * n_exp + 4.0 * k * x1 * n_tok +
             4.0 * n * n_used * n_tok;
  cases.push_back(std::move(c));
}

void add_mul_mat_id(CaseList& cases) {
  for (DType dt : kWeightTypes) {
    for (int64_t x1 : {int64_t{1}, int64_t{4}}) {
      add_mul_mat_id_case(cases, dt, 256, 24, 8, 4, 5, x1);
    }
  }
  // Many tokens: about 80 (u, t) pairs per expert, for kernels that group
  // the pairs by expert (Vulkan: tiles of 64 pairs, ids scanned 256 at a
  // time), with rows over two 64-row tiles.
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q5_1, DType::Q8_0,
                   DType::Q3_K, DType::Q4_K, DType::Q6_K, DType::IQ4_XS}) {
    for (int64_t x1 : {int64_t{1}, int64_t{4}}) {
      add_mul_mat_id_case(cases, dt, 256, 70, 8, 4, 160, x1);
    }
  }
}

// Batch invariance: an output column of mul_mat (a token's column of
// mul_mat_id) has the same bits whatever the op's number of columns
// (tokens) and whatever other columns (tokens, experts) share it, on every
// backend (a sequence decoded alone or inside a batch gets the same
// logits). Kernels switch strategy with the column count (Vulkan: a decode
// kernel up to 8 columns, a tiled one above; mul_mat_id by pairs per
// expert), so the cases cover 1, 5 and 40 columns and K with a partial last
// 256-element chunk where the weight format allows one.

// `count` consecutive slices of t along `dim`, from `first` on.
TensorView slice(const TensorView& t, int dim, int64_t first, int64_t count) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + first * static_cast<int64_t>(t.nb[dim]);
  v.ne[dim] = count;
  return v;
}

// The case's op computed as one op per `per_op` columns (mul_mat) or tokens
// (mul_mat_id), each writing its slice of a fresh dst: exactly the main op's
// output.
Equivalent split_columns(OpCase& c, int64_t per_op) {
  const bool id = c.op.kind == OpKind::kMulMatId;
  const int dim = id ? 2 : 1;  // x / dst dim of a token / column
  const char* what = id ? "token" : "column";
  Equivalent eq{
      per_op == 1 ? fmt::format("one {} per op", what) : fmt::format("{} {}s per op", per_op, what),
      c.op, true};
  eq.op.dst = c.alloc(DType::F32, c.op.dst.ne);
  const int64_t total = c.op.src[1].ne[dim];
  for (int64_t first = 0; first < total; first += per_op) {
    const int64_t count = std::min(per_op, total - first);
    Op step = c.op;
    step.src[1] = slice(c.op.src[1], dim, first, count);
    if (id) step.src[2] = slice(c.op.src[2], 1, first, count);
    step.dst = slice(eq.op.dst, dim, first, count);
    eq.steps.push_back(step);
  }
  return eq;
}

// mul_mat of an [K, n] weight with m columns (m = 1: column 7 of a
// 40-column input) against the same columns in other ops.
// packed: the weight in its packed layout (F16: F16_X16, the AMX-BF16
// kernels' layout).
void add_invariant_mul_mat(CaseList& cases, DType dt, int64_t k, int64_t n, int64_t m,
                           bool packed = false) {
  auto c = new_case(fmt::format("mul_mat {} K={} N={} M={} batch-invariant",
                                packed ? "f16x16" : dtype_name(dt), k, n, m),
                    OpKind::kMulMat);
  c->op.src[0] = c->alloc(dt, {k, n});
  fill_weight(*c, c->op.src[0]);
  if (packed) c->op.src[0] = packed_weight_copy(*c, c->op.src[0], OpKind::kMulMat);
  const TensorView x = c->alloc(DType::F32, {k, m == 1 ? 40 : m});
  c->fill_uniform(x);
  c->op.src[1] = m == 1 ? slice(x, 1, 7, 1) : x;
  c->op.dst = c->alloc(DType::F32, {n, m});
  c->max_nmse = mul_mat_nmse(dt);
  c->flops = 2.0 * k * n * m;
  if (m == 1) {
    // The same column inside a 40-column op and inside a 5-column op.
    for (int64_t width : {40, 5}) {
      const int64_t first = width == 40 ? 0 : 5;
      Equivalent eq{fmt::format("column {} of a {}-column op", 7 - first, width), c->op, true};
      Op wide = c->op;
      wide.src[1] = slice(x, 1, first, width);
      wide.dst = c->alloc(DType::F32, {n, width});
      eq.op.dst = slice(wide.dst, 1, 7 - first, 1);
      eq.steps = {wide};
      c->equivalents.push_back(eq);
    }
  } else {
    c->equivalents.push_back(split_columns(*c, 1));
    if (m > 5) c->equivalents.push_back(split_columns(*c, 5));
  }
  cases.push_back(std::move(c));
}

// mul_mat_id with 40 tokens (80 pairs over 4 experts, 2 used) against one
// and five tokens per op.
void add_invariant_mul_mat_id(CaseList& cases, DType dt, int64_t k, int64_t n, int64_t x1,
                              bool packed = false) {
  constexpr int64_t kExperts = 4, kUsed = 2, kTokens = 40;
  auto c = new_case(fmt::format("mul_mat_id {} K={} N={} E={} used={} T={} X1={} batch-invariant",
                                packed ? "f16x16" : dtype_name(dt), k, n, kExperts, kUsed, kTokens,
                                x1),
                    OpKind::kMulMatId);
  c->op.src[0] = c->alloc(dt, {k, n, kExperts});
  fill_weight(*c, c->op.src[0]);
  if (packed) c->op.src[0] = packed_weight_copy(*c, c->op.src[0], OpKind::kMulMatId);
  c->op.src[1] = c->alloc(DType::F32, {k, x1, kTokens});
  c->fill_uniform(c->op.src[1]);
  c->op.src[2] = c->alloc(DType::I32, {kUsed, kTokens});
  fill_distinct_ids(*c, c->op.src[2], kExperts);
  c->op.dst = c->alloc(DType::F32, {n, kUsed, kTokens});
  c->max_nmse = mul_mat_nmse(dt);
  c->flops = 2.0 * k * n * kUsed * kTokens;
  c->equivalents.push_back(split_columns(*c, 1));
  c->equivalents.push_back(split_columns(*c, 5));
  cases.push_back(std::move(c));
}

void add_batch_invariance(CaseList& cases) {
  constexpr int64_t kN = 70;  // rows: a full and a partial 64-row tile
  // The quantized types: the Vulkan int8 path's decode matvec and tiles too
  // (Q2_K: per-16 mins; IQ4_XS: signed per-32 scales; NVFP4: a float scale
  // per 16 elements).
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                   DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q4_K, DType::Q6_K,
                   DType::IQ4_XS, DType::MXFP4, DType::NVFP4}) {
    // K % 256 != 0 (K-quants: 5 whole chunks); f32 with K % 8 != 0 and rows
    // of 4360 bytes (not 16-byte multiples), f16 / bf16 with K % 8 != 0; NVFP4
    // (64-element blocks) as the K-quants.
    const int64_t bs = block_size(dt);
    const int64_t k_odd = dt == DType::F32 ? 1090 : bs == 1 ? 1100 : bs == 32 ? 1120 : 1280;
    for (int64_t k : {k_odd, int64_t{4096}}) {
      for (int64_t m : {1, 5, 40}) add_invariant_mul_mat(cases, dt, k, kN, m);
      // X1 = 1 (inputs shared by the used experts) for the long rows, X1 =
      // n_used for the others.
      add_invariant_mul_mat_id(cases, dt, k, kN, k == 4096 ? 1 : 2);
    }
  }
  // Rows of more chunks (130) than Vulkan's decode kernel has lanes for one
  // row (128): it takes them in rounds.
  add_invariant_mul_mat(cases, DType::F16, 33100, 9, 1);
  // The same rows in the float tile (2069 K steps): lavapipe ends a shader's
  // loops after 65535 iterations in all, so the tile's inner loops must be
  // unrolled for its outputs to be whole there.
  add_invariant_mul_mat(cases, DType::F16, 33100, 9, 40);
  // F16 as the AMX buffer type holds it (F16_X16): the amx tier's rows
  // kernel (one column) and tiles (two and more) give the same bits.
  for (int64_t k : {int64_t{1100}, int64_t{4096}}) {
    for (int64_t m : {1, 5, 40}) add_invariant_mul_mat(cases, DType::F16, k, kN, m, true);
    add_invariant_mul_mat_id(cases, DType::F16, k, kN, k == 4096 ? 1 : 2, true);
  }
}

void add_binary(CaseList& cases) {
  struct Shape {
    std::array<int64_t, kMaxDims> a, b;
  };
  const Shape shapes[] = {
      {{129, 7, 3, 1}, {129, 7, 3, 1}},  // same shape
      {{129, 7, 3, 1}, {129, 1, 1, 1}},  // a row (bias / norm weight)
      {{64, 5, 4, 2}, {1, 5, 1, 2}},     // a column per row
      {{33, 6, 4, 1}, {33, 3, 2, 1}},    // repeated blocks
  };
  for (OpKind kind : {OpKind::kAdd, OpKind::kMul}) {
    for (const Shape& s : shapes) {
      auto c = new_case(fmt::format("{} [{}, {}, {}, {}] by [{}, {}, {}, {}]", op_kind_name(kind),
                                    s.a[0], s.a[1], s.a[2], s.a[3], s.b[0], s.b[1], s.b[2], s.b[3]),
                        kind);
      c->op.src[0] = c->alloc(DType::F32, s.a);
      c->fill_uniform(c->op.src[0]);
      c->op.src[1] = c->alloc(DType::F32, s.b);
      c->fill_uniform(c->op.src[1]);
      c->op.dst = c->alloc(DType::F32, s.a);
      c->exact = true;
      cases.push_back(std::move(c));
    }
    auto c = new_case(fmt::format("{} strided src0", op_kind_name(kind)), kind);
    c->op.src[0] = strided_f32(*c, {100, 6, 2, 1}, 28);
    c->op.src[1] = c->alloc(DType::F32, {100, 1, 2});
    c->fill_uniform(c->op.src[1]);
    c->op.dst = c->alloc(DType::F32, {100, 6, 2});
    c->exact = true;
    cases.push_back(std::move(c));
  }
  {
    // Channel-major inputs [C, T] into a time-major window [taps + T, C] at
    // column `taps` (the conv window of the recurrent layers): a transposing
    // destination view.
    const int64_t ch = 70, t = 9, taps = 3, width = taps + t;
    auto c = new_case("cpy [70, 9] transposed into a window", OpKind::kCpy);
    c->op.src[0] = c->alloc(DType::F32, {ch, t});
    c->fill_uniform(c->op.src[0], -2, 2);
    TensorView win = c->alloc(DType::F32, {width, ch});
    c->fill_uniform(win, -2, 2);
    win.data = static_cast<char*>(win.data) + taps * sizeof(float);
    win.ne = {ch, t, 1, 1};
    win.nb = {width * sizeof(float), sizeof(float), width * ch * sizeof(float),
              width * ch * sizeof(float)};
    c->op.dst = win;
    c->exact = true;
    cases.push_back(std::move(c));
  }
  {
    auto c = new_case("cpy [33, 5, 3] strided rows", OpKind::kCpy);
    c->op.src[0] = strided_f32(*c, {33, 5, 3, 1}, 7);
    c->op.dst = c->alloc(DType::F32, {33, 5, 3});
    c->exact = true;
    cases.push_back(std::move(c));
  }
  {
    auto c = new_case("cpy i32 [1000, 3]", OpKind::kCpy);
    c->op.src[0] = c->alloc(DType::I32, {1000, 3});
    c->fill_ints(c->op.src[0], -100000, 100000);
    c->op.dst = c->alloc(DType::I32, {1000, 3});
    c->exact = true;
    cases.push_back(std::move(c));
  }
  auto c = new_case("scale [300, 7] x0.3 + 0.1", OpKind::kScale, ScaleParams{0.3f, 0.1f});
  c->op.src[0] = c->alloc(DType::F32, {300, 7});
  c->fill_uniform(c->op.src[0], -3, 3);
  c->op.dst = c->alloc(DType::F32, {300, 7});
  c->max_nmse = 1e-10;
  cases.push_back(std::move(c));
}

void add_norms(CaseList& cases) {
  struct Shape {
    std::array<int64_t, kMaxDims> ne;
    bool weight;
    int64_t pad;  // > 0: strided input rows
  };
  const Shape shapes[] = {{{4096, 5, 1, 1}, true, 0},
                          {{129, 3, 2, 1}, false, 0},
                          {{64, 8, 3, 1}, true, 0},
                          {{256, 4, 1, 1}, true, 32}};
  for (const Shape& s : shapes) {
    const std::string shape = fmt::format("[{}, {}, {}]{}{}", s.ne[0], s.ne[1], s.ne[2],
                                          s.weight ? " weighted" : "", s.pad ? " strided" : "");
    {
      auto c = new_case("rms_norm " + shape, OpKind::kRmsNorm, RmsNormParams{1e-6f});
      c->op.src[0] = strided_f32(*c, s.ne, s.pad, -2, 2);
      if (s.weight) {
        c->op.src[1] = c->alloc(DType::F32, {s.ne[0]});
        c->fill_uniform(c->op.src[1], 0.5f, 1.5f);
      }
      c->op.dst = c->alloc(DType::F32, s.ne);
      cases.push_back(std::move(c));
    }
    {
      auto c = new_case("add_rms_norm " + shape, OpKind::kAddRmsNorm, RmsNormParams{1e-5f});
      c->op.src[0] = strided_f32(*c, s.ne, s.pad, -2, 2);
      c->op.src[1] = c->alloc(DType::F32, s.ne);
      c->fill_uniform(c->op.src[1]);
      if (s.weight) {
        c->op.src[2] = c->alloc(DType::F32, {s.ne[0]});
        c->fill_uniform(c->op.src[2], 0.5f, 1.5f);
      }
      c->op.dst = c->alloc(DType::F32, s.ne);
      c->op.dst2 = c->alloc(DType::F32, s.ne);
      // The fused op is add then rms_norm, bit for bit on every backend.
      Equivalent eq{"add then rms_norm", c->op, true};
      Op add;
      add.kind = OpKind::kAdd;
      add.src[0] = c->op.src[0];
      add.src[1] = c->op.src[1];
      add.dst = c->alloc(DType::F32, s.ne);
      Op norm;
      norm.kind = OpKind::kRmsNorm;
      norm.params = c->op.params;
      norm.src[0] = add.dst;
      norm.src[1] = c->op.src[2];
      norm.dst = c->alloc(DType::F32, s.ne);
      eq.op.dst = norm.dst;
      eq.op.dst2 = add.dst;
      eq.steps = {add, norm};
      c->equivalents.push_back(eq);
      cases.push_back(std::move(c));
    }
    {
      auto c = new_case("l2_norm " + shape, OpKind::kL2Norm, NormParams{1e-6f});
      c->op.src[0] = strided_f32(*c, s.ne, s.pad, -2, 2);
      c->op.dst = c->alloc(DType::F32, s.ne);
      cases.push_back(std::move(c));
    }
    {
      auto c = new_case("norm " + shape, OpKind::kNorm, NormParams{1e-12f});
      c->op.src[0] = strided_f32(*c, s.ne, s.pad, -2, 2);
      if (s.weight) {  // layer norm's affine part: weight and bias
        c->op.src[1] = c->alloc(DType::F32, {s.ne[0]});
        c->fill_uniform(c->op.src[1], 0.5f, 1.5f);
        c->op.src[2] = c->alloc(DType::F32, {s.ne[0]});
        c->fill_uniform(c->op.src[2], -1.0f, 1.0f);
      }
      c->op.dst = c->alloc(DType::F32, s.ne);
      cases.push_back(std::move(c));
    }
  }
  {
    // In place (the residual stream): the sum overwrites a, the norm b.
    auto c = new_case("add_rms_norm [300, 4] weighted in place", OpKind::kAddRmsNorm,
                      RmsNormParams{1e-5f});
    c->op.src[0] = c->alloc(DType::F32, {300, 4});
    c->fill_uniform(c->op.src[0], -2, 2);
    c->op.src[1] = c->alloc(DType::F32, {300, 4});
    c->fill_uniform(c->op.src[1]);
    c->op.src[2] = c->alloc(DType::F32, {300});
    c->fill_uniform(c->op.src[2], 0.5f, 1.5f);
    c->op.dst2 = c->op.src[0];
    c->op.dst = c->op.src[1];
    c->in_place = true;
    cases.push_back(std::move(c));
  }
  // A zero row: rms_norm gives zeros, l2_norm divides by eps.
  auto c = new_case("l2_norm [128, 3] with a zero row", OpKind::kL2Norm, NormParams{1e-6f});
  c->op.src[0] = c->alloc(DType::F32, {128, 3});
  c->fill_uniform(c->op.src[0]);
  std::fill_n(c->op.src[0].row<float>(1), 128, 0.0f);
  c->op.dst = c->alloc(DType::F32, {128, 3});
  cases.push_back(std::move(c));
}

// Rope: x [head_dim, n_head, n_tok], positions in [0, max_pos).
struct RopeCase {
  const char* what;
  int64_t head_dim, n_head, n_tok;
  RopeParams p;
  bool freq_factors = false;
  int64_t pad = 0;  // > 0: x is a strided view (heads inside wider rows)
};

RopeParams rope_params(RopeMode mode, int n_dims, float base = 10000.0f) {
  RopeParams p;
  p.mode = mode;
  p.n_dims = n_dims;
  p.freq_base = base;
  return p;
}

RopeParams with_yarn(RopeParams p, float freq_scale, float ext, float attn, int n_ctx_orig) {
  p.freq_scale = freq_scale;
  p.ext_factor = ext;
  p.attn_factor = attn;
  p.n_ctx_orig = n_ctx_orig;
  return p;
}

RopeParams with_sections(RopeParams p, std::array<int, 4> s) {
  p.sections = s;
  return p;
}

void add_rope(CaseList& cases) {
  using M = RopeMode;
  const RopeCase specs[] = {
      {"llama", 128, 8, 7, rope_params(M::kNormal, 128)},
      {"llama partial", 96, 4, 5, rope_params(M::kNormal, 64)},
      {"llama linear x2", 64, 4, 6, with_yarn(rope_params(M::kNormal, 64), 0.5f, 0, 1, 0)},
      {"neox", 128, 4, 7, rope_params(M::kNeox, 128, 1e6f)},
      {"neox partial + freq factors", 64, 4, 5, rope_params(M::kNeox, 32, 5e5f), true},
      {"neox yarn x4", 128, 4, 6, with_yarn(rope_params(M::kNeox, 128), 0.25f, 1, 1, 4096)},
      {"neox yarn x8 attn", 64, 2, 9,
       with_yarn(rope_params(M::kNeox, 64, 1e6f), 0.125f, 1, 0.9f, 2048)},
      {"normal yarn half ext", 64, 2, 5,
       with_yarn(rope_params(M::kNormal, 48), 0.25f, 0.5f, 1, 4096)},
      {"neox strided heads", 64, 4, 5, rope_params(M::kNeox, 64), false, 64},
      {"mrope qwen2-vl", 128, 4, 5,
       with_sections(rope_params(M::kMrope, 128, 1e6f), {16, 24, 24, 0})},
      {"mrope 4 sections", 64, 2, 5, with_sections(rope_params(M::kMrope, 64), {8, 8, 8, 8})},
      {"imrope qwen3.5 partial", 256, 2, 5,
       with_sections(rope_params(M::kImrope, 64, 1e7f), {11, 11, 10, 0})},
      {"imrope qwen3-vl", 128, 4, 5,
       with_sections(rope_params(M::kImrope, 128, 5e6f), {24, 20, 20, 0})},
      {"imrope yarn", 128, 2, 4,
       with_yarn(with_sections(rope_params(M::kImrope, 128, 1e6f), {24, 20, 20, 0}), 0.25f, 1, 1,
                 4096)},
  };
  for (const RopeCase& s : specs) {
    const bool multi = s.p.mode == M::kMrope || s.p.mode == M::kImrope;
    auto c = new_case(fmt::format("rope {} [{}, {}, {}] n_dims={}", s.what, s.head_dim, s.n_head,
                                  s.n_tok, s.p.n_dims),
                      OpKind::kRope, s.p);
    if (s.pad == 0) {
      c->op.src[0] = c->alloc(DType::F32, {s.head_dim, s.n_head, s.n_tok});
      c->fill_uniform(c->op.src[0]);
    } else {
      // Heads of one token inside a fused row of n_head * head_dim + pad floats.
      TensorView wide = c->alloc(DType::F32, {s.n_head * s.head_dim + s.pad, s.n_tok});
      c->fill_uniform(wide);
      TensorView x = TensorView::contiguous(wide.data, DType::F32, {s.head_dim, s.n_head, s.n_tok});
      x.nb[2] = wide.nb[1];
      c->op.src[0] = x;
    }
    c->op.src[1] = c->alloc(DType::I32, {s.n_tok * (multi ? 4 : 1)});
    c->fill_ints(c->op.src[1], 0, 4095);
    if (s.freq_factors) {
      c->op.src[2] = c->alloc(DType::F32, {s.p.n_dims / 2});
      c->fill_uniform(c->op.src[2], 1.0f, 8.0f);
    }
    c->op.dst = c->alloc(DType::F32, {s.head_dim, s.n_head, s.n_tok});
    c->max_nmse = 1e-6;
    cases.push_back(std::move(c));
  }

  // Equivalences: multi-section rope with the same position in every section
  // is neox rope; YaRN with ext_factor 0 and freq_scale 1 is plain rope.
  for (M mode : {M::kMrope, M::kImrope}) {
    const int64_t hd = 128, nh = 2, nt = 6;
    RopeParams p = with_yarn(rope_params(mode, 96, 1e6f), 0.5f, 1, 1, 4096);
    p.sections = {16, 16, 16, 0};
    auto c = new_case(
        fmt::format("rope {} equal positions == neox", mode == M::kMrope ? "mrope" : "imrope"),
        OpKind::kRope, p);
    c->op.src[0] = c->alloc(DType::F32, {hd, nh, nt});
    c->fill_uniform(c->op.src[0]);
    TensorView pos = c->alloc(DType::I32, {4 * nt});
    c->fill_ints(pos, 0, 4095);
    for (int s = 1; s < 4; ++s)
      std::memcpy(pos.at<int32_t>(s * nt), pos.data, nt * sizeof(int32_t));
    c->op.src[1] = pos;
    c->op.dst = c->alloc(DType::F32, {hd, nh, nt});
    c->max_nmse = 1e-6;
    Equivalent eq{"neox, plain positions", c->op, false, 1e-10};
    RopeParams neox = p;
    neox.mode = M::kNeox;
    eq.op.params = neox;
    TensorView plain = pos;
    plain.ne[0] = nt;
    eq.op.src[1] = plain;
    eq.op.dst = c->alloc(DType::F32, {hd, nh, nt});
    c->equivalents.push_back(eq);
    cases.push_back(std::move(c));
  }
  {
    RopeParams p = rope_params(M::kNeox, 64);
    auto c = new_case("rope neox yarn off == plain", OpKind::kRope, p);
    c->op.src[0] = c->alloc(DType::F32, {64, 4, 5});
    c->fill_uniform(c->op.src[0]);
    c->op.src[1] = c->alloc(DType::I32, {5});
    c->fill_ints(c->op.src[1], 0, 4095);
    c->op.dst = c->alloc(DType::F32, {64, 4, 5});
    c->max_nmse = 1e-6;
    Equivalent eq{"ext_factor 0, freq_scale 1, n_ctx_orig 4096", c->op, false, 1e-10};
    RopeParams q = with_yarn(p, 1.0f, 0.0f, 1.0f, 4096);
    q.beta_fast = 32.0f;
    q.beta_slow = 1.0f;
    eq.op.params = q;
    eq.op.dst = c->alloc(DType::F32, {64, 4, 5});
    c->equivalents.push_back(eq);
    cases.push_back(std::move(c));
  }
}

void add_soft_max(CaseList& cases) {
  struct Spec {
    std::array<int64_t, kMaxDims> ne;
    bool mask;
    float scale;
  };
  const Spec specs[] = {{{77, 5, 1, 1}, false, 1.0f},
                        {{128, 32, 4, 1}, true, 0.125f},
                        {{64, 8, 4, 2}, true, 0.088f},
                        {{1000, 3, 1, 1}, false, 2.0f}};
  for (const Spec& s : specs) {
    auto c = new_case(fmt::format("soft_max [{}, {}, {}, {}]{} scale={}", s.ne[0], s.ne[1], s.ne[2],
                                  s.ne[3], s.mask ? " causal mask" : "", s.scale),
                      OpKind::kSoftMax, SoftMaxParams{s.scale});
    c->op.src[0] = c->alloc(DType::F32, s.ne);
    c->fill_uniform(c->op.src[0], -5, 5);
    if (s.mask) {
      // Causal mask shared by dims 2, 3: query row i sees keys j <= i + ne0 - ne1;
      // the last row also masks everything (a row with nothing visible).
      TensorView m = c->alloc(DType::F32, {s.ne[0], s.ne[1]});
      const float inf = std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < s.ne[1]; ++i) {
        for (int64_t j = 0; j < s.ne[0]; ++j) {
          const bool visible = j <= i + s.ne[0] - s.ne[1] && i + 1 < s.ne[1];
          *m.at<float>(j, i) = visible ? 0.0f : -inf;
        }
      }
      c->op.src[1] = m;
    }
    c->op.dst = c->alloc(DType::F32, s.ne);
    cases.push_back(std::move(c));
  }
}

void add_unary(CaseList& cases) {
  struct Spec {
    UnaryKind kind;
    float lo, hi;
  };
  const Spec specs[] = {
      {UnaryKind::kSilu, -8, 8},      {UnaryKind::kGelu, -6, 6},       {UnaryKind::kGeluErf, -6, 6},
      {UnaryKind::kSigmoid, -10, 10}, {UnaryKind::kSoftplus, -30, 30}, {UnaryKind::kExp, -10, 5},
      {UnaryKind::kTanh, -4, 4},      {UnaryKind::kRelu, -2, 2},       {UnaryKind::kNeg, -2, 2}};
  for (const Spec& s : specs) {
    for (int64_t pad : {int64_t{0}, int64_t{15}}) {
      auto c = new_case(
          fmt::format("unary {} [257, 9]{}", unary_kind_name(s.kind), pad ? " strided" : ""),
          OpKind::kUnary, UnaryParams{s.kind});
      c->op.src[0] = strided_f32(*c, {257, 9, 1, 1}, pad, s.lo, s.hi);
      c->op.dst = c->alloc(DType::F32, {257, 9});
      c->max_nmse = s.kind == UnaryKind::kGelu ? 1e-6 : 1e-7;
      c->exact = s.kind == UnaryKind::kRelu || s.kind == UnaryKind::kNeg;
      cases.push_back(std::move(c));
    }
  }
  // Saturating ranges: e^-x overflows, tanh and erf round to +-1, softplus
  // switches at 20.
  for (UnaryKind kind : {UnaryKind::kSilu, UnaryKind::kGelu, UnaryKind::kGeluErf,
                         UnaryKind::kSigmoid, UnaryKind::kSoftplus, UnaryKind::kTanh}) {
    auto c = new_case(fmt::format("unary {} [1000, 3] in [-100, 100]", unary_kind_name(kind)),
                      OpKind::kUnary, UnaryParams{kind});
    c->op.src[0] = c->alloc(DType::F32, {1000, 3});
    c->fill_uniform(c->op.src[0], -100, 100);
    c->op.dst = c->alloc(DType::F32, {1000, 3});
    c->max_nmse = kind == UnaryKind::kGelu ? 1e-6 : 1e-7;
    cases.push_back(std::move(c));
  }
}

void add_glu(CaseList& cases) {
  const std::pair<GluKind, const char*> kinds[] = {{GluKind::kSwiGlu, "swiglu"},
                                                   {GluKind::kGeGlu, "geglu"},
                                                   {GluKind::kGeGluErf, "geglu_erf"},
                                                   {GluKind::kSwiGluOai, "swiglu_oai"}};
  for (const auto& [kind, name] : kinds) {
    const double nmse = kind == GluKind::kGeGlu ? 1e-6 : 1e-7;
    {
      auto c = new_case(fmt::format("glu {} split [1000, 7]", name), OpKind::kGlu,
                        GluParams{kind, false});
      c->op.src[0] = c->alloc(DType::F32, {1000, 7});
      c->fill_uniform(c->op.src[0], -4, 4);
      c->op.src[1] = c->alloc(DType::F32, {1000, 7});
      c->fill_uniform(c->op.src[1], -2, 2);
      c->op.dst = c->alloc(DType::F32, {1000, 7});
      c->max_nmse = nmse;
      cases.push_back(std::move(c));
    }
    for (bool swapped : {false, true}) {
      auto c = new_case(fmt::format("glu {} fused [2x300, 5]{}", name, swapped ? " swapped" : ""),
                        OpKind::kGlu, GluParams{kind, swapped});
      c->op.src[0] = c->alloc(DType::F32, {600, 5});
      c->fill_uniform(c->op.src[0], -4, 4);
      c->op.dst = c->alloc(DType::F32, {300, 5});
      c->max_nmse = nmse;
      cases.push_back(std::move(c));
    }
  }
  // swiglu_oai across its clamps (gate above 7, up beyond +-7), with gpt-oss's
  // alpha 1.702 and another alpha / limit pair.
  for (const auto& [alpha, limit] : {std::pair{1.702f, 7.0f}, std::pair{0.5f, 3.0f}}) {
    GluParams gp{GluKind::kSwiGluOai, false};
    gp.alpha = alpha;
    gp.limit = limit;
    auto c = new_case(
        fmt::format("glu swiglu_oai split [517, 6] in [-12, 12] alpha {} limit {}", alpha, limit),
        OpKind::kGlu, gp);
    c->op.src[0] = c->alloc(DType::F32, {517, 6});
    c->fill_uniform(c->op.src[0], -12, 12);
    c->op.src[1] = c->alloc(DType::F32, {517, 6});
    c->fill_uniform(c->op.src[1], -12, 12);
    c->op.dst = c->alloc(DType::F32, {517, 6});
    c->max_nmse = 1e-7;
    cases.push_back(std::move(c));
  }
}

void add_sort(CaseList& cases) {
  // ties: values from {0, 1, 2, 3} so most comparisons are ties.
  auto fill = [](OpCase& c, const TensorView& t, bool ties) {
    if (!ties) {
      c.fill_uniform(t);
      return;
    }
    std::uniform_int_distribution<int> d(0, 3);
    for (int64_t i = 0; i < t.nelements(); ++i)
      static_cast<float*>(t.data)[i] = static_cast<float>(d(c.rng()));
  };
  struct TopK {
    int64_t n, rows;
    int k;
    bool ties;
  };
  for (const TopK& s : {TopK{256, 7, 8, false}, TopK{64, 5, 64, false}, TopK{128, 4, 6, true},
                        TopK{60, 9, 1, true}}) {
    auto c = new_case(fmt::format("top_k [{}, {}] k={}{}", s.n, s.rows, s.k, s.ties ? " ties" : ""),
                      OpKind::kTopK, TopKParams{s.k});
    c->op.src[0] = c->alloc(DType::F32, {s.n, s.rows});
    fill(*c, c->op.src[0], s.ties);
    c->op.dst = c->alloc(DType::I32, {s.k, s.rows});
    cases.push_back(std::move(c));
  }
  // 2048: the longest row the Vulkan kernel sorts in shared memory; 2049: the
  // shortest it declines.
  for (int64_t n : {int64_t{2048}, int64_t{2049}}) {
    auto c = new_case(fmt::format("top_k [{}, 3] k=10", n), OpKind::kTopK, TopKParams{10});
    c->op.src[0] = c->alloc(DType::F32, {n, 3});
    fill(*c, c->op.src[0], false);
    c->op.dst = c->alloc(DType::I32, {10, 3});
    cases.push_back(std::move(c));
  }
  for (bool desc : {false, true}) {
    // NaN (both signs), +-0 (equal), +-inf and denormals.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const float special[] = {nan, -0.0f, 0.0f, inf, -inf, 1.0f, -1.0f, -nan, 0.0f, 1e-45f, -1e-45f};
    auto c = new_case(fmt::format("argsort [37, 3] {} NaN inf zeros", desc ? "desc" : "asc"),
                      OpKind::kArgsort, ArgsortParams{desc});
    c->op.src[0] = c->alloc(DType::F32, {37, 3});
    float* x = static_cast<float*>(c->op.src[0].data);
    for (int64_t i = 0; i < 37 * 3; ++i) x[i] = special[(i * 7) % std::size(special)];
    c->op.dst = c->alloc(DType::I32, {37, 3});
    cases.push_back(std::move(c));
  }
  for (bool desc : {false, true}) {
    for (bool ties : {false, true}) {
      auto c =
          new_case(fmt::format("argsort [100, 6] {}{}", desc ? "desc" : "asc", ties ? " ties" : ""),
                   OpKind::kArgsort, ArgsortParams{desc});
      c->op.src[0] = c->alloc(DType::F32, {100, 6});
      fill(*c, c->op.src[0], ties);
      c->op.dst = c->alloc(DType::I32, {100, 6});
      cases.push_back(std::move(c));
    }
  }
}

// The MoE router as the model families call it: softmax (qwen3moe,
// mixtral), sigmoid with a selection bias and expert groups (deepseek2 V3),
// sigmoid with a bias (glm4moe), the softmax of the chosen logits (gpt-oss);
// one token (decode) and several; integer logits (ties broken by index);
// rows past one workgroup's 256 lanes and past the device's 1024 experts.
// The ids must match exactly, the weights to 1e-7 NMSE.
void add_moe_route(CaseList& cases) {
  struct Route {
    const char* what;
    int64_t x, n;
    MoeRouteParams p;
    bool bias, ties;
  };
  const MoeGating kSm = MoeGating::kSoftmax, kSig = MoeGating::kSigmoid,
                  kSmw = MoeGating::kSoftmaxWeight;
  const Route routes[] = {
      {"softmax norm", 128, 1, {kSm, 8, 1, 1, true, 1.0f}, false, false},
      {"softmax norm", 128, 7, {kSm, 8, 1, 1, true, 1.0f}, false, false},
      {"softmax", 8, 5, {kSm, 2, 1, 1, false, 1.0f}, false, false},
      {"softmax ties", 16, 6, {kSm, 4, 1, 1, true, 1.0f}, false, true},
      {"sigmoid bias groups 8/4 norm scale", 64, 5, {kSig, 6, 8, 4, true, 2.5f}, true, false},
      {"sigmoid bias groups 8/3 norm scale", 256, 1, {kSig, 8, 8, 3, true, 2.5f}, true, false},
      {"sigmoid bias norm scale", 160, 3, {kSig, 8, 1, 1, true, 1.8f}, true, false},
      {"sigmoid norm", 300, 2, {kSig, 8, 1, 1, true, 1.0f}, false, false},
      {"softmax_weight", 32, 4, {kSmw, 4, 1, 1, false, 1.0f}, false, false},
      {"softmax norm", 1100, 2, {kSm, 8, 1, 1, true, 1.0f}, false, false},
  };
  for (const Route& s : routes) {
    auto c = new_case(fmt::format("moe_route {} [{}, {}] k={}", s.what, s.x, s.n, s.p.k),
                      OpKind::kMoeRoute, s.p);
    c->op.src[0] = c->alloc(DType::F32, {s.x, s.n});
    if (s.ties) {
      std::uniform_int_distribution<int> d(0, 3);
      float* l = static_cast<float*>(c->op.src[0].data);
      for (int64_t i = 0; i < s.x * s.n; ++i) l[i] = static_cast<float>(d(c->rng()));
    } else {
      c->fill_uniform(c->op.src[0], -4.0f, 4.0f);
    }
    if (s.bias) {
      c->op.src[1] = c->alloc(DType::F32, {s.x});
      c->fill_uniform(c->op.src[1], -0.5f, 0.5f);
    }
    c->op.dst = c->alloc(DType::I32, {s.p.k, s.n});
    c->op.dst2 = c->alloc(DType::F32, {s.p.k, s.n});
    c->max_nmse = 1e-7;
    cases.push_back(std::move(c));
  }
}

}  // namespace

void add_basic_cases(CaseList& cases) {
  add_get_rows(cases);
  add_mul_mat(cases);
  add_mul_mat_id(cases);
  add_batch_invariance(cases);
  add_binary(cases);
  add_norms(cases);
  add_rope(cases);
  add_soft_max(cases);
  add_unary(cases);
  add_glu(cases);
  add_sort(cases);
  add_moe_route(cases);
}

}  // namespace folio::parity
