// The CPU backend: runs every op with the best CPU kernel allowed by its ISA
// limit, falling back to the scalar reference. Instances with different
// limits (and a reference-only instance) are what the parity harness
// compares.
#pragma once

#include <string>

#include "backend/backend.h"
#include "backend/cpu/kernel.h"

namespace folio {

struct CpuBackendOptions {
  Isa max_isa = Isa::kAmx;       // capped by what the machine supports (active_isa())
  bool reference_only = false;   // only tier-kRef kernels: the parity baseline
  ThreadPool* pool = nullptr;    // threads for kernels that parallelise
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options = {});

  std::string name() const override;
  // Handles are `const Kernel*` into cpu_kernels().
  KernelHandle select_kernel(const Op& op) const override;
  Status run_kernel(KernelHandle kernel, const Op& op) override;
  std::string kernel_name_of(KernelHandle kernel) const override;
  const BufferType& default_buffer_type() const override;

  Isa isa() const { return isa_; }

 private:
  CpuBackendOptions options_;
  Isa isa_;  // effective ISA: min(options.max_isa, active_isa())
};

}  // namespace folio
