// GGUF format constants (GGUF spec, little-endian files only).
//
// File layout: magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count |
// kv_count x (string key, u32 value type, value) |
// tensor_count x (string name, u32 n_dims, n_dims x i64 ne, u32 ggml type,
// u64 offset) | padding to `alignment` | data section. A string is a u64
// byte length and the bytes (no terminator); an array is a u32 element type,
// a u64 count and the elements. Tensor offsets are relative to the data
// section and multiples of the alignment. Version 1 used u32 counts and
// lengths; versions 2 and 3 share this layout (3 added big-endian files,
// which folio does not read).
#pragma once

#include <cstddef>
#include <cstdint>

namespace folio::gguf {

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kMinVersion = 2;
inline constexpr uint32_t kMaxVersion = 3;
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr size_t kDefaultAlignment = 32;
inline constexpr char kAlignmentKey[] = "general.alignment";
inline constexpr uint32_t kMaxTensorDims = 4;
// Arrays of arrays nest at most this deep (a 1-level array has depth 1).
// Real files use depth 1; the limit bounds recursion on hostile input.
inline constexpr int kMaxArrayDepth = 8;

}  // namespace folio::gguf
