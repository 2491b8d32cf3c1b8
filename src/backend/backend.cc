#include "backend/backend.h"

namespace folio {

Backend* route_op(const std::vector<Backend*>& priority, const Op& op) {
  for (Backend* b : priority) {
    if (b != nullptr && b->supports_op(op)) return b;
  }
  return nullptr;
}

Status run_routed(const std::vector<Backend*>& priority, const Op& op) {
  Backend* b = route_op(priority, op);
  if (b == nullptr) return unsupported("no backend supports {}", op.describe());
  return b->run(op);
}

}  // namespace folio
