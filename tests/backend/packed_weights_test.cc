// Packed weight buffer types (backend/cpu/cpu_buffer_types.h) and the
// kernels on their layouts: what each type accepts, the priority list per
// ISA, routing of packed ops (only kernels that read the layout), and the
// properties the parity harness does not check: the AMX tiles and the
// AVX-512 panels give the same bits, a row's result does not depend on the
// batch around it, and packed kernels match the plain SIMD kernels to float
// rounding (they quantize activations the same way and sum the same
// integers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_buffer_types.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "core/aligned.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/quant.h"
#include "quant/repack.h"

namespace folio {
namespace packed_weights_test {

WeightUse use(DType t, std::array<int64_t, kMaxDims> ne, OpKind consumer = OpKind::kMulMat) {
  return WeightUse{"w", t, ne, consumer};
}

TEST(PackedBufferTypes, AcceptOnlyMulMatWeightsOfTheirFormats) {
  const PackedBufferType& amx = amx_buffer_type();
  const PackedBufferType& rep = repack_buffer_type();
  EXPECT_TRUE(amx.supports_weight(use(DType::Q4_0, {256, 37, 1, 1})));
  EXPECT_TRUE(amx.supports_weight(use(DType::Q8_0, {640, 262144, 1, 1})));
  EXPECT_TRUE(amx.supports_weight(use(DType::Q5_0, {256, 24, 8, 1}, OpKind::kMulMatId)));
  EXPECT_TRUE(amx.supports_weight(use(DType::Q4_K, {256, 32, 1, 1})));
  EXPECT_TRUE(rep.supports_weight(use(DType::Q4_K, {256, 32, 1, 1})));
  EXPECT_TRUE(rep.supports_weight(use(DType::Q5_K, {2048, 640, 1, 1})));
  EXPECT_TRUE(rep.supports_weight(use(DType::Q6_K, {2048, 640, 1, 1})));
  // Every packed layout has AMX panels: the AMX type holds them all.
  EXPECT_TRUE(amx.supports_weight(use(DType::Q5_K, {256, 32, 1, 1})));
  EXPECT_TRUE(amx.supports_weight(use(DType::Q6_K, {2048, 640, 1, 1})));
  EXPECT_TRUE(amx.supports_weight(use(DType::Q4_1, {256, 32, 1, 1})));
  EXPECT_TRUE(rep.supports_weight(use(DType::Q4_1, {256, 32, 1, 1})));
  EXPECT_TRUE(rep.supports_weight(use(DType::Q8_0, {256, 32, 1, 1})));
  for (DType t : {DType::Q5_1, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4}) {
    EXPECT_TRUE(amx.supports_weight(use(t, {256, 32, 1, 1}))) << dtype_name(t);
    EXPECT_TRUE(rep.supports_weight(use(t, {256, 32, 4, 1}, OpKind::kMulMatId))) << dtype_name(t);
  }
  // F16 mul_mat weights: the AMX type with F16 tiles where the CPU has
  // AMX-BF16 (as F16_X16, any K), never the default AMX type or CPU_REPACK;
  // their embeddings stay plain.
  const PackedBufferType& amx16 = amx_f16_buffer_type();
  EXPECT_EQ(amx16.supports_weight(use(DType::F16, {100, 32, 1, 1})), cpu_features().amx_bf16);
  EXPECT_EQ(amx16.supports_weight(use(DType::F16, {256, 32, 4, 1}, OpKind::kMulMatId)),
            cpu_features().amx_bf16);
  EXPECT_TRUE(amx16.supports_weight(use(DType::Q4_0, {256, 37, 1, 1})));
  EXPECT_FALSE(amx16.supports_weight(use(DType::F16, {256, 32, 1, 1}, OpKind::kGetRows)));
  EXPECT_FALSE(amx.supports_weight(use(DType::F16, {256, 32, 1, 1})));
  EXPECT_FALSE(rep.supports_weight(use(DType::F16, {256, 32, 1, 1})));
  for (const PackedBufferType* t : {&amx, &repack_buffer_type()}) {
    // F32 tensors, norms, embeddings (get_rows) and unsupported formats stay plain.
    EXPECT_FALSE(t->supports_weight(use(DType::F32, {256, 32, 1, 1})));
    EXPECT_FALSE(t->supports_weight(use(DType::F32, {256, 1, 1, 1}, OpKind::kRmsNorm)));
    EXPECT_FALSE(t->supports_weight(use(DType::Q8_0, {640, 1000, 1, 1}, OpKind::kGetRows)));
    EXPECT_FALSE(t->supports_weight(use(DType::Q2_K, {256, 32, 1, 1})));
    EXPECT_FALSE(t->supports_weight(use(DType::NVFP4, {256, 32, 1, 1})));
    EXPECT_FALSE(t->supports_weight(use(DType::Q4_0, {256, 32, 2, 2}, OpKind::kMulMatId)));
  }
  // Sizes: whole panels of 16 rows.
  EXPECT_EQ(amx.weight_bytes(use(DType::Q4_0, {256, 17, 1, 1})), 32 * row_size(DType::Q4_0, 256));
  EXPECT_EQ(rep.weight_bytes(use(DType::Q4_K, {256, 16, 3, 1})), 3 * 16 * (144 + 4));
  EXPECT_EQ(rep.weight_bytes(use(DType::Q5_K, {512, 17, 1, 1})), 32 * 2 * (176 + 4));
}

TEST(PackedBufferTypes, StoreChecksItsInput) {
  const PackedBufferType& amx = amx_buffer_type();
  std::vector<uint8_t> src(row_size(DType::Q4_0, 64) * 3), dst(4096);
  EXPECT_FALSE(
      amx.store_weight(use(DType::Q4_0, {64, 3, 1, 1}), src.data(), src.size() - 1, dst.data())
          .ok());
  EXPECT_FALSE(
      amx.store_weight(use(DType::F32, {16, 3, 1, 1}), src.data(), 16 * 3 * 4, dst.data()).ok());
  EXPECT_TRUE(
      amx.store_weight(use(DType::Q4_0, {64, 3, 1, 1}), src.data(), src.size(), dst.data()).ok());
  const TensorView v = amx.weight_view(use(DType::Q4_0, {64, 3, 1, 1}), dst.data());
  EXPECT_EQ(v.dtype, DType::Q4_0_X16);
  EXPECT_TRUE(quant::is_packed_view(v));
}

std::vector<std::string> names(const std::vector<const BufferType*>& list) {
  std::vector<std::string> n;
  for (const BufferType* t : list) n.push_back(t->name());
  return n;
}

TEST(PackedBufferTypes, PriorityListFollowsTheIsa) {
  using V = std::vector<std::string>;
  EXPECT_EQ(names(cpu_weight_buffer_types(Isa::kScalar)), V{"CPU"});
  const CpuFeatures& f = cpu_features();
  if (static_cast<int>(active_isa()) >= static_cast<int>(Isa::kAvx2) && f.avx2 && f.fma &&
      f.f16c) {
    // The AVX2 panels read every packed layout.
    const auto l = cpu_weight_buffer_types(Isa::kAvx2);
    EXPECT_EQ(names(l), (V{"CPU_REPACK", "CPU"}));
    EXPECT_TRUE(l[0]->supports_weight(use(DType::Q8_0, {256, 32, 1, 1})));
    EXPECT_TRUE(l[0]->supports_weight(use(DType::Q6_K, {256, 32, 1, 1})));
  } else {
    EXPECT_EQ(names(cpu_weight_buffer_types(Isa::kAvx2)), V{"CPU"});
  }
  EXPECT_EQ(names(cpu_weight_buffer_types(Isa::kAmx, false)), V{"CPU"});
  const Isa top = active_isa();
  const bool vnni =
      static_cast<int>(top) >= static_cast<int>(Isa::kAvx512) && cpu_features().avx512vnni;
  if (vnni) {
    const auto l = cpu_weight_buffer_types(Isa::kAvx512);
    EXPECT_EQ(names(l), (V{"CPU_REPACK", "CPU"}));
    EXPECT_TRUE(l[0]->supports_weight(use(DType::Q8_0, {256, 32, 1, 1})));
  }
  if (top == Isa::kAmx) {
    const auto l = cpu_weight_buffer_types(Isa::kAmx);
    EXPECT_EQ(names(l), (V{"AMX", "CPU"}));
    EXPECT_EQ(*place_weight(l, use(DType::Q8_0, {256, 32, 1, 1})), l[0]);
    EXPECT_EQ(*place_weight(l, use(DType::Q6_K, {256, 32, 1, 1})), l[0]);
    EXPECT_EQ(*place_weight(l, use(DType::Q4_1, {256, 32, 1, 1})), l[0]);
    EXPECT_EQ(*place_weight(l, use(DType::F32, {256, 32, 1, 1})), l[1]);
    EXPECT_EQ(*place_weight(l, use(DType::Q8_0, {256, 32, 1, 1}, OpKind::kGetRows)), l[1]);
  } else {
    EXPECT_NE(cpu_weight_buffer_note(Isa::kAmx).find("AMX not offered"), std::string::npos);
  }
}

// By default (FOLIO_AMX_F16 unset, or 1) the AMX entry is the type that also
// holds F16 weights (where the CPU has AMX-BF16), and the load line says so;
// FOLIO_AMX_F16=0 keeps F16 weights plain; another value is named as ignored
// (the default holds).
TEST(PackedBufferTypes, AmxF16IsPlacedUnlessDeclined) {
  const bool amx = active_isa() == Isa::kAmx;
  auto expect_f16_on_tiles = [&](const char* what) {
    EXPECT_TRUE(amx_f16_requested()) << what;
    if (amx) {
      const auto l = cpu_weight_buffer_types(Isa::kAmx);
      EXPECT_EQ(l.front(), &amx_f16_buffer_type()) << what;
      EXPECT_EQ(*place_weight(l, use(DType::F16, {256, 32, 1, 1})),
                cpu_features().amx_bf16 ? l[0] : l[1])
          << what;
      EXPECT_EQ(cpu_weight_buffer_note(Isa::kAmx).find("F16 weights on the AMX-BF16 tiles") !=
                    std::string::npos,
                cpu_features().amx_bf16)
          << what;
    }
  };
  ASSERT_EQ(unsetenv("FOLIO_AMX_F16"), 0);
  expect_f16_on_tiles("unset");
  EXPECT_EQ(cpu_weight_buffer_note(Isa::kAmx).find("ignored"), std::string::npos);
  ASSERT_EQ(setenv("FOLIO_AMX_F16", "1", 1), 0);
  expect_f16_on_tiles("1");
  ASSERT_EQ(setenv("FOLIO_AMX_F16", "yes", 1), 0);
  expect_f16_on_tiles("yes");
  EXPECT_NE(cpu_weight_buffer_note(Isa::kAmx).find("FOLIO_AMX_F16='yes' ignored"),
            std::string::npos);
  ASSERT_EQ(setenv("FOLIO_AMX_F16", "0", 1), 0);
  EXPECT_FALSE(amx_f16_requested());
  EXPECT_EQ(cpu_weight_buffer_note(Isa::kAmx).find("ignored"), std::string::npos);
  if (amx) {
    const auto l = cpu_weight_buffer_types(Isa::kAmx);
    EXPECT_EQ(l.front(), &amx_buffer_type());
    EXPECT_EQ(*place_weight(l, use(DType::F16, {256, 32, 1, 1})), l[1]);
    EXPECT_EQ(cpu_weight_buffer_note(Isa::kAmx).find("F16 weights plain") != std::string::npos,
              cpu_features().amx_bf16);
  }
  ASSERT_EQ(unsetenv("FOLIO_AMX_F16"), 0);
}

bool has_vnni() {
  return static_cast<int>(active_isa()) >= static_cast<int>(Isa::kAvx512) &&
         cpu_features().avx512vnni;
}

bool has_vnni256() {
  return static_cast<int>(active_isa()) >= static_cast<int>(Isa::kAvx2Vnni) &&
         cpu_features().vnni256();
}

// The tiers with panel kernels on this machine: AVX2 (+ FMA, F16C), AVX2 with
// 256-bit VNNI, AVX-512 VNNI.
std::vector<Isa> packed_isas() {
  std::vector<Isa> isas;
  const CpuFeatures& f = cpu_features();
  if (static_cast<int>(active_isa()) >= static_cast<int>(Isa::kAvx2) && f.avx2 && f.fma && f.f16c)
    isas.push_back(Isa::kAvx2);
  if (has_vnni256()) isas.push_back(Isa::kAvx2Vnni);
  if (has_vnni()) isas.push_back(Isa::kAvx512);
  return isas;
}

// A quantized weight [k, n], its packed copy and random activations [k, m].
struct Problem {
  DType src;
  int64_t k, n, m;
  AlignedPtr plain, packed;
  std::vector<float> x;
  TensorView w_plain, w_packed;

