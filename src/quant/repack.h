// Packed ("repacked") weight layouts: a weight matrix [K, N] is cut into
// panels of 16 consecutive rows (the last panel padded with zero rows), and
// each panel stores, block by block along K, the 16 rows' quants interleaved
// in the VNNI order that both AVX-512 VNNI (vpdpbusd, one zmm lane per row)
// and AMX (the B operand of TDPBSUD) consume directly:
//
//   codes of one 32-element group: 8 "VNNI rows" of 64 bytes; byte
//   [r][4n + j] is the unsigned code of panel row n, element 4r + j.
//
// Codes are the format's unsigned integers (value = scale * (code - offset)
// or the K-quant equivalent); 4-bit codes are stored two per byte (group
// byte i holds code i in its low nibble and code i + 256 in its high
// nibble: VNNI rows 0-3 low, rows 4-7 high), extra high bits in bit planes.
// Scales follow per block as 16 values (one per panel row).
//
// Every layout is lossless: unpack_rows() gives back the GGUF bytes exactly,
// so the reference kernel can read a packed weight by unpacking it, and
// packed sizes equal the GGUF sizes (Q4_K_X16, Q5_K_X16: +4 bytes per
// super-block and row for unpacked 6-bit scales and mins).
//
// Per panel, for each block (legacy) or super-block (K-quants) along K:
//   Q4_0_X16  [nibbles 256][f16 d x 16]                               288 B / 32
//   Q5_0_X16  [nibbles 256][bit 4 plane 64][f16 d x 16]               352 B / 32
//   Q8_0_X16  [codes q + 128: 512][f16 d x 16]                        544 B / 32
//   Q4_1_X16  [nibbles 256][f16 d x 16][f16 m x 16]                   320 B / 32
//   Q5_1_X16  [nibbles 256][bit 4 plane 64][f16 d x 16][f16 m x 16]   384 B / 32
//   IQ4_NL_X16 [nibbles 256][f16 d x 16]                              288 B / 32
//   MXFP4_X16 [nibbles 256][u8 e (E8M0) x 16]                         272 B / 32
//   Q4_K_X16  [f16 d x 16][f16 dmin x 16][u8 scale [8][16]]
//             [u8 min [4][16][2] (mins 2i, 2i+1 of a row side by side)]
//             [8 groups x nibbles 256]                                2368 B / 256
//   Q5_K_X16  [f16 d x 16][f16 dmin x 16][u8 scale [8][16]]
//             [u8 min [4][16][2]]
//             [8 groups x (nibbles 256, bit 4 plane 64)]              2880 B / 256
//   Q6_K_X16  [f16 d x 16][i8 scale [16][16]]
//             [8 groups x (nibbles 256, bits 4-5 plane 128)]          3360 B / 256
//   IQ4_XS_X16 [f16 d x 16][i8 scale - 32 [8][16]]
//             [8 groups x nibbles 256]                                2208 B / 256
//   F16_X16   per step of 32 elements: [16 pairs x 64 bytes], pair q's
//             dword i = row i's F16 elements 2q, 2q + 1 of the step    1024 B / 32
// F16_X16 holds F16 weights for the AMX-BF16 tier (amx/mul_mat_f16_x16.cc):
// a pair's 64 bytes are one vector of the 16 rows' pairs (the VNNI row of a
// B tile once split into BF16 parts), so its kernels read them with no
// transpose. K is padded to a multiple of 32 with zeros (F16 rows may have
// any length; the padding is the only size difference from the F16 bytes).
// IQ4_NL_X16 and IQ4_XS_X16 codes are the 4-bit indices into kIQ4NLValues
// (quant/blocks.h); IQ4_XS_X16 stores each row's 6-bit group scales
// unpacked, minus 32 (+2 bytes per super-block and row). MXFP4_X16 codes
// index kFP4Values, its scales are the GGUF E8M0 bytes.
// Bit planes: Q5_0, Q5_1 and Q5_K (per group) bit i of the plane = bit 4 of code
// i (i < 512, VNNI order: plane bytes 8r..8r+7 are the byte mask of VNNI
// row r); Q6_K plane byte i bits 2f, 2f+1 = bits 4, 5 of code i + 128 f.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "quant/blocks.h"
#include "tensor/dtype.h"
#include "tensor/tensor_view.h"

