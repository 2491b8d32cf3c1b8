// --device and -ngl: which compute device (if any) runs which layers, with
// llama.cpp's meaning of -ngl (the last N layers; more than the model has
// also moves the output head).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "cache/cache_memory.h"
#include "core/status.h"

namespace folio::tools {

struct DeviceChoice {
  std::unique_ptr<Backend> device;  // nullptr: the CPU runs everything
  int offload_layers = 0;           // model::LoadOptions::offload_layers (-1: all and the head)
  std::string note;                 // one line for the log ("" when nothing to say)
};

// device_flag: "auto" (a GPU when -ngl > 0 asks for one and a Vulkan GPU
// exists; never a CPU driver such as lavapipe), "cpu" / "none", "vulkan",
// "vulkan:N" (that device or an error). n_gpu_layers: -1 = all layers when
// a device is used.
Result<DeviceChoice> choose_device(const std::string& device_flag, int n_gpu_layers);

// KV cache storage in `device`'s memory.
cache::CacheAllocator device_cache_allocator(Backend& device);

// The lines `folio info` prints about devices (one per device, or why none).
std::vector<std::string> describe_devices();

}  // namespace folio::tools
