// Compute devices besides the CPU, by backend API ("vulkan"). The CLI lists
// them (`folio info`) and opens the one `--device` names; routing never
// looks at these names, only at what each backend selects.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"

namespace folio {

struct DeviceDescription {
  std::string api;     // "vulkan"
  int index = 0;       // within the API
  std::string name;    // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;    // "discrete GPU", "CPU", ...
  std::string driver;  // "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"
  std::string api_version;
  uint64_t memory_bytes = 0;  // device-local memory
  std::string features;       // "subgroup 8, fp16, int8, 16-bit storage"
};

// Device APIs compiled into this binary ("vulkan"), possibly none.
std::vector<std::string> device_apis();

// The devices of `api` this machine has, or why there are none (no loader,
// no driver, not built).
Result<std::vector<DeviceDescription>> list_devices(const std::string& api);

// Opens the device a `--device` value names: "vulkan" (the best device),
// "vulkan:N" (device N of list_devices("vulkan")). "cpu" is not a device.
Result<std::unique_ptr<Backend>> open_device(const std::string& spec);

}  // namespace folio
