#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define FOLIO_X86 1
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define FOLIO_ARM64_LINUX 1
#endif

namespace folio {

namespace {

#if FOLIO_X86
void cpuid(unsigned leaf, unsigned subleaf, unsigned r[4]) {
  __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
}

unsigned long long xgetbv0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

bool request_amx_permission() {
#if defined(__linux__)
  // ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18.
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
  return false;
#endif
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if FOLIO_X86
  unsigned r[4];
  cpuid(0, 0, r);
  unsigned max_leaf = r[0];
  f.amd = r[1] == 0x68747541 && r[3] == 0x69746e65 && r[2] == 0x444d4163;  // "AuthenticAMD"
  if (max_leaf < 1) return f;
  cpuid(1, 0, r);
  const bool osxsave = (r[2] >> 27) & 1;
  f.sse42 = (r[2] >> 20) & 1;
  f.fma = (r[2] >> 12) & 1;
  f.f16c = (r[2] >> 29) & 1;
  const bool avx_hw = (r[2] >> 28) & 1;
  unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;
  const bool amx_os = (xcr0 & 0x60000) == 0x60000;
  f.avx = avx_hw && ymm_os;
  if (!f.avx) f.fma = f.f16c = false;
  if (max_leaf >= 7) {
    cpuid(7, 0, r);
    f.avx2 = f.avx && ((r[1] >> 5) & 1);
    f.avx512f = zmm_os && ((r[1] >> 16) & 1);
    f.avx512dq = f.avx512f && ((r[1] >> 17) & 1);
    f.avx512bw = f.avx512f && ((r[1] >> 30) & 1);
    f.avx512vl = f.avx512f && ((r[1] >> 31) & 1);
    f.avx512vnni = f.avx512f && ((r[2] >> 11) & 1);
    f.amx_bf16 = amx_os && ((r[3] >> 22) & 1);
    f.amx_tile = amx_os && ((r[3] >> 24) & 1);
    f.amx_int8 = amx_os && ((r[3] >> 25) & 1);
    cpuid(7, 1, r);
    f.avxvnni = f.avx && ((r[0] >> 4) & 1);
    f.avx512bf16 = f.avx512f && ((r[0] >> 5) & 1);
  }
  if (f.amx_tile && !request_amx_permission()) {
    f.amx_tile = f.amx_int8 = f.amx_bf16 = false;
    f.amx_denied = true;
  }
#endif
#if FOLIO_ARM64_LINUX
  // Bit numbers from the Linux arm64 uapi (asm/hwcap.h), spelled out so the
  // build does not depend on the kernel headers' age.
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  f.neon = (hw >> 1) & 1;                     // HWCAP_ASIMD
  f.fp16 = ((hw >> 9) & 1) && ((hw >> 10) & 1);  // HWCAP_FPHP, HWCAP_ASIMDHP
  f.dotprod = (hw >> 20) & 1;                 // HWCAP_ASIMDDP
  f.sve = (hw >> 22) & 1;                     // HWCAP_SVE
  f.i8mm = (hw2 >> 13) & 1;                   // HWCAP2_I8MM
#elif defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is part of every AArch64 profile used here
#endif
  return f;
}

Isa g_limit = Isa::kAmx;  // the top of both ladders: no limit
bool g_limit_from_env_done = false;

void apply_env_limit() {
  if (g_limit_from_env_done) return;
  g_limit_from_env_done = true;
  if (const char* e = std::getenv("FOLIO_ISA")) {
    Isa isa;
    if (parse_isa(e, &isa)) {
      g_limit = isa;
    } else {
      std::fprintf(stderr, "folio: ignoring FOLIO_ISA=%s (expected scalar|neon|neon_dotprod|neon_i8mm|avx2|avx2_vnni|avx512|amx)\n", e);
    }
  }
}

}  // namespace

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(amd, "AMD");
  add(sse42, "SSE4.2");
  add(avx, "AVX");
  add(avx2, "AVX2");
  add(fma, "FMA");
  add(f16c, "F16C");
  add(avx512f, "AVX512F");
  add(avx512bw, "AVX512BW");
  add(avx512vl, "AVX512VL");
  add(avx512dq, "AVX512DQ");
  add(avx512vnni, "AVX512_VNNI");
  add(avx512bf16, "AVX512_BF16");
  add(avxvnni, "AVX_VNNI");
  add(amx_tile, "AMX_TILE");
  add(amx_int8, "AMX_INT8");
  add(amx_bf16, "AMX_BF16");
  add(neon, "NEON");
  add(fp16, "FP16");
  add(dotprod, "DOTPROD");
  add(i8mm, "I8MM");
  add(sve, "SVE");
  return s.empty() ? std::string("none") : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

int decode_streams() {
  return cpu_features().amd ? 1 : 4;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kNeon: return "neon";
    case Isa::kNeonDotprod: return "neon_dotprod";
    case Isa::kNeonI8mm: return "neon_i8mm";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx2Vnni: return "avx2_vnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

bool parse_isa(const std::string& s, Isa* out) {
  for (Isa isa : {Isa::kScalar, Isa::kNeon, Isa::kNeonDotprod, Isa::kNeonI8mm, Isa::kAvx2,
                  Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx}) {
    if (s == isa_name(isa)) {
      *out = isa;
      return true;
    }
  }
  return false;
}

Isa detected_isa() {
  const CpuFeatures& f = cpu_features();
#if defined(__aarch64__)
  if (!f.neon) return Isa::kScalar;
  if (!f.dotprod) return Isa::kNeon;
  return f.i8mm ? Isa::kNeonI8mm : Isa::kNeonDotprod;
#endif
  if (!(f.avx2 && f.fma && f.f16c)) return Isa::kScalar;
  if (!(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) {
    return f.vnni256() ? Isa::kAvx2Vnni : Isa::kAvx2;
  }
  if (!(f.amx_tile && f.amx_int8)) return Isa::kAvx512;
  return Isa::kAmx;
}

std::vector<Isa> isa_ladder(Isa top) {
  std::vector<Isa> v{Isa::kScalar};
  auto is_arm = [](Isa i) {
    return i == Isa::kNeon || i == Isa::kNeonDotprod || i == Isa::kNeonI8mm;
  };
  const bool arm = is_arm(top);
  for (Isa isa :
       {Isa::kNeon, Isa::kNeonDotprod, Isa::kNeonI8mm, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512,
        Isa::kAmx}) {
    const bool isa_arm = is_arm(isa);
    if (isa_arm == arm && isa <= top) v.push_back(isa);
  }
  return v;
}

Isa active_isa() {
  apply_env_limit();
  Isa d = detected_isa();
  return static_cast<int>(g_limit) < static_cast<int>(d) ? g_limit : d;
}

void set_isa_limit(Isa limit) {
  g_limit_from_env_done = true;
  g_limit = limit;
}

}  // namespace folio