  Problem(DType t, int64_t k_, int64_t n_, int64_t m_, uint32_t seed)
      : src(t), k(k_), n(n_), m(m_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> wf(static_cast<size_t>(k * n));
    for (float& v : wf) v = u(rng);
    x.resize(static_cast<size_t>(k * m));
    for (float& v : x) v = u(rng);
    const size_t row = row_size(t, k);
    plain = aligned_alloc_bytes(row * n);
    auto* bytes = static_cast<uint8_t*>(plain.get());
    if (quant::has_quantize(t)) {
      for (int64_t r = 0; r < n; ++r) quant::quantize_row_ref(t, wf.data() + r * k, bytes + r * row, k);
    } else {
      // IQ4_NL, IQ4_XS (no reference quantizer): random codes and scales, a
      // small f16 d (the first field of both blocks).
      std::uniform_real_distribution<float> d(0.001f, 0.01f);
      for (size_t i = 0; i < row * n; ++i) bytes[i] = static_cast<uint8_t>(rng());
      for (size_t b = 0; b < row * n; b += type_size(t)) {
        const uint16_t h = f32_to_f16(d(rng));
        std::memcpy(bytes + b, &h, 2);
      }
    }
    w_plain = TensorView::contiguous(plain.get(), t, {k, n});
    const PackedBufferType& type = repack_buffer_type();
    const WeightUse u_{"w", t, w_plain.ne, OpKind::kMulMat};
    packed = aligned_alloc_bytes(type.weight_bytes(u_));
    EXPECT_TRUE(type.store_weight(u_, plain.get(), row * n, packed.get()).ok());
    w_packed = type.weight_view(u_, packed.get());
  }

