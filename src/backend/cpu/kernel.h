// CPU kernels: each op kind has a scalar reference kernel (tier kRef) and may
// have faster ones at higher tiers. A kernel declares which ops it accepts
// (dtypes, shapes, params) through `supports`; the CPU backend picks the
// highest tier the machine (and the ISA limit) allows whose `supports` says
// yes, so every op always has at least the reference to fall back on. Within
// one tier the first kernel registered whose `supports` says yes wins: a
// kernel for a narrower case (e.g. gated_delta_net's chunked form, only for
// long sequences) is registered before the general kernel of its tier.
#pragma once

#include <vector>

#include "backend/op.h"
#include "core/cpu_features.h"
#include "core/status.h"

namespace folio {

class ThreadPool;

struct KernelContext {
  ThreadPool* pool = nullptr;  // nullptr: run on the calling thread only
};

enum class KernelTier : int {
  kRef = 0,     // scalar reference: obviously correct, the parity baseline
  kScalar = 1,  // portable but optimised (tiling, blocking), no intrinsics
  // One architecture's tiers are built into a binary (64-bit ARM: neon/;
  // x86: avx2/, avx512/, amx/), ordered like Isa.
  kNeon = 2,
  kNeonDotprod = 3,
  kNeonI8mm = 4,
  kAvx2 = 5,
  kAvx2Vnni = 6,
  kAvx512 = 7,
  kAmx = 8,
};

// Highest kernel tier allowed for an ISA tier.
KernelTier max_tier_for(Isa isa);

using KernelFn = Status (*)(const Op& op, const KernelContext& ctx);
using KernelSupportsFn = bool (*)(const Op& op);

struct Kernel {
  OpKind kind;
  KernelTier tier;
  const char* name;           // e.g. "mul_mat.q8_0.avx512"
  KernelSupportsFn supports;  // nullptr: accepts every valid op of `kind`
  KernelFn run;
  // Reads inputs in a packed layout (is_packed dtypes, quant/repack.h). An op
  // with a packed input only goes to such kernels, and they only get those
  // ops: no other kernel ever reads packed bytes as a plain format.
  bool reads_packed = false;
};

// Does any input or output of `op` have a packed dtype?
bool op_has_packed(const Op& op);

class KernelTable {
 public:
  void add(const Kernel& k) { kernels_.push_back(k); }
  // The best kernel for `op` with tier <= max_tier (ref_only: tier kRef only).
  const Kernel* find(const Op& op, KernelTier max_tier, bool ref_only) const;
  const std::vector<Kernel>& all() const { return kernels_; }

 private:
  std::vector<Kernel> kernels_;
};

// The process-wide table, filled once from the register_* functions below.
const KernelTable& cpu_kernels();

// Each group of kernels registers itself here (one function per folder /
// family, called by cpu_kernels()).
void register_ref_kernels_basic(KernelTable& t);      // ref/: get_rows ... argsort
void register_ref_kernels_attention(KernelTable& t);  // ref/: flash_attn, sdpa
void register_ref_kernels_recurrent(KernelTable& t);  // ref/: ssm_conv, gated_delta_net
void register_ref_kernels_cache(KernelTable& t);      // ref/: set_rows
void register_ref_kernels_fused(KernelTable& t);      // ref/: fused *_update decode ops
void register_scalar_kernels(KernelTable& t);         // drivers/ (portable optimised tier)
void register_avx2_kernels(KernelTable& t);           // avx2/
void register_avx512_kernels(KernelTable& t);         // avx512/
void register_amx_kernels(KernelTable& t);            // amx/ on plain weights (BF16)
void register_neon_kernels(KernelTable& t);           // neon/ (64-bit ARM)
void register_packed_kernels(KernelTable& t);         // packed/, avx512/packed_*, amx/:
                                                      // kernels on packed weight layouts

}  // namespace folio
