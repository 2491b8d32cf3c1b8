#include "cli_device.h"

#include <fmt/format.h>

#include "backend/buffer_type.h"
#include "backend/devices.h"

namespace folio::tools {

namespace {

// The first GPU (not a CPU driver) the Vulkan loader reports, or -1.
int first_gpu() {
  Result<std::vector<DeviceDescription>> devs = list_devices("vulkan");
  if (!devs.ok()) return -1;
  for (const DeviceDescription& d : *devs) {
    if (d.type == "discrete GPU" || d.type == "integrated GPU" || d.type == "virtual GPU") return d.index;
  }
  return -1;
}

}  // namespace

Result<DeviceChoice> choose_device(const std::string& flag, int n_gpu_layers) {
  DeviceChoice c;
  if (n_gpu_layers < -1) return invalid_argument("-ngl {}: expected -1 (all) or a count", n_gpu_layers);
  if (flag == "cpu" || flag == "none") {
    if (n_gpu_layers > 0) c.note = fmt::format("-ngl {}: --device {}: every layer runs on the CPU", n_gpu_layers, flag);
    return c;
  }
  std::string spec = flag;
  if (flag == "auto") {
    if (n_gpu_layers <= 0) return c;
    const int gpu = first_gpu();
    if (gpu < 0) {
      Result<std::vector<DeviceDescription>> devs = list_devices("vulkan");
      c.note = fmt::format(
          "-ngl {}: no GPU found ({}); every layer runs on the CPU (--device vulkan runs on a "
          "CPU Vulkan driver such as lavapipe, for testing)",
          n_gpu_layers,
          devs.ok() ? fmt::format("Vulkan devices: {}", devs->empty() ? std::string("none")
                                                                      : devs->front().name)
                    : devs.status().message());
      return c;
    }
    spec = fmt::format("vulkan:{}", gpu);
  }
  Result<std::unique_ptr<Backend>> dev = open_device(spec);
  if (!dev.ok()) return dev.status().with_context(fmt::format("--device {}", flag));
  c.device = std::move(dev).value();
  c.offload_layers = n_gpu_layers;
  return c;
}

void offload_weights(Backend* device, int offload_layers, model::LoadOptions* lo) {
  if (device == nullptr) return;
  lo->offload_type = &device->default_buffer_type();
  lo->offload_layers = offload_layers;
}

cache::CacheAllocator kv_allocator(Backend* device, int offload_layers) {
  if (device == nullptr || offload_layers == 0) return {};
  const BufferType* type = &device->default_buffer_type();
  return [type](size_t bytes) { return type->alloc(bytes); };
}

std::vector<std::string> describe_devices() {
  std::vector<std::string> lines;
  const std::vector<std::string> apis = device_apis();
  if (apis.empty()) {
    lines.push_back("devices: none (built without a device backend)");
    return lines;
  }
  for (const std::string& api : apis) {
    Result<std::vector<DeviceDescription>> devs = list_devices(api);
    if (!devs.ok()) {
      lines.push_back(fmt::format("{}: no device ({})", api, devs.status().message()));
      continue;
    }
    if (devs->empty()) lines.push_back(fmt::format("{}: no device", api));
    for (const DeviceDescription& d : *devs) {
      lines.push_back(fmt::format("{}:{}  {} ({}), {:.0f} MiB, Vulkan {}, {}; features: {}", api,
                                  d.index, d.name, d.type,
                                  static_cast<double>(d.memory_bytes) / (1 << 20), d.api_version,
                                  d.driver, d.features));
    }
  }
  return lines;
}

}  // namespace folio::tools