  // Runs W x X[:, first .. first + count) on `b`.
  std::vector<float> run(Backend& b, bool use_packed, int64_t first, int64_t count) {
    std::vector<float> y(static_cast<size_t>(n * count));
    Op op;
    op.kind = OpKind::kMulMat;
    op.src[0] = use_packed ? w_packed : w_plain;
    op.src[1] = TensorView::contiguous(x.data() + first * k, DType::F32, {k, count});
    op.dst = TensorView::contiguous(y.data(), DType::F32, {n, count});
    const Status s = b.run(op);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return y;
  }
};

constexpr DType kSources[] = {DType::Q4_0, DType::Q4_1,   DType::Q5_0,  DType::Q5_1,
                              DType::Q8_0, DType::IQ4_NL, DType::MXFP4, DType::Q4_K,
                              DType::Q5_K, DType::Q6_K,   DType::IQ4_XS};

TEST(PackedKernels, RoutedOnlyToKernelsThatReadTheLayout) {
  Problem p(DType::Q4_0, 64, 20, 3, 1);
  Op op;
  op.kind = OpKind::kMulMat;
  std::vector<float> y(20 * 3);
  op.src[0] = p.w_packed;
  op.src[1] = TensorView::contiguous(p.x.data(), DType::F32, {64, 3});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {20, 3});
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  CpuBackend avx2(CpuBackendOptions{Isa::kAvx2, false, nullptr});
  EXPECT_EQ(ref.kernel_name(op), "mul_mat.packed.ref");
  if (!packed_isas().empty() && packed_isas()[0] == Isa::kAvx2) {
    EXPECT_EQ(avx2.kernel_name(op), "mul_mat.q4_0x16.avx2");
  }
  // A packed table is never read by get_rows (nor by any other plain kernel).
  Op gr;
  gr.kind = OpKind::kGetRows;
  int32_t ids[1] = {0};
  std::vector<float> row(64);
  gr.src[0] = p.w_packed;
  gr.src[1] = TensorView::contiguous(ids, DType::I32, {1});
  gr.dst = TensorView::contiguous(row.data(), DType::F32, {64, 1});
  EXPECT_FALSE(ref.supports_op(gr));
  EXPECT_FALSE(CpuBackend().supports_op(gr));
  EXPECT_EQ(CpuBackend().run(gr).code(), StatusCode::kUnsupported);
}


double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    e += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    r += static_cast<double>(b[i]) * b[i];
  }
  return e / r;
}

