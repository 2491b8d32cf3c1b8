// Parity cases: mul_mat / mul_mat_id on packed weight layouts (quant/repack.h),
// the AMX and CPU_REPACK buffer types' kernels (backend/cpu/packed,
// avx512/packed_*.cc, amx/).
//
// Each case quantizes a random weight with the reference quantizer, packs it
// through the buffer type's store_weight (as model loading does) and runs
// the op on the packed view: the reference backend unpacks each row
// (lossless) and computes exactly what it computes on the plain weight,
// which an equivalent checks (the same op on the plain weight: NMSE 0 on the
// reference; on the other backends it compares the packed kernel with the
// plain one, or the packed reference with the plain SIMD kernel on tiers
// without packed kernels, hence the usual 5e-4. tests/backend/packed_test.cc
// checks packed vs plain SIMD kernels at 1e-10).
//
// Tolerance vs the reference: 5e-4 as for every quantized mul_mat
// (activations quantized to q8_0 / q8_K, ~1e-5 expected).
//
// Shapes: rows not a multiple of the 16-row panel (37 = 16 + 16 + 5), 1, 3,
// 8, 12, 16, 17, 40, 64 and 512 activation rows (AMX takes a call's rows
// from amx_min_rows on, 8 to 128 by layout, in groups of 16 and one of the
// rows left; the AVX-512 panels smaller calls), batch broadcast,
// padded activation rows, mul_mat_id with expert groups above and below 16
// and 32 rows. The harness adds the two-thread run (bit-identical to one
// thread). Perf mode (all_cases(true)) adds big perf_only cases: K = 2048 /
// 4096, 1024 rows, 1, 2, 4, 8, 12, 16, 32, 64, 128 and 512 activation rows,
// plain and packed side by side (the AMX panels' thresholds among them).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "backend/cpu/cpu_buffer_types.h"
#include "core/check.h"
#include "core/fp16.h"
#include "parity/harness.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/repack.h"

namespace folio::parity {
namespace {

constexpr DType kPackedSources[] = {DType::Q4_0, DType::Q4_1,   DType::Q5_0,  DType::Q5_1,
                                    DType::Q8_0, DType::IQ4_NL, DType::MXFP4, DType::Q4_K,
                                    DType::Q5_K, DType::Q6_K,   DType::IQ4_XS, DType::F16};

// The buffer type that holds `source` on a machine with AMX (the layouts do
// not depend on the type: both store the same bytes).
const PackedBufferType& holder(DType source) {
  const PackedBufferType& amx = amx_f16_buffer_type();
  const auto& f = amx.formats();
  if (std::find(f.begin(), f.end(), source) != f.end()) return amx;
  return repack_buffer_type();
}

}  // namespace

// Packs the plain weight `w` through the buffer type into memory owned by c
// (F16, which only the AMX buffer of a CPU with AMX-BF16 holds: packed
// directly where no buffer type takes it).
TensorView packed_weight_copy(OpCase& c, const TensorView& w, OpKind consumer) {
  const PackedBufferType& type = holder(w.dtype);
  if (!type.supports_weight({"case weight", w.dtype, w.ne, consumer})) {
    FOLIO_CHECK(w.dtype == DType::F16 && w.is_contiguous());
    const size_t matrix = quant::packed_matrix_bytes(DType::F16_X16, w.ne[0], w.ne[1]);
    TensorView raw = c.alloc(DType::F32, {static_cast<int64_t>(matrix * w.ne[2] * w.ne[3] / 4)});
    for (int64_t i = 0; i < w.ne[2] * w.ne[3]; ++i) {
      quant::pack_rows(DType::F16_X16, static_cast<const char*>(w.data) + i * w.nb[2], w.nb[1],
                       w.ne[0], w.ne[1], static_cast<char*>(raw.data) + i * matrix);
    }
    return quant::packed_view(raw.data, DType::F16_X16, w.ne);
  }
  const WeightUse use{"case weight", w.dtype, w.ne, consumer};
  FOLIO_CHECK(type.supports_weight(use));
  const size_t bytes = type.weight_bytes(use);
  TensorView raw = c.alloc(DType::F32, {static_cast<int64_t>((bytes + 3) / 4)});
  Status s = type.store_weight(use, w.data, w.nbytes_contiguous(), raw.data);
  FOLIO_CHECK_MSG(s.ok(), "{}", s.to_string());
  return type.weight_view(use, raw.data);
}

namespace {

// Random blocks with small finite scales: fast fill for perf-only weights
// (F16 / BF16: every element such a value).
void fill_random_blocks(OpCase& c, const TensorView& t) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002f, 0.03f);
  auto* p = static_cast<uint8_t*>(t.data);
  for (size_t i = 0; i < t.nbytes_contiguous(); i += 4) {
    const uint32_t v = c.rng()();
    std::memcpy(p + i, &v, std::min<size_t>(4, t.nbytes_contiguous() - i));
  }
  const size_t bs = type_size(t.dtype);
  auto put = [&](uint8_t* blk, size_t off) {
    const uint16_t h = f32_to_f16(scale(c.rng()));
    std::memcpy(blk + off, &h, 2);
  };
  for (int64_t b = 0; b < t.nelements() / block_size(t.dtype); ++b) {
    uint8_t* blk = p + b * bs;
    switch (t.dtype) {
      case DType::Q4_K:
        put(blk, offsetof(quant::BlockQ4_K, d));
        put(blk, offsetof(quant::BlockQ4_K, dmin));
        break;
      case DType::Q6_K:
        put(blk, offsetof(quant::BlockQ6_K, d));
        break;
      case DType::MXFP4:  // an E8M0 scale near 2^-4
        blk[0] = static_cast<uint8_t>(120 + c.rng()() % 8);
        break;
      case DType::BF16: {  // every element a small normal value (f16 bits would be tiny)
        const uint16_t v = f32_to_bf16(scale(c.rng()));
        std::memcpy(blk, &v, 2);
        break;
      }
      default:
        put(blk, 0);  // legacy blocks start with d
        break;
    }
  }
}

