// The kernel contract of the parity cases: for every case, the kernel each
// CPU tier and the Vulkan device is expected to select (its name as the
// backend's kernel_name_of reports it), or that the device declines it. A
// backend that selects another kernel, or declines an op it is expected to
// take, fails the case (run_test). The expectations live in one file,
// expected_kernels.cc: rules per op kind (dtypes, params, shapes) listing the
// kernels an op has per tier, and per-case overrides where a case is meant
// to leave a kernel (a stride or a size a kernel does not take).
//
// The tier ladder: a tier without a kernel of its own for the op selects the
// next lower tier's (avx512 -> avx2_vnni -> avx2 -> scalar -> ref on x86,
// neon_i8mm -> neon_dotprod -> neon -> scalar -> ref on 64-bit ARM), so the
// rules only list the tiers that have a kernel.
#pragma once

#include <string>
#include <vector>

#include "backend/cpu/kernel.h"

namespace folio::parity {

class OpCase;

// A CPU feature a kernel checks beyond its tier's ISA: on a machine without
// it the kernel declines and the ladder goes on down.
enum class Need {
  kNone,
  kAvx512Vnni,  // the AVX-512 integer dot tiles (Skylake-SP has AVX-512 without it)
  kVnni256,     // 256-bit vpdpbusd: AVX-VNNI, or AVX-512 VNNI + VL
  kAmxInt8,     // AMX int8 tiles (granted by the OS)
  kAmxBf16,     // AMX bf16 tiles (granted by the OS)
};

bool need_met(Need need);  // on this machine
const char* need_name(Need need);

// One kernel an op has at one tier.
struct KernelAt {
  KernelTier tier;
  std::string name;
  Need need = Need::kNone;
};

// What the Vulkan device is expected to do with an op it declines.
inline constexpr const char* kDeclined = "declined";

struct Expectation {
  std::vector<KernelAt> cpu;  // the op's kernels by tier (tier kRef always there)
  std::string vulkan;         // "vulkan.<kernel>", or kDeclined
  // On a device with integer dot products, where that differs: the int8
  // path's kernel (a device without them lists it as not exercised).
  std::string vulkan_int_dot;
};

// The Vulkan device's expected kernel, by whether it has integer dot products.
std::string expected_vulkan_kernel(const Expectation& e, bool int_dot);

// The rules and the case's overrides, evaluated for `c`.
Expectation expected_kernels(const OpCase& c);

// The kernel `tier` selects by the ladder: the highest-tier entry at or
// below `tier`, of tier's architecture (ref and scalar belong to both),
// whose need this machine meets. Tier kRef: the reference kernel only.
std::string expected_cpu_kernel(const Expectation& e, KernelTier tier);

const char* kernel_tier_name(KernelTier tier);

}  // namespace folio::parity