TEST(PackedKernels, MatchThePlainSimdKernels) {
  if (packed_isas().empty()) GTEST_SKIP() << "hardware: no AVX2";
  for (Isa isa : packed_isas()) {
    CpuBackend b(CpuBackendOptions{isa, false, nullptr});
    for (DType t : kSources) {
      for (int64_t m : {1, 2, 5, 9}) {  // decode (1, 2 rows), a tile and its remainder
        Problem p(t, 512, 37, m, 7);
        const std::vector<float> plain = p.run(b, false, 0, p.m), packed = p.run(b, true, 0, p.m);
        EXPECT_LE(nmse(packed, plain), 1e-10) << dtype_name(t) << " " << isa_name(isa) << " m " << m;
      }
    }
  }
}

// The AVX2 panels compute the AVX-512 panels' integers with the same float
// steps: the same bits, in prefill tiles and in decode.
TEST(PackedKernels, Avx2PanelsGiveTheBitsOfTheAvx512Panels) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  CpuBackend avx2(CpuBackendOptions{Isa::kAvx2, false, nullptr});
  CpuBackend avx512(CpuBackendOptions{Isa::kAvx512, false, nullptr});
  for (DType t : kSources) {
    for (int64_t m : {1, 2, 13}) {
      Problem p(t, 512, 37, m, 5);
      const std::vector<float> a = p.run(avx2, true, 0, m), b = p.run(avx512, true, 0, m);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << dtype_name(t) << " m " << m;
    }
  }
}

