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

const Kernel* CpuBackend::find(const Op& op) const {
  return cpu_kernels().find(op, max_tier_for(isa_), options_.reference_only);
}

bool CpuBackend::supports_op(const Op& op) const {
  return validate_op(op).ok() && find(op) != nullptr;
}

Status CpuBackend::run(const Op& op) {
  FOLIO_RETURN_IF_ERROR(validate_op(op));
  const Kernel* k = find(op);
  if (k == nullptr) return unsupported("{}: no CPU kernel for {}", name(), op.describe());
  KernelContext ctx;
  ctx.pool = options_.pool;
  return k->run(op, ctx);
}

std::string CpuBackend::kernel_name(const Op& op) const {
  const Kernel* k = find(op);
  return k == nullptr ? std::string("none") : std::string(k->name);
}

const BufferType& CpuBackend::default_buffer_type() const { return host_buffer_type(); }

}  // namespace folio
