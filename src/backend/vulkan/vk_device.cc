#include "backend/vulkan/vk_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/log.h"

namespace folio::vulkan {

Status vk_check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return Status();
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    return resource_exhausted("vulkan: {}: {}", what, vk_result_name(r));
  }
  return internal_error("vulkan: {}: {}", what, vk_result_name(r));
}

namespace {

// The process's instance: created once, never destroyed (devices and the
// loader's state outlive every backend; destroying it at exit races with
// drivers' own atexit handlers).
Result<VkInstance> instance() {
  static std::once_flag once;
  static Status status;
  static VkInstance inst = VK_NULL_HANDLE;
  std::call_once(once, [] {
    status = load_vulkan();
    if (!status.ok()) return;
    uint32_t version = VK_API_VERSION_1_0;
    if (vk().vkEnumerateInstanceVersion != nullptr) vk().vkEnumerateInstanceVersion(&version);
    if (version < VK_API_VERSION_1_1) {
      status = unsupported("the Vulkan loader offers version {}.{}, folio needs 1.1",
                           VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
      return;
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "folio";
    app.apiVersion = VK_API_VERSION_1_2 <= version ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkResult r = vk().vkCreateInstance(&ci, nullptr, &inst);
    if (r != VK_SUCCESS) {
      status = unsupported("no Vulkan driver: vkCreateInstance gave {}", vk_result_name(r));
      return;
    }
    status = load_instance_functions(inst);
  });
  if (!status.ok()) return status;
  return inst;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vk().vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vk().vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (const auto& e : ext) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

// The environment variable `name` where it is a power of two from 1 to
// `max` (to time or test another count than the device's own); nullopt
// where it is unset, or another value (ignored with a warning: the device
// keeps `kept`, what it counts).
std::optional<uint32_t> power_of_two_env(const char* name, uint32_t max, uint32_t kept,
                                         const char* what) {
  const char* env = std::getenv(name);
  if (env == nullptr) return std::nullopt;
  char* end = nullptr;
  const unsigned long v = std::strtoul(env, &end, 10);
  if (end == env || *end != '\0' || v > max || !std::has_single_bit(v)) {
    FOLIO_LOG_WARN("{}={}: not a power of two from 1 to {}; {} {}", name, env, max, kept, what);
    return std::nullopt;
  }
  return static_cast<uint32_t>(v);
}

// The worker threads a CPU device (lavapipe) runs workgroups on: its
// LP_NUM_THREADS where set, else one per CPU of this machine; capped at 32,
// past which the lanes a row stay at 8 anyway (four workgroups per thread
// of a 2048-row product need 16 rows a workgroup).
uint32_t cpu_device_threads() {
  uint32_t n = std::max(1u, std::thread::hardware_concurrency());
  if (const char* env = std::getenv("LP_NUM_THREADS"); env != nullptr) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) n = static_cast<uint32_t>(std::min(v, 1024ul));
  }
  return std::min(n, 32u);
}

// DeviceCaps::cpu_threads, q8_matvec_lanes and q8_lanes_fixed: on a CPU
// device (lavapipe) a workgroup's lanes are SIMD lanes of one core, so a
// lane's share of each row's cross-lane reduction is work: at most 8
// lanes a row, fewer while the device's threads stay busy; a GPU's idle
// lanes cost nothing and a row's loads go out in parallel, so 32 there.
// FOLIO_VULKAN_Q8_LANES fixes the count on any device.
void choose_q8_matvec_lanes(VkPhysicalDeviceType type, DeviceCaps& c) {
  const bool cpu = type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  const uint32_t chosen = cpu ? 8 : 32;
  const std::optional<uint32_t> fixed =
      power_of_two_env("FOLIO_VULKAN_Q8_LANES", kMaxQ8MatvecLanes, chosen, "lanes a row at most");
  c.q8_matvec_lanes = fixed.value_or(chosen);
  c.q8_lanes_fixed = fixed.has_value();
  c.cpu_threads = cpu ? cpu_device_threads() : 0;
}

// DeviceCaps::tile_rows: 8 on a CPU device, 4 elsewhere, or what
// FOLIO_VULKAN_TILE_ROWS says (4 or 8; other values are ignored with a
// warning).
uint32_t choose_tile_rows(VkPhysicalDeviceType type) {
  const uint32_t chosen = type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 8 : 4;
  const char* env = std::getenv("FOLIO_VULKAN_TILE_ROWS");
  if (env == nullptr) return chosen;
  if (std::strcmp(env, "4") == 0 || std::strcmp(env, "8") == 0) return env[0] - '0';
  FOLIO_LOG_WARN("FOLIO_VULKAN_TILE_ROWS={}: not 4 or 8; the prefill tiles take {} rows a thread",
                 env, chosen);
  return chosen;
}

// DeviceCaps::output_tails: on, unless FOLIO_VULKAN_TAILS=0 (to time the
// quantizer's dispatches against the tails on a device); other values
// are ignored with a warning.
bool choose_output_tails() {
  const char* env = std::getenv("FOLIO_VULKAN_TAILS");
  if (env == nullptr || std::strcmp(env, "1") == 0) return true;
  if (std::strcmp(env, "0") == 0) return false;
  FOLIO_LOG_WARN("FOLIO_VULKAN_TAILS={}: not 0 or 1; the output tails stay on", env);
  return true;
}

DeviceInfo describe(VkPhysicalDevice pd, int index) {
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  sub.pNext = &drv;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &sub;
  vk().vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties& p = props.properties;

  VkPhysicalDeviceShaderFloat16Int8Features f16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  f16.pNext = &s16;
  // Asked only where the extension is offered (the struct is unknown otherwise).
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  const bool idot_ext = has_extension(pd, "VK_KHR_shader_integer_dot_product");
  if (idot_ext) s16.pNext = &idot;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f16;
  vk().vkGetPhysicalDeviceFeatures2(pd, &feats);

  VkPhysicalDeviceMemoryProperties mem;
  vk().vkGetPhysicalDeviceMemoryProperties(pd, &mem);

  DeviceInfo d;
  d.index = index;
  d.name = p.deviceName;
  d.type = type_name(p.deviceType);
  d.api_version = fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(p.apiVersion),
                              VK_API_VERSION_MINOR(p.apiVersion), VK_API_VERSION_PATCH(p.apiVersion));
  d.driver = drv.driverName[0] != '\0' ? fmt::format("{} {}", drv.driverName, drv.driverInfo)
                                       : fmt::format("driver {}", p.driverVersion);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.device_local_bytes = std::max<uint64_t>(d.device_local_bytes, mem.memoryHeaps[h].size);
  }
  const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
    if ((mem.memoryTypes[t].propertyFlags & mappable) == mappable) {
      d.mappable_device_bytes = std::max<uint64_t>(
          d.mappable_device_bytes, mem.memoryHeaps[mem.memoryTypes[t].heapIndex].size);
    }
  }
  DeviceCaps& c = d.caps;
  c.subgroup_size = std::max<uint32_t>(sub.subgroupSize, 1);
  c.max_workgroup_size = std::min<uint32_t>(p.limits.maxComputeWorkGroupInvocations, 1024);
  c.max_shared_bytes = p.limits.maxComputeSharedMemorySize;
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  c.fp16_arith = f16.shaderFloat16 == VK_TRUE;
  c.int8_arith = f16.shaderInt8 == VK_TRUE;
  c.storage_16bit = s16.storageBuffer16BitAccess == VK_TRUE;
  // FOLIO_VULKAN_INT8=0 leaves the feature unused (the fp32 tiles then run:
  // to time the int8 path against them, or to test the fallback on a device
  // that has it).
  const char* int8_env = std::getenv("FOLIO_VULKAN_INT8");
  const bool int8_off = int8_env != nullptr && std::string(int8_env) == "0";
  c.integer_dot = idot_ext && idot.shaderIntegerDotProduct == VK_TRUE && !int8_off;
  c.cooperative_matrix = has_extension(pd, "VK_KHR_cooperative_matrix");
  c.push_descriptor = has_extension(pd, "VK_KHR_push_descriptor") &&
                      vk().vkCmdPushDescriptorSetKHR != nullptr;
  choose_q8_matvec_lanes(p.deviceType, c);
  c.tile_rows = choose_tile_rows(p.deviceType);
  c.output_tails = choose_output_tails();
  c.fa_min_workgroups = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 16 : 1024;
  c.fa_max_heads = power_of_two_env("FOLIO_VULKAN_FA_HEADS", kMaxFaHeads, kMaxFaHeads,
                                    "query heads a flash-attention workgroup at most")
                       .value_or(kMaxFaHeads);
  return d;
}

