#include "backend/vulkan/vk_api.h"

#include <dlfcn.h>

#include <mutex>

namespace folio::vulkan {

Api& vk() {
  static Api api;
  return api;
}

Status load_vulkan() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [] {
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      result = unsupported("no Vulkan loader (libvulkan.so.1): {}", dlerror());
      return;
    }
    Api& a = vk();
    a.vkGetInstanceProcAddr =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (a.vkGetInstanceProcAddr == nullptr) {
      result = unsupported("the Vulkan loader has no vkGetInstanceProcAddr");
      return;
    }
#define FOLIO_VK_LOAD_GLOBAL(name) \
  a.name = reinterpret_cast<PFN_##name>(a.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
    FOLIO_VK_GLOBAL_FUNCS(FOLIO_VK_LOAD_GLOBAL)
#undef FOLIO_VK_LOAD_GLOBAL
    if (a.vkCreateInstance == nullptr) result = unsupported("the Vulkan loader has no vkCreateInstance");
  });
  return result;
}

Status load_instance_functions(VkInstance instance) {
  Api& a = vk();
#define FOLIO_VK_LOAD_INSTANCE(name)                                                      \
  a.name = reinterpret_cast<PFN_##name>(a.vkGetInstanceProcAddr(instance, #name));       \
  if (a.name == nullptr) return unsupported("the Vulkan driver lacks {}", #name);
  FOLIO_VK_INSTANCE_FUNCS(FOLIO_VK_LOAD_INSTANCE)
#undef FOLIO_VK_LOAD_INSTANCE
  a.vkCmdPushDescriptorSetKHR = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
      a.vkGetInstanceProcAddr(instance, "vkCmdPushDescriptorSetKHR"));
  return Status();
}

const char* vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult (other)";
  }
}

}  // namespace folio::vulkan
