#include "backend/cpu/cpu_buffer_types.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/aligned.h"
#include "quant/repack.h"

namespace folio {

namespace {

size_t plain_bytes(const WeightUse& w) {
  return row_size(w.dtype, w.ne[0]) * static_cast<size_t>(w.ne[1] * w.ne[2] * w.ne[3]);
}

Isa effective_isa(Isa max_isa) {
  return static_cast<Isa>(std::min(static_cast<int>(max_isa), static_cast<int>(active_isa())));
}

bool amx_usable(Isa isa) {
  return isa == Isa::kAmx && cpu_features().amx_int8;
}
// Packed panels run from AVX2 up: the AVX2 panels (vpmaddubsw on half
// panels) read every packed layout, and every AVX-512 CPU has AVX2, FMA and
// F16C (the AVX-512 VNNI panels take over where VNNI is there).
bool panels_usable(Isa isa) {
  const CpuFeatures& f = cpu_features();
  return isa >= Isa::kAvx2 && f.avx2 && f.fma && f.f16c;
}

}  // namespace

size_t PackedBufferType::alignment() const {
  return kDefaultAlignment;
}

Result<std::unique_ptr<Buffer>> PackedBufferType::alloc(size_t size) const {
  auto b = HostBuffer::create(size, this, alignment());
  if (!b.ok()) return b.status();
  return std::unique_ptr<Buffer>(std::move(b).value());
}

bool PackedBufferType::supports_weight(const WeightUse& w) const {
  if (w.consumer != OpKind::kMulMat && w.consumer != OpKind::kMulMatId) return false;
  if (std::find(formats_.begin(), formats_.end(), w.dtype) == formats_.end()) return false;
  if (!quant::packed_type_for(w.dtype).has_value()) return false;
  if (w.ne[0] <= 0 || w.ne[0] % block_size(w.dtype) != 0 || w.ne[1] <= 0) return false;
  for (int i = 2; i < kMaxDims; ++i) {
    if (w.ne[i] <= 0) return false;
  }
  return w.consumer == OpKind::kMulMat || w.ne[3] == 1;
}

size_t PackedBufferType::weight_bytes(const WeightUse& w) const {
  const DType p = *quant::packed_type_for(w.dtype);
  return quant::packed_matrix_bytes(p, w.ne[0], w.ne[1]) * static_cast<size_t>(w.ne[2] * w.ne[3]);
}

Status PackedBufferType::store_weight(const WeightUse& w, const void* src, size_t src_bytes,
                                      void* dst) const {
  if (!supports_weight(w)) {
    return invalid_argument("weight '{}': {} does not hold {} weights for {}", w.name, name_,
                            dtype_name(w.dtype), op_kind_name(w.consumer));
  }
  if (src_bytes != plain_bytes(w)) {
    return invalid_argument("weight '{}': {} bytes given, {} expected for {}", w.name, src_bytes,
                            plain_bytes(w), dtype_name(w.dtype));
  }
  const DType p = *quant::packed_type_for(w.dtype);
  const size_t row = row_size(w.dtype, w.ne[0]);
  const size_t matrix = quant::packed_matrix_bytes(p, w.ne[0], w.ne[1]);
  for (int64_t i = 0; i < w.ne[2] * w.ne[3]; ++i) {
    quant::pack_rows(p, static_cast<const char*>(src) + i * w.ne[1] * row, row, w.ne[0], w.ne[1],
                     static_cast<char*>(dst) + i * matrix);
  }
  return Status();
}

TensorView PackedBufferType::weight_view(const WeightUse& w, void* data) const {
  return quant::packed_view(data, *quant::packed_type_for(w.dtype), w.ne);
}

namespace {

// Every format with a packed layout: each has panels on every tier from
// AVX2 up and AMX tile panels.
std::vector<DType> cpu_packed_formats() {
  return {DType::Q4_0,  DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,  DType::IQ4_NL,
          DType::MXFP4, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};
}

// The formats of the AMX buffer with F16 tiles: those, and F16 (as F16_X16,
// read by the AMX-BF16 kernels of amx/mul_mat_f16_x16.cc) where the CPU has
// AMX-BF16.
std::vector<DType> amx_f16_formats() {
  std::vector<DType> f = cpu_packed_formats();
  if (cpu_features().amx_bf16) f.push_back(DType::F16);
  return f;
}

}  // namespace

bool amx_f16_requested() {
  const char* env = std::getenv("FOLIO_AMX_F16");
  return env == nullptr || std::string_view(env) != "0";
}

const PackedBufferType& amx_buffer_type() {
  static const PackedBufferType kType("AMX", cpu_packed_formats());
  return kType;
}

const PackedBufferType& amx_f16_buffer_type() {
  static const PackedBufferType kType("AMX", amx_f16_formats());
  return kType;
}

const PackedBufferType& repack_buffer_type() {
  static const PackedBufferType kType("CPU_REPACK", cpu_packed_formats());
  return kType;
}

std::vector<const BufferType*> cpu_weight_buffer_types(Isa max_isa, bool repack) {
  const Isa isa = effective_isa(max_isa);
  std::vector<const BufferType*> list;
  if (repack) {
    if (amx_usable(isa)) {
      list.push_back(amx_f16_requested() ? &amx_f16_buffer_type() : &amx_buffer_type());
    } else if (panels_usable(isa)) {
      list.push_back(&repack_buffer_type());
    }
  }
  list.push_back(&host_buffer_type());
  return list;
}

std::string cpu_weight_buffer_note(Isa max_isa, bool repack) {
  std::string s = "weights:";
  bool first = true;
  for (const BufferType* t : cpu_weight_buffer_types(max_isa, repack)) {
    s += (first ? " " : " -> ") + t->name();
    first = false;
  }
  const Isa isa = effective_isa(max_isa);
  const CpuFeatures& f = cpu_features();
  if (!repack) {
    s += " (packed layouts off: --no-repack)";
  } else if (amx_usable(isa) && f.amx_bf16) {
    s += amx_f16_requested()
             ? " (F16 weights on the AMX-BF16 tiles; FOLIO_AMX_F16=0 keeps them plain)"
             : " (F16 weights plain, on the AVX-512 F16 kernel: FOLIO_AMX_F16=0)";
  } else if (!amx_usable(isa)) {
    if (f.amx_denied) {
      s += " (AMX not offered: the OS refused the tile state, arch_prctl ARCH_REQ_XCOMP_PERM)";
    } else if (f.amx_int8) {
      s += fmt::format(" (AMX not offered: ISA limited to {})", isa_name(isa));
    } else {
      s += " (AMX not offered: no AMX-INT8 on this CPU)";
    }
    if (!panels_usable(isa)) s += " (no repacked layouts below AVX2)";
  }
  const char* f16_env = std::getenv("FOLIO_AMX_F16");
  if (f16_env != nullptr && *f16_env != '\0' && std::string_view(f16_env) != "0" &&
      std::string_view(f16_env) != "1") {
    s += fmt::format(
        " (FOLIO_AMX_F16='{}' ignored: 0 keeps F16 weights plain, 1 or unset places "
        "them on the AMX-BF16 tiles)",
        f16_env);
  }
  return s;
}

}  // namespace folio
