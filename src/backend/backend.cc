#include "backend/backend.h"

#include <cstring>

#include "backend/device_memory.h"

namespace folio {

bool Backend::can_access(const void* p) const { return is_host_address(p); }

Status Backend::write(void* dst, const void* host_src, size_t n) {
  if (n != 0) std::memcpy(dst, host_src, n);
  return Status();
}

Status Backend::read(void* host_dst, const void* src, size_t n) {
  if (n != 0) std::memcpy(host_dst, src, n);
  return Status();
}

Status Backend::copy(void* dst, const void* src, size_t n) {
  if (n != 0) std::memmove(dst, src, n);
  return Status();
}

bool Backend::supports_op(const Op& op) const {
  return validate_op(op).ok() && select_kernel(op) != nullptr;
}

Status Backend::run(const Op& op) {
  FOLIO_RETURN_IF_ERROR(validate_op(op));
  const KernelHandle k = select_kernel(op);
  if (k == nullptr) return unsupported("{}: no kernel for {}", name(), op.describe());
  return run_kernel(k, op);
}

std::string Backend::kernel_name(const Op& op) const {
  const KernelHandle k = select_kernel(op);
  return k == nullptr ? std::string("none") : kernel_name_of(k);
}

RoutedOp route_op(const std::vector<Backend*>& priority, const Op& op) {
  if (!validate_op(op).ok()) return {};
  for (Backend* b : priority) {
    if (b == nullptr) continue;
    if (const KernelHandle k = b->select_kernel(op); k != nullptr) return {b, k};
  }
  return {};
}

Status run_route(const RoutedOp& route, const Op& op) {
  if (!route) return unsupported("no backend supports {}", op.describe());
  return route.backend->run_kernel(route.kernel, op);
}

Status run_routed(const std::vector<Backend*>& priority, const Op& op) {
  return run_route(route_op(priority, op), op);
}

}  // namespace folio
