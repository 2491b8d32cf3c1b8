// DType -> reference row functions (quant_ref.h), and the checked wrappers
// that turn bad sizes / types from outside into a Status.
#include "quant/quant.h"

#include <limits>

#include "core/check.h"
#include "quant/quant_ref.h"

namespace folio::quant {

namespace {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);

struct RowFns {
  DequantizeFn dequantize = nullptr;
  QuantizeFn quantize = nullptr;
};

// The one list of implemented formats.
RowFns row_fns(DType type) {
  switch (type) {
    case DType::F32:
      return {ref::dequantize_f32, ref::quantize_f32};
    case DType::F16:
      return {ref::dequantize_f16, ref::quantize_f16};
    case DType::BF16:
      return {ref::dequantize_bf16, ref::quantize_bf16};
    case DType::Q4_0:
      return {ref::dequantize_q4_0, ref::quantize_q4_0};
    case DType::Q4_1:
      return {ref::dequantize_q4_1, ref::quantize_q4_1};
    case DType::Q5_0:
      return {ref::dequantize_q5_0, ref::quantize_q5_0};
    case DType::Q5_1:
      return {ref::dequantize_q5_1, ref::quantize_q5_1};
    case DType::Q8_0:
      return {ref::dequantize_q8_0, ref::quantize_q8_0};
    case DType::Q8_1:
      return {ref::dequantize_q8_1, ref::quantize_q8_1};
    case DType::Q2_K:
      return {ref::dequantize_q2_k, nullptr};
    case DType::Q3_K:
      return {ref::dequantize_q3_k, nullptr};
    case DType::Q4_K:
      return {ref::dequantize_q4_k, ref::quantize_q4_k};
    case DType::Q5_K:
      return {ref::dequantize_q5_k, ref::quantize_q5_k};
    case DType::Q6_K:
      return {ref::dequantize_q6_k, ref::quantize_q6_k};
    case DType::Q8_K:
      return {ref::dequantize_q8_k, ref::quantize_q8_k};
    case DType::IQ4_NL:
      return {ref::dequantize_iq4_nl, nullptr};
    case DType::IQ4_XS:
      return {ref::dequantize_iq4_xs, nullptr};
    case DType::MXFP4:
      return {ref::dequantize_mxfp4, ref::quantize_mxfp4};
    case DType::NVFP4:
      return {ref::dequantize_nvfp4, ref::quantize_nvfp4};
    default:
      return {};
  }
}

// Validates a type id and an element count from outside; on success *bytes
// is the packed size of n elements.
Status check_row(const char* what, DType type, int64_t n, size_t* bytes) {
  const auto t = dtype_traits_for_id(static_cast<uint32_t>(type));
  if (!t) return invalid_argument("{}: invalid type id {}", what, static_cast<uint32_t>(type));
  if (n < 0) return invalid_argument("{} {}: negative element count {}", what, t->name, n);
  if (n % t->block_size != 0) {
    return invalid_argument("{} {}: {} elements is not a multiple of the block size {}", what,
                            t->name, n, t->block_size);
  }
  const uint64_t blocks = static_cast<uint64_t>(n / t->block_size);
  if (blocks > std::numeric_limits<size_t>::max() / t->type_size) {
    return out_of_range("{} {}: {} elements overflow the byte size", what, t->name, n);
  }
  *bytes = static_cast<size_t>(blocks) * t->type_size;
  return Status();
}

}  // namespace

bool has_dequantize(DType type) {
  return dtype_traits_for_id(static_cast<uint32_t>(type)) && row_fns(type).dequantize != nullptr;
}

bool has_quantize(DType type) {
  return dtype_traits_for_id(static_cast<uint32_t>(type)) && row_fns(type).quantize != nullptr;
}

void dequantize_row_ref(DType type, const void* src, float* dst, int64_t n) {
  const DequantizeFn fn = row_fns(type).dequantize;
  FOLIO_CHECK_MSG(fn != nullptr, "no dequantize for type {}", static_cast<uint32_t>(type));
  FOLIO_CHECK_MSG(n >= 0 && n % block_size(type) == 0, "{} elements for {}", n, dtype_name(type));
  fn(src, dst, n);
}

void quantize_row_ref(DType type, const float* src, void* dst, int64_t n) {
  const QuantizeFn fn = row_fns(type).quantize;
  FOLIO_CHECK_MSG(fn != nullptr, "no quantize for type {}", static_cast<uint32_t>(type));
  FOLIO_CHECK_MSG(n >= 0 && n % block_size(type) == 0, "{} elements for {}", n, dtype_name(type));
  fn(src, dst, n);
}

Status dequantize(DType type, const void* src, size_t src_bytes, float* dst, int64_t n) {
  size_t need = 0;
  FOLIO_RETURN_IF_ERROR(check_row("dequantize", type, n, &need));
  if (!has_dequantize(type))
    return unsupported("dequantize: type {} is not supported", dtype_name(type));
  if (src_bytes != need) {
    return invalid_argument("dequantize {}: {} elements take {} bytes, got {}", dtype_name(type), n,
                            need, src_bytes);
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return invalid_argument("dequantize {}: null buffer", dtype_name(type));
  }
  if (n > 0) row_fns(type).dequantize(src, dst, n);
  return Status();
}

Status quantize(DType type, const float* src, int64_t n, void* dst, size_t dst_bytes) {
  size_t need = 0;
  FOLIO_RETURN_IF_ERROR(check_row("quantize", type, n, &need));
  if (!has_quantize(type))
    return unsupported("quantize: type {} is not supported", dtype_name(type));
  if (dst_bytes != need) {
    return invalid_argument("quantize {}: {} elements take {} bytes, got {}", dtype_name(type), n,
                            need, dst_bytes);
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return invalid_argument("quantize {}: null buffer", dtype_name(type));
  }
  if (n > 0) row_fns(type).quantize(src, dst, n);
  return Status();
}

}  // namespace folio::quant
