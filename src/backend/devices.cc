#include "backend/devices.h"

#include <cstdlib>

#ifdef FOLIO_HAVE_VULKAN
#include "backend/vulkan/vulkan_backend.h"
#endif

namespace folio {

std::vector<std::string> device_apis() {
#ifdef FOLIO_HAVE_VULKAN
  return {"vulkan"};
#else
  return {};
#endif
}

Result<std::vector<DeviceDescription>> list_devices(const std::string& api) {
  if (api != "vulkan") return invalid_argument("unknown device API '{}' (vulkan)", api);
#ifdef FOLIO_HAVE_VULKAN
  FOLIO_ASSIGN_OR_RETURN(std::vector<vulkan::DeviceInfo> infos, vulkan::list_devices());
  std::vector<DeviceDescription> out;
  for (const vulkan::DeviceInfo& d : infos) {
    out.push_back(DeviceDescription{"vulkan", d.index, d.name, d.type, d.driver, d.api_version,
                                    d.device_local_bytes, d.features()});
  }
  return out;
#else
  return unsupported("this folio was built without Vulkan (libvulkan-dev and glslc were missing)");
#endif
}

Result<std::unique_ptr<Backend>> open_device(const std::string& spec) {
  std::string api = spec;
  [[maybe_unused]] int index = -1;  // read by the Vulkan build only
  if (const size_t colon = spec.find(':'); colon != std::string::npos) {
    api = spec.substr(0, colon);
    const std::string n = spec.substr(colon + 1);
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 0 || v > 1024) {
      return invalid_argument("device '{}': expected {}:N with N a device index", spec, api);
    }
    index = static_cast<int>(v);
  }
  if (api != "vulkan") return invalid_argument("unknown device '{}' (cpu, vulkan, vulkan:N)", spec);
#ifdef FOLIO_HAVE_VULKAN
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<vulkan::VulkanBackend> b, vulkan::VulkanBackend::create(index));
  return std::unique_ptr<Backend>(std::move(b));
#else
  return unsupported("this folio was built without Vulkan (libvulkan-dev and glslc were missing)");
#endif
}

}  // namespace folio