// The avx2_vnni tier (vpdpbusd) computes the avx2 tier's (vpmaddubsw)
// integers with the same float steps: the same bits, through the backend's
// routing (kernel names), in prefill tiles and in decode, for mul_mat and
// mul_mat_id.
TEST(PackedKernels, Avx2VnniPanelsGiveTheBitsOfTheAvx2Panels) {
  if (!has_vnni256()) GTEST_SKIP() << "hardware: no 256-bit VNNI (AVX-VNNI or AVX-512 VNNI + VL)";
  CpuBackend avx2(CpuBackendOptions{Isa::kAvx2, false, nullptr});
  CpuBackend vnni(CpuBackendOptions{Isa::kAvx2Vnni, false, nullptr});
  for (DType t : kSources) {
    for (int64_t m : {1, 2, 5, 13}) {
      Problem p(t, 512, 37, m, 9);
      Op op;
      op.kind = OpKind::kMulMat;
      op.src[0] = p.w_packed;
      op.src[1] = TensorView::contiguous(p.x.data(), DType::F32, {p.k, m});
      EXPECT_NE(vnni.kernel_name(op).find(".avx2_vnni"), std::string::npos) << vnni.kernel_name(op);
      const std::vector<float> a = p.run(avx2, true, 0, m), b = p.run(vnni, true, 0, m);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << dtype_name(t) << " m " << m;
    }
  }
}

#if defined(__x86_64__)  // the x86 panel functions are built for x86 only
// One encoding of the 256-bit VNNI panels (avx2/int_dot.h) against the
// vpmaddubsw panels, panel function by panel function: prefill tiles (7
// activation rows: a tile of 4 and a remainder) and decode (2 rows), full
// and partial panels.
void expect_vnni_encoding_gives_the_maddubs_bits(cpu::Avx2Dot dot) {
  constexpr int64_t k = 512;
  constexpr int kRows = 7;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<size_t>(k * kRows));
  for (float& v : x) v = u(rng);
  for (DType t : kSources) {
    Problem p(t, k, 16, 1, 21);
    const DType packed = p.w_packed.dtype;
    const bool legacy = cpu::legacy_panel_avx2(packed, cpu::Avx2Dot::kMaddubs) != nullptr;
    const cpu::ActFormat act = legacy ? cpu::ActFormat::kQ8_0 : cpu::ActFormat::kQ8_K;
    const size_t xs = cpu::act_row_bytes(act, k);
    std::vector<uint8_t> xq(xs * kRows);
    for (int c = 0; c < kRows; ++c) {
      cpu::convert_act_row(act, x.data() + c * k, xq.data() + c * xs, k);
    }
    const auto panel = [&](cpu::Avx2Dot d) {
      return legacy ? cpu::legacy_panel_avx2(packed, d) : cpu::kquant_panel_avx2(packed, d);
    };
    const auto decode = [&](cpu::Avx2Dot d) {
      return legacy ? cpu::legacy_decode_avx2(packed, d) : cpu::kquant_decode_avx2(packed, d);
    };
    for (int nr : {16, 11, 3}) {
      std::vector<float> want(16 * kRows, 0.0f), got(16 * kRows, 0.0f);
      panel(cpu::Avx2Dot::kMaddubs)(k, p.packed.get(), xq.data(), xs, kRows, nr, want.data(), 64);
      panel(dot)(k, p.packed.get(), xq.data(), xs, kRows, nr, got.data(), 64);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4))
          << dtype_name(t) << " nr " << nr;
      std::vector<float> want_dec(16 * 2, 0.0f), got_dec(16 * 2, 0.0f);
      decode(cpu::Avx2Dot::kMaddubs)(k, p.packed.get(), 0, 1, nr, xq.data(), xs, 2,
                                     want_dec.data(), 64);
      decode(dot)(k, p.packed.get(), 0, 1, nr, xq.data(), xs, 2, got_dec.data(), 64);
      EXPECT_EQ(0, std::memcmp(want_dec.data(), got_dec.data(), want_dec.size() * 4))
          << dtype_name(t) << " decode nr " << nr;
    }
  }
}

