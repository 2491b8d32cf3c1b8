// Per-format quantize / dequantize, scalar reference. These are the
// definitions every optimised kernel is tested against, and they agree byte
// for byte with the gguf package's `gguf.quants` (tests/quant).
//
// All functions work on whole rows: `n` is a multiple of block_size(type).
// Per-format functions and block structs: quant_ref.h, blocks.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "tensor/dtype.h"

namespace folio::quant {

// True for every DType with traits(t).supported (F32, F16, BF16, Q4_0 ... IQ4_XS,
// MXFP4, NVFP4), plus the activation format Q8_1.
bool has_dequantize(DType type);
// True where quantize_row_ref is implemented: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q8_1, Q4_K, Q5_K, Q6_K, Q8_K, MXFP4, NVFP4 (the list is row_fns()
// in quant.cc).
// Q2_K, Q3_K, IQ4_NL and IQ4_XS are dequantize-only.
bool has_quantize(DType type);

// src: n/block_size(type) blocks of `type`; dst: n floats.
void dequantize_row_ref(DType type, const void* src, float* dst, int64_t n);

// src: n floats; dst: row_size(type, n) bytes. CHECKs has_quantize(type).
void quantize_row_ref(DType type, const float* src, void* dst, int64_t n);

// Checked wrappers for input from outside (CLI, files): errors instead of CHECKs.
// InvalidArgument for an unknown type id, a negative count, a count that is not
// a multiple of the block size, a byte count != row_size(type, n) or a null
// buffer; Unsupported for a type without that direction. n == 0 is a no-op.
Status dequantize(DType type, const void* src, size_t src_bytes, float* dst, int64_t n);
Status quantize(DType type, const float* src, int64_t n, void* dst, size_t dst_bytes);

}  // namespace folio::quant
