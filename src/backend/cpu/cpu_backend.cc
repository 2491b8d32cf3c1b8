#include "backend/cpu/cpu_backend.h"

#include <algorithm>

#include "backend/buffer_type.h"

namespace folio {

CpuBackend::CpuBackend(CpuBackendOptions options)
    : options_(options),
      isa_(static_cast<Isa>(std::min(static_cast<int>(options.max_isa), static_cast<int>(active_isa())))) {}

std::string CpuBackend::name() const {
  return options_.reference_only ? "cpu-ref" : std::string("cpu-") + isa_name(isa_);
}

KernelHandle CpuBackend::select_kernel(const Op& op) const {
  return cpu_kernels().find(op, max_tier_for(isa_), options_.reference_only);
}

Status CpuBackend::run_kernel(KernelHandle kernel, const Op& op) {
  KernelContext ctx;
  ctx.pool = options_.pool;
  return static_cast<const Kernel*>(kernel)->run(op, ctx);
}

std::string CpuBackend::kernel_name_of(KernelHandle kernel) const {
  return static_cast<const Kernel*>(kernel)->name;
}

const BufferType& CpuBackend::default_buffer_type() const { return host_buffer_type(); }

}  // namespace folio