// The VEX encoding: AVX-VNNI CPUs (Intel client chips from Alder Lake, Zen 5).
TEST(PackedKernels, VexVnniPanelsGiveTheBitsOfTheMaddubsPanels) {
  const CpuFeatures& f = cpu_features();
  if (!(f.vnni256() && f.avxvnni)) GTEST_SKIP() << "hardware: no AVX-VNNI (VEX vpdpbusd)";
  expect_vnni_encoding_gives_the_maddubs_bits(cpu::Avx2Dot::kVnniVex);
}

// The EVEX encoding: AVX-512 VNNI CPUs (Ice Lake and later Xeons, Zen 4).
TEST(PackedKernels, EvexVnniPanelsGiveTheBitsOfTheMaddubsPanels) {
  const CpuFeatures& f = cpu_features();
  if (!(f.vnni256() && f.avx512vnni && f.avx512vl)) {
    GTEST_SKIP() << "hardware: no AVX-512 VNNI with VL (EVEX vpdpbusd on ymm)";
  }
  expect_vnni_encoding_gives_the_maddubs_bits(cpu::Avx2Dot::kVnniEvex);
}
#endif

// Each activation row's outputs are the same bits whatever the batch around
// it (1 row, 16-row AMX groups, the last smaller group), on every packed tier.
TEST(PackedKernels, RowsIndependentOfTheBatch) {
  if (packed_isas().empty()) GTEST_SKIP() << "hardware: no AVX2";
  std::vector<Isa> isas = packed_isas();
  if (active_isa() == Isa::kAmx) isas.push_back(Isa::kAmx);
  for (DType t : kSources) {
    // 6 panels: decode calls of 4 and 2 (5 rows); 150 and 140 rows reach
    // the AMX panels of every layout (amx_min_rows), 33 those of all but
    // Q4_K, with a smaller last group.
    Problem p(t, 256, 85, 150, 11);
    for (Isa isa : isas) {
      CpuBackend b(CpuBackendOptions{isa, false, nullptr});
      const std::vector<float> all = p.run(b, true, 0, 150);
      for (int64_t first : {0, 5, 17, 39}) {
        const std::vector<float> one = p.run(b, true, first, 1);
        EXPECT_EQ(0, std::memcmp(one.data(), all.data() + first * p.n, p.n * 4))
            << dtype_name(t) << " " << isa_name(isa) << " row " << first;
      }
      for (int64_t first : {0, 7, 38}) {  // two rows: the decode path too
        const std::vector<float> two = p.run(b, true, first, 2);
        EXPECT_EQ(0, std::memcmp(two.data(), all.data() + first * p.n, two.size() * 4))
            << dtype_name(t) << " " << isa_name(isa) << " rows " << first << ", " << first + 1;
      }
      const std::vector<float> mid = p.run(b, true, 3, 140);  // 8 tile groups + 12
      const std::vector<float> few = p.run(b, true, 3, 33);   // 2 tile groups + 1
      EXPECT_EQ(0, std::memcmp(mid.data(), all.data() + 3 * p.n, mid.size() * 4));
      EXPECT_EQ(0, std::memcmp(few.data(), all.data() + 3 * p.n, few.size() * 4));
    }
  }
}

