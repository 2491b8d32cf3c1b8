// CPU feature detection (CPUID + XGETBV, and the Linux AMX permission request)
// and the ISA level that kernel dispatch uses. One binary runs on scalar-only,
// AVX2 and AVX-512 machines: kernels are chosen from these flags at startup.
#pragma once

#include <string>

namespace folio {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avxvnni = false;
  bool amx_tile = false;  // also requires the OS to grant the tile state (Linux arch_prctl)
  bool amx_int8 = false;
  bool amx_bf16 = false;
  // The CPU has AMX but the OS refused the tile state (arch_prctl
  // ARCH_REQ_XCOMP_PERM failed): the amx_* flags above are then false.
  bool amx_denied = false;

  std::string to_string() const;
};

// What the hardware and OS offer (cached after the first call).
const CpuFeatures& cpu_features();

// Kernel ISA tiers, ordered: a higher tier implies every lower one.
enum class Isa : int {
  kScalar = 0,
  kAvx2 = 1,     // AVX2 + FMA + F16C
  kAvx512 = 2,   // AVX-512 F/BW/VL/DQ (+VNNI when present)
  kAmx = 3,      // AVX-512 tier + AMX tiles (int8/bf16)
};

const char* isa_name(Isa isa);
bool parse_isa(const std::string& s, Isa* out);

// Highest tier this machine supports.
Isa detected_isa();

// Highest tier kernels may use: min(detected, limit). The limit comes from
// `--isa` on the command line or the documented FOLIO_ISA environment
// variable (scalar|avx2|avx512|amx), e.g. to test the scalar path on a big CPU.
Isa active_isa();
void set_isa_limit(Isa limit);

}  // namespace folio