Result<std::vector<VkPhysicalDevice>> physical_devices() {
  FOLIO_ASSIGN_OR_RETURN(VkInstance inst, instance());
  uint32_t n = 0;
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkEnumeratePhysicalDevices(inst, &n, nullptr),
                                 "vkEnumeratePhysicalDevices"));
  std::vector<VkPhysicalDevice> pds(n);
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkEnumeratePhysicalDevices(inst, &n, pds.data()),
                                 "vkEnumeratePhysicalDevices"));
  pds.resize(n);
  // Only devices that speak Vulkan 1.1 (subgroup properties, features2).
  std::vector<VkPhysicalDevice> usable;
  for (VkPhysicalDevice pd : pds) {
    VkPhysicalDeviceProperties p;
    vk().vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion >= VK_API_VERSION_1_1) usable.push_back(pd);
  }
  return usable;
}

// First memory type with all of `want` (and, preferably, `prefer`).
int find_memory_type(const VkPhysicalDeviceMemoryProperties& mem, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags prefer) {
  int fallback = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((f & want) != want) continue;
    if ((f & prefer) == prefer) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace

std::string DeviceInfo::features() const {
  std::string s = fmt::format("subgroup {}", caps.subgroup_size);
  if (caps.fp16_arith) s += ", fp16";
  if (caps.int8_arith) s += ", int8";
  if (caps.integer_dot) {
    s += fmt::format(", integer dot ({} lanes a decode row{})", caps.q8_matvec_lanes,
                     caps.q8_lanes_fixed || caps.cpu_threads == 0 ? "" : " at most");
    if (!caps.output_tails) s += ", output tails off";
  }
  s += fmt::format(", prefill tiles of {} x {} outputs a thread", caps.tile_rows, caps.tile_rows);
  if (caps.storage_16bit) s += ", 16-bit storage";
  if (caps.cooperative_matrix) s += ", cooperative matrix";
  if (caps.push_descriptor) s += ", push descriptors";
  if (caps.cpu_threads > 0) {
    s += fmt::format(", {} CPU threads (decode rows take fewer lanes while they stay busy)",
                     caps.cpu_threads);
  }
  s += mappable_device_bytes > 0
           ? fmt::format(", mappable device memory {} MiB", mappable_device_bytes >> 20)
           : std::string(", no mappable device memory");
  return s;
}

Result<std::vector<DeviceInfo>> list_devices() {
  FOLIO_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> pds, physical_devices());
  std::vector<DeviceInfo> out;
  for (size_t i = 0; i < pds.size(); ++i) out.push_back(describe(pds[i], static_cast<int>(i)));
  return out;
}