// The K-quant panels add i16 partial sums (AVX2: up to 8 vpmaddubsw pairs
// for Q4_K, 4 for Q5_K, 2 for Q6_K; AVX-512: half and quarter groups; AMX:
// whole tile dots scaled in i32) and scale them: with every code at its maximum, every scale at its largest
// magnitude (Q4_K / Q5_K 63, Q6_K -1 x code - 32 = 31) and activations at
// +-1 (quants -128 and +127) those sums reach their bound and must stay exact.
TEST(PackedKernels, KQuantExtremeCodesStayExact) {
  if (packed_isas().empty()) GTEST_SKIP() << "hardware: no AVX2";
  std::vector<Isa> isas = packed_isas();
  if (active_isa() == Isa::kAmx) isas.push_back(Isa::kAmx);
  for (Isa isa : isas) {
    CpuBackend b(CpuBackendOptions{isa, false, nullptr});
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      // AMX: 8 tile groups of 16 rows, then a group of 9; the other panels:
      // tiles of 8, then 1 more.
      const int64_t k = 512, n = 16, m = 137;
      const size_t row = row_size(t, k);
      std::vector<uint8_t> plain(row * n, 0xFF);  // scales, mins 63 (Q6_K: -1); codes 15 / 31 / 63
      const uint16_t d = f32_to_f16(1.0f / 64), dmin = 0;
      for (size_t blk = 0; blk < plain.size(); blk += type_size(t)) {
        if (t == DType::Q6_K) {
          std::memcpy(&plain[blk + type_size(t) - 2], &d, 2);  // d follows ql, qh, scales
        } else {
          std::memcpy(&plain[blk], &d, 2);
          std::memcpy(&plain[blk + 2], &dmin, 2);
        }
      }
      const WeightUse u{"w", t, {k, n, 1, 1}, OpKind::kMulMat};
      const PackedBufferType& type = repack_buffer_type();
      AlignedPtr packed = aligned_alloc_bytes(type.weight_bytes(u));
      ASSERT_TRUE(type.store_weight(u, plain.data(), plain.size(), packed.get()).ok());
      std::vector<float> x(static_cast<size_t>(k * m));
      for (int64_t c = 0; c < m; ++c)
        for (int64_t i = 0; i < k; ++i) x[c * k + i] = c % 2 == 0 ? -1.0f : 1.0f;
      std::vector<float> y(static_cast<size_t>(n * m));
      Op op;
      op.kind = OpKind::kMulMat;
      op.src[0] = type.weight_view(u, packed.get());
      op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, m});
      op.dst = TensorView::contiguous(y.data(), DType::F32, {n, m});
      ASSERT_TRUE(b.run(op).ok());
      const float value = t == DType::Q4_K ? 63.0f * 15 : t == DType::Q5_K ? 63.0f * 31 : -31.0f;
      for (int64_t c = 0; c < m; ++c) {
        const float want = (c % 2 == 0 ? -1.0f : 1.0f) * k * value / 64;
        for (int64_t r = 0; r < n; ++r) {
          EXPECT_NEAR(y[c * n + r], want, 1e-5 * std::fabs(want))
              << dtype_name(t) << " " << isa_name(isa) << " " << c;
        }
      }
    }
  }
}

