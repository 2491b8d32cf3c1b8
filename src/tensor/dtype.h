// DType: element and block formats. Values equal GGUF/ggml type ids, so a
// GGUF tensor's type field maps directly. Traits (block size, bytes per
// block, name) are known for every ggml type id so that files with exotic
// types still parse and dump; `supported` marks the ones folio computes with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace folio {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  // Packed weight layouts: folio-internal, never in a GGUF file (ids from
  // kPackedDTypeBase on, outside every GGUF id). A packed buffer type's
  // store_weight writes them (backend/cpu/cpu_buffer_types.h); only kernels
  // that declare `reads_packed` accept an op with such an input, so no
  // kernel ever reads packed bytes as the plain format. Layouts (panels of
  // 16 rows, lossless: unpacking gives back the GGUF bytes): quant/repack.h.
  Q4_0_X16 = 64,
  Q5_0_X16 = 65,
  Q8_0_X16 = 66,
  Q4_K_X16 = 67,
  Q6_K_X16 = 68,
  Q5_K_X16 = 69,
  Q4_1_X16 = 70,
  Q5_1_X16 = 71,
  IQ4_NL_X16 = 72,
  IQ4_XS_X16 = 73,
  MXFP4_X16 = 74,
  F16_X16 = 75,  // F16 rows interleaved for the AMX-BF16 tier (not quantized)
};

inline constexpr uint32_t kDTypeIdLimit = 41;  // GGUF ids are < this
inline constexpr uint32_t kPackedDTypeBase = 64;
inline constexpr uint32_t kPackedDTypeLimit = 76;  // packed ids are in [base, limit)

struct DTypeTraits {
  const char* name;     // GGUF/ggml name: "f32", "q4_K", ...
  int64_t block_size;   // elements per block (1 for plain types)
  size_t type_size;     // bytes per block
  bool is_quantized;
  bool supported;       // folio loads weights of this type (has dequantize and kernels)
};

// Traits for a known GGUF id, nullopt for an id ggml never assigned (packed
// ids are not GGUF ids: nullopt too).
std::optional<DTypeTraits> dtype_traits_for_id(uint32_t id);
// Traits of a GGUF or packed type. A packed type's block_size / type_size are
// those of its source format (bytes per block of one row, on average over a
// panel), so row_size() * rows is its size when rows fill whole panels.
const DTypeTraits& traits(DType t);

// Packed layouts (ids in [kPackedDTypeBase, kPackedDTypeLimit)).
inline bool is_packed(DType t) {
  const auto id = static_cast<uint32_t>(t);
  return id >= kPackedDTypeBase && id < kPackedDTypeLimit;
}
// The GGUF format a packed type holds (Q4_0_X16 -> Q4_0); `t` itself when not packed.
DType packed_source(DType t);

inline const char* dtype_name(DType t) { return traits(t).name; }
inline int64_t block_size(DType t) { return traits(t).block_size; }
inline size_t type_size(DType t) { return traits(t).type_size; }
inline bool is_quantized(DType t) { return traits(t).is_quantized; }

// Bytes of a row of `ne0` elements; ne0 must be a multiple of block_size.
inline size_t row_size(DType t, int64_t ne0) {
  return static_cast<size_t>(ne0 / block_size(t)) * type_size(t);
}

// Validates a raw GGUF type id for a named tensor: unknown id -> DataLoss,
// known but not computed by folio -> "unsupported tensor type T for tensor NAME".
Result<DType> dtype_for_tensor(uint32_t id, std::string_view tensor_name);

// Case-insensitive name -> DType ("q4_k", "Q8_0", "bf16").
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace folio