// A weight for a checked case: through the reference quantizer where the
// type has one, else (IQ4_NL, IQ4_XS) random blocks with small scales.
void packed_fill_weight(OpCase& c, const TensorView& t) {
  if (quant::has_quantize(t.dtype)) {
    c.fill_uniform(t);
  } else {
    fill_random_blocks(c, t);
  }
}

TensorView filled_f32(OpCase& c, std::array<int64_t, kMaxDims> ne, int64_t pad = 0) {
  std::array<int64_t, kMaxDims> wide = ne;
  wide[0] += pad;
  TensorView t = c.alloc(DType::F32, wide);
  c.fill_uniform(t);
  t.ne = ne;
  return t;
}

void add_packed_mul_mat(CaseList& cases, DType src, int64_t k, int64_t n, int64_t m,
                 std::array<int64_t, 2> wb = {1, 1}, std::array<int64_t, 2> xb = {1, 1},
                 int64_t x_pad = 0) {
  const DType packed = *quant::packed_type_for(src);
  std::string name = fmt::format("mul_mat {} K={} N={} M={}", dtype_name(packed), k, n, m);
  if (xb[0] * xb[1] > 1) name += fmt::format(" w[{},{}] x[{},{}]", wb[0], wb[1], xb[0], xb[1]);
  if (x_pad > 0) name += " strided";
  auto c = new_case(name, OpKind::kMulMat);
  TensorView plain = c->alloc(src, {k, n, wb[0], wb[1]});
  packed_fill_weight(*c, plain);
  c->op.src[0] = packed_weight_copy(*c, plain, OpKind::kMulMat);
  c->op.src[1] = filled_f32(*c, {k, m, xb[0], xb[1]}, x_pad);
  c->op.dst = c->alloc(DType::F32, {n, m, xb[0], xb[1]});
  c->max_nmse = 5e-4;
  Equivalent eq;
  eq.what = "same op on the plain weight";
  eq.op = c->op;
  eq.op.src[0] = plain;
  eq.max_nmse = 5e-4;
  c->equivalents.push_back(eq);
  const double batches = static_cast<double>(xb[0] * xb[1]);
  c->flops = 2.0 * k * n * m * batches;
  c->bytes = static_cast<double>(row_size(src, k)) * n * wb[0] * wb[1] + 4.0 * k * m * batches +
             4.0 * n * m * batches;
  cases.push_back(std::move(c));
}

void add_packed_mul_mat_id(CaseList& cases, DType src, int64_t n_tok) {
  const DType packed = *quant::packed_type_for(src);
  const int64_t k = 512, n = 21, n_exp = 6, n_used = 3;
  auto c = new_case(fmt::format("mul_mat_id {} K={} N={} E={} used={} T={}", dtype_name(packed), k,
                                n, n_exp, n_used, n_tok),
                    OpKind::kMulMatId);
  TensorView plain = c->alloc(src, {k, n, n_exp});
  packed_fill_weight(*c, plain);
  c->op.src[0] = packed_weight_copy(*c, plain, OpKind::kMulMatId);
  c->op.src[1] = filled_f32(*c, {k, 1, n_tok, 1});
  c->op.src[2] = c->alloc(DType::I32, {n_used, n_tok});
  std::vector<int32_t> all(static_cast<size_t>(n_exp));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < n_tok; ++t) {
    std::shuffle(all.begin(), all.end(), c->rng());
    for (int64_t u = 0; u < n_used; ++u) *c->op.src[2].at<int32_t>(u, t) = all[u];
  }
  c->op.dst = c->alloc(DType::F32, {n, n_used, n_tok});
  c->max_nmse = 5e-4;
  Equivalent eq;
  eq.what = "same op on the plain weight";
  eq.op = c->op;
  eq.op.src[0] = plain;
  eq.max_nmse = 5e-4;
  c->equivalents.push_back(eq);
  c->flops = 2.0 * k * n * n_used * n_tok;
  cases.push_back(std::move(c));
}