namespace folio::quant {

inline constexpr int kPanelRows = 16;

// The packed type for a GGUF format (nullopt: no layout).
std::optional<DType> packed_type_for(DType source);

// Legacy (32-element block) layouts: bytes of one block's codes and of a
// whole panel block (codes + 16 f16 scales).
constexpr size_t x16_code_bytes(DType packed) {
  return packed == DType::Q4_0_X16 || packed == DType::Q4_1_X16 || packed == DType::IQ4_NL_X16 ||
                 packed == DType::MXFP4_X16
             ? 256
         : packed == DType::Q5_0_X16 || packed == DType::Q5_1_X16 ? 320
                                                                  : 512;
}
// Does the layout store a minimum per row and block (value = d * code + m)?
constexpr bool x16_has_min(DType packed) {
  return packed == DType::Q4_1_X16 || packed == DType::Q5_1_X16;
}
// Do the layout's codes index 16 signed levels (IQ4_NL_X16, MXFP4_X16)?
// A panel tests this, not x16_levels(packed) != nullptr, which GCC does not
// take as a constant expression under UBSan.
constexpr bool x16_has_levels(DType packed) {
  return packed == DType::IQ4_NL_X16 || packed == DType::MXFP4_X16;
}
// Those levels (kIQ4NLValues, kFP4Values), else nullptr.
constexpr const int8_t* x16_levels(DType packed) {
  return packed == DType::IQ4_NL_X16  ? kIQ4NLValues
         : packed == DType::MXFP4_X16 ? kFP4Values
                                      : nullptr;
}
// Bytes of the 16 scales (f16; MXFP4_X16: E8M0 bytes) and, for Q4_1_X16 and
// Q5_1_X16, the 16 f16 minimums that follow them.
constexpr size_t x16_scale_bytes(DType packed) {
  return packed == DType::MXFP4_X16 ? kPanelRows : 2 * kPanelRows * (x16_has_min(packed) ? 2 : 1);
}
constexpr size_t x16_block_bytes(DType packed) {
  return x16_code_bytes(packed) + x16_scale_bytes(packed);
}

// Q4_K_X16 super-block parts (byte offsets inside a panel super-block).
inline constexpr size_t kQ4KxD = 0, kQ4KxDmin = 32, kQ4KxScales = 64, kQ4KxMins = 192,
                        kQ4KxCodes = 320, kQ4KxBytes = 2368;
// Q5_K_X16 super-block parts: Q4_K_X16's head, then groups of nibbles + plane.
inline constexpr size_t kQ5KxD = 0, kQ5KxDmin = 32, kQ5KxScales = 64, kQ5KxMins = 192,
                        kQ5KxCodes = 320, kQ5KxGroupBytes = 320, kQ5KxBytes = 2880;
// Q6_K_X16 super-block parts.
inline constexpr size_t kQ6KxD = 0, kQ6KxScales = 32, kQ6KxCodes = 288, kQ6KxGroupBytes = 384,
                        kQ6KxBytes = 3360;
// IQ4_XS_X16 super-block parts.
inline constexpr size_t kIQ4XSxD = 0, kIQ4XSxScales = 32, kIQ4XSxCodes = 160, kIQ4XSxBytes = 2208;

// F16_X16: bytes of one step (32 elements of K) of a panel.
inline constexpr size_t kF16xStepBytes = 1024;

// Bytes of one panel of `k` elements per row.
size_t packed_panel_bytes(DType packed, int64_t k);
// Bytes of a [k, n] matrix: ceil(n / 16) panels.
size_t packed_matrix_bytes(DType packed, int64_t k, int64_t n);

// A view of packed matrices [k, n, ne2, ne3] at data: nb[0], nb[1] nominal
// (type_size, row_size: rows are not addressable on their own), nb[2] one
// whole matrix of ceil(n / 16) panels, nb[3] = nb[2] * ne2.
TensorView packed_view(void* data, DType packed, const std::array<int64_t, kMaxDims>& ne);
// Is `t` shaped as packed_view() makes it (what packed kernels rely on)?
bool is_packed_view(const TensorView& t);

// Packs n rows of the source format (row r at src + r * src_stride, k
// elements each) into dst (packed_matrix_bytes bytes). CHECKs the type and k.
void pack_rows(DType packed, const void* src, size_t src_stride, int64_t k, int64_t n, void* dst);

// Writes row `row` of a packed [k, *] matrix back in its GGUF format
// (row_size(packed_source(packed), k) bytes at dst).
void unpack_row(DType packed, const void* matrix, int64_t k, int64_t row, void* dst);

}  // namespace folio::quant
