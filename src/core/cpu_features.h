// CPU feature detection (x86: CPUID + XGETBV, and the Linux AMX permission
// request; 64-bit ARM: the kernel's HWCAP bits) and the ISA level that kernel
// dispatch uses. One binary runs on scalar-only, AVX2 and AVX-512 machines
// (x86) or on any ARMv8 machine, with or without the dot-product
// instructions: kernels are chosen from these flags at startup.
#pragma once

#include <string>
#include <vector>

namespace folio {

struct CpuFeatures {
  bool amd = false;  // x86 vendor AuthenticAMD (memory streaming tuned per vendor: decode_streams)
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

  // 64-bit ARM (getauxval(AT_HWCAP / AT_HWCAP2)).
  bool neon = false;     // Advanced SIMD (every ARMv8-A Linux machine)
  bool fp16 = false;     // half-precision arithmetic (FEAT_FP16)
  bool dotprod = false;  // SDOT / UDOT (ARMv8.2+ optional, ARMv8.4 mandatory)
  bool i8mm = false;     // SMMLA / USMMLA (ARMv8.6)
  bool sve = false;

  // 256-bit vpdpbusd / vpdpwssd: AVX-VNNI (VEX) or AVX-512 VNNI with VL (the
  // same operation EVEX-encoded). The avx2_vnni kernels run on either.
  bool vnni256() const { return avx2 && fma && f16c && (avxvnni || (avx512vnni && avx512vl)); }

  std::string to_string() const;
};

// What the hardware and OS offer (cached after the first call).
const CpuFeatures& cpu_features();

// Weight streams a decode mul_mat (one or two activation rows) reads at once
// per thread: 1 on AMD, else 4. AMD's prefetchers (Zen 4) follow one
// contiguous run per thread best, for the packed panels and the float rows
// alike; on the AMX Xeon the kernels were tuned on, one stream per thread
// left the memory system idle. BENCHMARKS.md has the A/B runs.
int decode_streams();

// Kernel ISA tiers. Each architecture has a ladder on which a higher tier
// implies every lower one: scalar < neon < neon_dotprod < neon_i8mm (64-bit ARM),
// scalar < avx2 < avx2_vnni < avx512 < amx (x86). avx2_vnni kernels need
// CpuFeatures::vnni256(), which an AVX-512 CPU without VNNI (Skylake-SP)
// lacks: they check it and leave such ops to the avx2 kernels. The ARM ladder sits numerically below
// the x86 one, so the comparisons and min() written for one ladder give the
// right answer on a machine of the other: an ARM machine is never ">= avx2",
// and a limit naming the other architecture's tier never raises a machine
// above its own (on x86, "neon" selects no SIMD kernel, since none is built).
enum class Isa : int {
  kScalar = 0,
  kNeon = 1,         // ARMv8 Advanced SIMD (FP32 FMA, FP16 conversions)
  kNeonDotprod = 2,  // + SDOT/UDOT
  kNeonI8mm = 3,     // + SMMLA (FEAT_I8MM; the CPU has SDOT too)
  kAvx2 = 4,         // AVX2 + FMA + F16C
  kAvx2Vnni = 5,     // + 256-bit vpdpbusd (AVX-VNNI: Alder Lake and later client chips, Zen 5)
  kAvx512 = 6,       // AVX-512 F/BW/VL/DQ (+VNNI when present)
  kAmx = 7,          // AVX-512 tier + AMX tiles (int8/bf16)
};

const char* isa_name(Isa isa);
bool parse_isa(const std::string& s, Isa* out);

// Highest tier this machine supports.
Isa detected_isa();

// The tiers of top's ladder from scalar up to top, lowest first.
std::vector<Isa> isa_ladder(Isa top);

// Highest tier kernels may use: min(detected, limit). The limit comes from
// `--isa` on the command line or the documented FOLIO_ISA environment
// variable (scalar|neon|neon_dotprod|neon_i8mm|avx2|avx2_vnni|avx512|amx), e.g. to test the scalar path on a big CPU.
Isa active_isa();
void set_isa_limit(Isa limit);

}  // namespace folio
