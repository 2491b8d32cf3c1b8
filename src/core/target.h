// Per-function ISA targets for kernels. Kernel files under avx2/, avx512/ and
// amx/ are compiled with baseline flags; each function that uses wider
// instructions carries one of these attributes. This keeps AVX code out of
// inline functions and templates shared with the rest of the binary (with
// per-file -mavx512f flags the linker may pick an AVX-512 copy of, say, a
// std::vector method for everyone). Lambdas do not inherit the attribute:
// write helpers as static FOLIO_TARGET_* functions instead.
#pragma once

#define FOLIO_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define FOLIO_TARGET_AVX512                                                             \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni," \
                        "avx512bf16")))
#define FOLIO_TARGET_AMX                                                                \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni," \
                        "avx512bf16,amx-tile,amx-int8,amx-bf16")))
