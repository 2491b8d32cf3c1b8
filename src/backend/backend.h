// Backend: something that runs ops (the CPU today, a GPU later). Routing asks
// supports_op() and picks the first backend in priority order that accepts;
// no backend name ever appears in routing logic.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/op.h"
#include "core/status.h"

namespace folio {

class BufferType;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // Can this backend run `op` with these dtypes / shapes / params?
  virtual bool supports_op(const Op& op) const = 0;
  // Runs the op. Precondition: supports_op(op). Returns an error for invalid
  // ops (validate_op) rather than misbehaving.
  virtual Status run(const Op& op) = 0;
  // Name of the kernel that would run `op` ("ref", "avx2", "avx512", ...);
  // the parity harness uses it to skip variants that fall back to the same
  // kernel.
  virtual std::string kernel_name(const Op& op) const { return name(); }
  // Buffer type for activations / KV memory this backend computes on.
  virtual const BufferType& default_buffer_type() const = 0;
};

// Op routing: the first backend in `priority` whose supports_op accepts `op`,
// or nullptr if none does.
Backend* route_op(const std::vector<Backend*>& priority, const Op& op);

// Runs `op` on the routed backend; kUnsupported if no backend accepts it.
Status run_routed(const std::vector<Backend*>& priority, const Op& op);

}  // namespace folio
