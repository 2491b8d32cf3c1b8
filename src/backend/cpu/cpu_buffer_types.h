// Weight buffer types of the CPU backend and their priority list.
//
//   AMX         Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K in the packed x16
//               layouts (quant/repack.h): AMX tile kernels for batches of
//               16+ rows, the AVX-512 VNNI panels (Q4_1: avx2_vnni) on the
//               same bytes for decode; on CPUs with AMX-BF16 also F16
//               mul_mat / mul_mat_id weights as F16_X16 (AMX-BF16 tiles,
//               an AVX-512 rows kernel with their bits for one row).
//   CPU_REPACK  the quantized formats in the same layouts on machines
//               without AMX, for the AVX-512 VNNI panels and the AVX2
//               panels (AVX2 machines repack too).
//   CPU         everything else, mapped from the file as it is.
//
// A packed type accepts a weight only when a kernel of this machine reads
// its layout for the consuming op: mul_mat / mul_mat_id weights of its
// formats. F32 / BF16 tensors (F16 ones but on the AMX type), norms and get_rows tables (token
// embeddings) therefore stay plain. A tied output (output.weight absent,
// token_embd.weight read by mul_mat) is placed on its own: the get_rows use
// stays mapped, the mul_mat use gets a packed copy.
#pragma once

#include <string>
#include <vector>

#include "backend/buffer_type.h"
#include "core/cpu_features.h"

namespace folio {

// A host buffer type holding weights of some GGUF formats in their packed
// layouts. store_weight repacks (lossless); weight_view gives the packed dtype.
class PackedBufferType final : public BufferType {
 public:
  PackedBufferType(std::string name, std::vector<DType> formats)
      : name_(std::move(name)), formats_(std::move(formats)) {}

  std::string name() const override { return name_; }
  size_t alignment() const override;
  bool is_host() const override { return true; }
  Result<std::unique_ptr<Buffer>> alloc(size_t size) const override;
  bool supports_weight(const WeightUse& w) const override;
  size_t weight_bytes(const WeightUse& w) const override;
  Status store_weight(const WeightUse& w, const void* src, size_t src_bytes,
                      void* dst) const override;
  TensorView weight_view(const WeightUse& w, void* data) const override;

  const std::vector<DType>& formats() const { return formats_; }

 private:
  std::string name_;
  std::vector<DType> formats_;  // GGUF formats accepted
};

// The weight placement list for CPU kernels up to `max_isa` (capped by the
// machine: active_isa()): AMX -> CPU where the tiles are granted by the OS,
// else CPU_REPACK -> CPU where panels run (AVX2 + FMA + F16C, or AVX-512
// with VNNI), else CPU. repack = false (--no-repack):
// plain CPU only.
std::vector<const BufferType*> cpu_weight_buffer_types(Isa max_isa, bool repack = true);

// One line on what the list holds and why packed types are missing, for the
// load log: "weights: AMX -> CPU" or "weights: CPU_REPACK -> CPU (AMX not offered:
// the OS refused the tile state)".
std::string cpu_weight_buffer_note(Isa max_isa, bool repack = true);

// Whether F16 matrices go to the AMX-BF16 tiles as F16_X16 (the default;
// FOLIO_AMX_F16=0 in the environment keeps them plain, on the AVX-512 F16
// kernel, whose decode is faster and prefill slower, docs/DESIGN.md). When
// true, the AMX entry of cpu_weight_buffer_types is amx_f16_buffer_type().
bool amx_f16_requested();

// The packed types themselves (tests place single weights through them).
const PackedBufferType& amx_buffer_type();
// The AMX type that also takes F16 mul_mat weights (as F16_X16) where the
// CPU has AMX-BF16.
const PackedBufferType& amx_f16_buffer_type();
// CPU_REPACK: the formats of the AMX type, for the machines without AMX.
const PackedBufferType& repack_buffer_type();

}  // namespace folio