// Perf only: the plain weight and its packed copy (where the type has one)
// as two cases of one shape.
void add_perf(CaseList& cases, DType src, int64_t k, int64_t n, int64_t m) {
  for (bool packed : {false, true}) {
    if (packed && !quant::packed_type_for(src).has_value()) continue;
    const DType shown = packed ? *quant::packed_type_for(src) : src;
    auto c = new_case(fmt::format("mul_mat {} K={} N={} M={} (perf)", dtype_name(shown), k, n, m),
                      OpKind::kMulMat);
    TensorView plain = c->alloc(src, {k, n});
    fill_random_blocks(*c, plain);
    c->op.src[0] = packed ? packed_weight_copy(*c, plain, OpKind::kMulMat) : plain;
    c->op.src[1] = filled_f32(*c, {k, m, 1, 1});
    c->op.dst = c->alloc(DType::F32, {n, m});
    c->perf_only = true;
    c->flops = 2.0 * k * n * m;
    c->bytes = static_cast<double>(row_size(src, k)) * n + 4.0 * k * m + 4.0 * n * m;
    cases.push_back(std::move(c));
  }
}

}  // namespace

void add_packed_cases(CaseList& cases, bool perf) {
  for (DType src : kPackedSources) {
    const int64_t k = block_size(src) == quant::kQKK ? 512 : 256;
    for (int64_t m : {1, 2, 3, 8, 12, 16, 17, 40, 64}) add_packed_mul_mat(cases, src, k, 37, m);
    add_packed_mul_mat(cases, src, k, 16, 512);
    add_packed_mul_mat_id(cases, src, 1);  // decode: one token per expert
    add_packed_mul_mat_id(cases, src, 2);  // decode: one or two tokens per expert
    add_packed_mul_mat_id(cases, src, 5);
    add_packed_mul_mat_id(cases, src, 40);  // 120 pairs over 6 experts: groups of 16+
    add_packed_mul_mat_id(cases, src, 80);  // groups of 32+ (two tile groups)
  }
  // A single 32-element block per row, and Gemma 3 270M decode / prefill
  // widths (ffn gate / up 640 -> 2048, down 2048 -> 640).
  for (DType src :
       {DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4}) {
    add_packed_mul_mat(cases, src, 32, 9, 18);
    add_packed_mul_mat(cases, src, 640, 2048, 1);
  }
  for (DType src : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) add_packed_mul_mat(cases, src, 2048, 640, 1);
  // K-quants and IQ4_XS, 150 rows: 9 full tile groups (4 pairs and a
  // single one) and a group of 6 rows.
  for (DType src : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS})
    add_packed_mul_mat(cases, src, 512, 37, 150);
  add_packed_mul_mat(cases, DType::Q5_0, 640, 256, 64);
  add_packed_mul_mat(cases, DType::Q4_K, 1024, 256, 64);
  add_packed_mul_mat(cases, DType::Q5_K, 1024, 256, 64);
  // Batch broadcast and padded activation rows.
  for (DType src : {DType::Q8_0, DType::Q4_K}) {
    add_packed_mul_mat(cases, src, 256, 12, 20, {2, 1}, {6, 2});
    add_packed_mul_mat(cases, src, 256, 21, 17, {1, 1}, {1, 1}, 64);
  }
  if (!perf) return;
  // 1 to 512 rows: decode, small batches (several sequences decoding
  // together, speculative verification) on one group of fewer than 16
  // tile rows, and prefill, against the panels of the tier below (where
  // amx_min_rows is measured).
  for (DType src : kPackedSources) {
    for (int64_t k : {2048, 4096}) {
      for (int64_t m : {1, 2, 4, 8, 12, 16, 32, 64, 128, 512}) add_perf(cases, src, k, 1024, m);
    }
  }
  // SmolLM2 135M's prefill products (Q4_1: attention 576 -> 576 / 192, ffn
  // 576 -> 1536, 1536 -> 576), short K where each panel call is short.
  for (auto [k, n] : {std::pair<int64_t, int64_t>{576, 576}, {576, 192}, {576, 1536}, {1536, 576}})
    add_perf(cases, DType::Q4_1, k, n, 512);
  // Float weights: a 0.6B model's FFN product in prefill and in a decode
  // step of 8 sequences, and decode over 64 MiB (past the last-level cache:
  // the memory stream).
  for (DType src : {DType::F16, DType::BF16}) {
    add_perf(cases, src, 1024, 3072, 512);
    add_perf(cases, src, 1024, 3072, 8);
    add_perf(cases, src, 1024, 32768, 1);
  }
}

}  // namespace folio::parity
