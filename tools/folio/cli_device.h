// --device and -ngl: which compute device (if any) runs which layers, with
// llama.cpp's meaning of -ngl (the last N layers; more than the model has
// also moves the output head).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "cache/cache_memory.h"
#include "core/status.h"
#include "model/model.h"

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

// Points `lo` at `device` for the chosen layers (nothing without a device).
void offload_weights(Backend* device, int offload_layers, model::LoadOptions* lo);
// KV cache storage: the device's memory when layers are offloaded, else
// empty (host memory).
cache::CacheAllocator kv_allocator(Backend* device, int offload_layers);

// The lines `folio info` prints about devices (one per device, or why none).
std::vector<std::string> describe_devices();

}  // namespace folio::tools