// A bad expert id is kOutOfRange before anything is written, on the packed
// driver as on the plain one (group_pairs_by_expert in both).
TEST(PackedKernels, ExpertIdOutOfRangeIsAnErrorAndWritesNothing) {
  const int64_t k = 256, n = 20, n_exp = 3, n_used = 2, n_tok = 2;
  const size_t row = row_size(DType::Q4_0, k);
  std::vector<char> plain(row * n * n_exp, 0);
  const PackedBufferType& type = repack_buffer_type();
  const WeightUse u{"experts", DType::Q4_0, {k, n, n_exp, 1}, OpKind::kMulMatId};
  AlignedPtr packed = aligned_alloc_bytes(type.weight_bytes(u));
  ASSERT_TRUE(type.store_weight(u, plain.data(), plain.size(), packed.get()).ok());
  std::vector<float> x(static_cast<size_t>(k * n_tok), 0.5f);
  std::vector<int32_t> ids = {0, 2, 1, 3};  // 3 is not an expert
  std::vector<float> y(static_cast<size_t>(n * n_used * n_tok), 7.0f);
  Op op;
  op.kind = OpKind::kMulMatId;
  op.src[0] = type.weight_view(u, packed.get());
  op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, 1, n_tok});
  op.src[2] = TensorView::contiguous(ids.data(), DType::I32, {n_used, n_tok});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {n, n_used, n_tok});
  std::vector<Isa> isas{Isa::kScalar};
  for (Isa isa : packed_isas()) isas.push_back(isa);
  if (active_isa() == Isa::kAmx) isas.push_back(Isa::kAmx);
  for (Isa isa : isas) {
    const Status s = CpuBackend(CpuBackendOptions{isa, false, nullptr}).run(op);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << isa_name(isa) << ": " << s.to_string();
    EXPECT_EQ(std::count(y.begin(), y.end(), 7.0f), static_cast<long>(y.size())) << isa_name(isa);
  }
}

// The AMX panels give the bits of the panels below them (AVX-512; Q4_1_X16:
// avx2_vnni, its only panel below AMX) for every packed layout (Q5_1_X16,
// IQ4_NL_X16, IQ4_XS_X16 and MXFP4_X16 included), through the kernel the
// AMX backend selects: 160 rows are 10 tile groups, 150 are 9 and a group
// of 6 rows.
TEST(PackedKernels, AmxTilesGiveTheBitsOfTheTierBelow) {
  if (active_isa() != Isa::kAmx) GTEST_SKIP() << "hardware: no AMX (or the OS refused the tile state)";
  CpuBackend amx(CpuBackendOptions{Isa::kAmx, false, nullptr});
  CpuBackend avx512(CpuBackendOptions{Isa::kAvx512, false, nullptr});
  for (DType t : kSources) {
    const int64_t k = block_size(t) == 256 ? 768 : 640;
    for (int64_t m : {150, 160}) {
      Problem p(t, k, 40, m, 3);
      Op probe;
      probe.kind = OpKind::kMulMat;
      probe.src[0] = p.w_packed;
      probe.src[1] = TensorView::contiguous(p.x.data(), DType::F32, {p.k, p.m});
      std::vector<float> y(static_cast<size_t>(p.n * p.m));
      probe.dst = TensorView::contiguous(y.data(), DType::F32, {p.n, p.m});
      EXPECT_NE(amx.kernel_name(probe).find(".amx"), std::string::npos) << dtype_name(t);
      const std::vector<float> a = p.run(amx, true, 0, p.m), b = p.run(avx512, true, 0, p.m);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << dtype_name(t) << " m=" << m;
    }
  }
}

// Every batch size from 1 to 40 on the tiles (amx_min_rows set to 1: one
// group of m rows under 16, then a full group and 1..15 rows, then two full
// groups and 1..8 rows), against the panels below AMX on the same rows.
TEST(PackedKernels, AmxTilesOfEveryRowCountGiveTheBitsOfTheTierBelow) {
#if !defined(__x86_64__)  // the AMX panels are built for x86 only
  GTEST_SKIP() << "hardware: no AMX (not an x86 CPU)";
#else
  if (active_isa() != Isa::kAmx) GTEST_SKIP() << "hardware: no AMX (or the OS refused the tile state)";
  CpuBackend avx512(CpuBackendOptions{Isa::kAvx512, false, nullptr});
  for (DType t : kSources) {
    const int64_t k = block_size(t) == 256 ? 768 : 640;
    Problem p(t, k, 40, 40, 5);
    for (int64_t m = 1; m <= p.m; ++m) {
      std::vector<float> a(static_cast<size_t>(p.n * m), -1.0f);
      Op op;
      op.kind = OpKind::kMulMat;
      op.src[0] = p.w_packed;
      op.src[1] = TensorView::contiguous(p.x.data(), DType::F32, {p.k, m});
      op.dst = TensorView::contiguous(a.data(), DType::F32, {p.n, m});
      ASSERT_TRUE(cpu::mul_mat_packed_amx_min_rows(op, KernelContext{}, 1).ok());
      const std::vector<float> b = p.run(avx512, true, 0, m);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << dtype_name(t) << " m=" << m;
    }
  }
#endif
}

}  // namespace
}  // namespace folio