Result<std::unique_ptr<VulkanDevice>> VulkanDevice::open(int index) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> pds, physical_devices());
  if (pds.empty()) return unsupported("vulkan: the driver reports no device (Vulkan 1.1 or later)");
  if (index >= static_cast<int>(pds.size())) {
    return invalid_argument("vulkan: no device {} ({} found)", index, pds.size());
  }
  if (index < 0) {
    int best = 0, best_rank = 99;
    for (size_t i = 0; i < pds.size(); ++i) {
      VkPhysicalDeviceProperties p;
      vk().vkGetPhysicalDeviceProperties(pds[i], &p);
      if (type_rank(p.deviceType) < best_rank) {
        best_rank = type_rank(p.deviceType);
        best = static_cast<int>(i);
      }
    }
    index = best;
  }
  auto d = std::unique_ptr<VulkanDevice>(new VulkanDevice());
  d->physical_ = pds[static_cast<size_t>(index)];
  d->info_ = describe(d->physical_, index);

  uint32_t nq = 0;
  vk().vkGetPhysicalDeviceQueueFamilyProperties(d->physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vk().vkGetPhysicalDeviceQueueFamilyProperties(d->physical_, &nq, qf.data());
  int family = -1;
  for (uint32_t i = 0; i < nq; ++i) {  // prefer a compute queue without graphics
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = static_cast<int>(i);
    if (!(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
  }
  if (family < 0) return unsupported("vulkan: {} has no compute queue", d->info_.name);
  d->queue_family_ = static_cast<uint32_t>(family);
  d->timestamp_valid_bits_ = qf[static_cast<size_t>(family)].timestampValidBits;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = d->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  // Descriptors written into the command buffer per dispatch, where offered:
  // no descriptor set to allocate and update for each one.
  std::vector<const char*> exts;
  if (d->info_.caps.push_descriptor) exts.push_back("VK_KHR_push_descriptor");
  // The int8 matrix path's SPIR-V OpSDot (shaders/mul_mat_q8.glsl).
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  if (d->info_.caps.integer_dot) {
    exts.push_back("VK_KHR_shader_integer_dot_product");
    idot.shaderIntegerDotProduct = VK_TRUE;
    dci.pNext = &idot;
  }
  dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  dci.ppEnabledExtensionNames = exts.data();
  FOLIO_RETURN_IF_ERROR(
      vk_check(vk().vkCreateDevice(d->physical_, &dci, nullptr, &d->device_), "vkCreateDevice"));
  vk().vkGetDeviceQueue(d->device_, d->queue_family_, 0, &d->queue_);

  VkPhysicalDeviceMemoryProperties mem;
  vk().vkGetPhysicalDeviceMemoryProperties(d->physical_, &mem);
  const int dev = find_memory_type(mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  const int up = find_memory_type(
      mem, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
  const int down = find_memory_type(
      mem, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  const int params = find_memory_type(
      mem, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (dev < 0 || up < 0 || down < 0 || params < 0) {
    return unsupported("vulkan: {} lacks device-local or host-visible coherent memory",
                       d->info_.name);
  }
  d->device_type_ = static_cast<uint32_t>(dev);
  d->upload_type_ = static_cast<uint32_t>(up);
  d->readback_type_ = static_cast<uint32_t>(down);
  d->params_type_ = static_cast<uint32_t>(params);

  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &m3;
  vk().vkGetPhysicalDeviceProperties2(d->physical_, &props);
  d->max_allocation_ = m3.maxMemoryAllocationSize;
  d->timestamp_period_ns_ = props.properties.limits.timestampPeriod;
  return d;
}

VulkanDevice::~VulkanDevice() {
  if (device_ != VK_NULL_HANDLE) {
    vk().vkDeviceWaitIdle(device_);
    vk().vkDestroyDevice(device_, nullptr);
  }
}

}  // namespace folio::vulkan
