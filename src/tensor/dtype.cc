#include "tensor/dtype.h"

#include <array>
#include <cctype>

#include "core/check.h"

namespace folio {

namespace {

constexpr int64_t kQK = 32;    // legacy block
constexpr int64_t kQKK = 256;  // K-quant super-block
constexpr int64_t kQKNV = 64;  // NVFP4 block (4 scales of 16 elements)

struct Entry {
  bool known;
  DTypeTraits t;
};

// Sizes are GGUF format facts (ggml block layouts).
constexpr std::array<Entry, kDTypeIdLimit> make_table() {
  std::array<Entry, kDTypeIdLimit> a{};
  auto set = [&a](DType d, const char* name, int64_t bs, size_t ts, bool q, bool sup) {
    a[static_cast<uint32_t>(d)] = Entry{true, DTypeTraits{name, bs, ts, q, sup}};
  };
  set(DType::F32, "f32", 1, 4, false, true);
  set(DType::F16, "f16", 1, 2, false, true);
  set(DType::BF16, "bf16", 1, 2, false, true);
  set(DType::Q4_0, "q4_0", kQK, 2 + 16, true, true);
  set(DType::Q4_1, "q4_1", kQK, 2 + 2 + 16, true, true);
  set(DType::Q5_0, "q5_0", kQK, 2 + 4 + 16, true, true);
  set(DType::Q5_1, "q5_1", kQK, 2 + 2 + 4 + 16, true, true);
  set(DType::Q8_0, "q8_0", kQK, 2 + 32, true, true);
  set(DType::Q8_1, "q8_1", kQK, 2 + 2 + 32, true, false);
  set(DType::Q2_K, "q2_K", kQKK, 16 + 64 + 2 + 2, true, true);
  set(DType::Q3_K, "q3_K", kQKK, 32 + 64 + 12 + 2, true, true);
  set(DType::Q4_K, "q4_K", kQKK, 2 + 2 + 12 + 128, true, true);
  set(DType::Q5_K, "q5_K", kQKK, 2 + 2 + 12 + 32 + 128, true, true);
  set(DType::Q6_K, "q6_K", kQKK, 128 + 64 + 16 + 2, true, true);
  set(DType::Q8_K, "q8_K", kQKK, 4 + 256 + 32, true, true);
  set(DType::IQ2_XXS, "iq2_xxs", kQKK, 2 + 64, true, false);
  set(DType::IQ2_XS, "iq2_xs", kQKK, 2 + 64 + 8, true, false);
  set(DType::IQ3_XXS, "iq3_xxs", kQKK, 2 + 96, true, false);
  set(DType::IQ1_S, "iq1_s", kQKK, 2 + 32 + 16, true, false);
  set(DType::IQ4_NL, "iq4_nl", kQK, 2 + 16, true, true);
  set(DType::IQ3_S, "iq3_s", kQKK, 2 + 64 + 8 + 32 + 4, true, false);
  set(DType::IQ2_S, "iq2_s", kQKK, 2 + 64 + 16, true, false);
  set(DType::IQ4_XS, "iq4_xs", kQKK, 2 + 2 + 4 + 128, true, true);
  set(DType::I8, "i8", 1, 1, false, false);
  set(DType::I16, "i16", 1, 2, false, false);
  set(DType::I32, "i32", 1, 4, false, false);
  set(DType::I64, "i64", 1, 8, false, false);
  set(DType::F64, "f64", 1, 8, false, false);
  set(DType::IQ1_M, "iq1_m", kQKK, 32 + 16 + 8, true, false);
  // tq1_0: qs[(256 - 4*256/64)/5] = 48, qh[256/64] = 4, d = 2.
  set(DType::TQ1_0, "tq1_0", kQKK, 48 + 4 + 2, true, false);
  set(DType::TQ2_0, "tq2_0", kQKK, 2 + 64, true, false);
  set(DType::MXFP4, "mxfp4", kQK, 1 + 16, true, true);
  set(DType::NVFP4, "nvfp4", kQKNV, 4 + 32, true, true);
  return a;
}

constexpr auto kTable = make_table();

struct PackedEntry {
  DType source;
  DTypeTraits t;
};

// Packed layouts: the source format's block geometry (quant/repack.h).
constexpr std::array<PackedEntry, kPackedDTypeLimit - kPackedDTypeBase> kPacked{{
    {DType::Q4_0, {"q4_0x16", kQK, 2 + 16, true, true}},
    {DType::Q5_0, {"q5_0x16", kQK, 2 + 4 + 16, true, true}},
    {DType::Q8_0, {"q8_0x16", kQK, 2 + 32, true, true}},
    {DType::Q4_K, {"q4_Kx16", kQKK, 2 + 2 + 16 + 128, true, true}},
    {DType::Q6_K, {"q6_Kx16", kQKK, 128 + 64 + 16 + 2, true, true}},
    {DType::Q5_K, {"q5_Kx16", kQKK, 2 + 2 + 16 + 32 + 128, true, true}},
    {DType::Q4_1, {"q4_1x16", kQK, 2 + 2 + 16, true, true}},
    {DType::Q5_1, {"q5_1x16", kQK, 2 + 2 + 4 + 16, true, true}},
    {DType::IQ4_NL, {"iq4_nlx16", kQK, 2 + 16, true, true}},
    {DType::IQ4_XS, {"iq4_xsx16", kQKK, 2 + 8 + 128, true, true}},
    {DType::MXFP4, {"mxfp4x16", kQK, 1 + 16, true, true}},
    {DType::F16, {"f16x16", 1, 2, false, true}},
}};

}  // namespace

std::optional<DTypeTraits> dtype_traits_for_id(uint32_t id) {
  if (id >= kDTypeIdLimit || !kTable[id].known) return std::nullopt;
  return kTable[id].t;
}

const DTypeTraits& traits(DType t) {
  const uint32_t id = static_cast<uint32_t>(t);
  if (is_packed(t)) return kPacked[id - kPackedDTypeBase].t;
  FOLIO_CHECK_MSG(id < kDTypeIdLimit && kTable[id].known, "bad DType id {}", id);
  return kTable[id].t;
}

DType packed_source(DType t) {
  return is_packed(t) ? kPacked[static_cast<uint32_t>(t) - kPackedDTypeBase].source : t;
}

Result<DType> dtype_for_tensor(uint32_t id, std::string_view tensor_name) {
  auto t = dtype_traits_for_id(id);
  if (!t) return data_loss("invalid tensor type id {} for tensor '{}'", id, tensor_name);
  if (!t->supported) return unsupported("unsupported tensor type {} for tensor '{}'", t->name, tensor_name);
  return static_cast<DType>(id);
}

std::optional<DType> parse_dtype(std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  const std::string want = lower(name);
  for (uint32_t id = 0; id < kDTypeIdLimit; ++id) {
    if (kTable[id].known && lower(kTable[id].t.name) == want) return static_cast<DType>(id);
  }
  return std::nullopt;
}

}  // namespace folio
