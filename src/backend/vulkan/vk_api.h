// The Vulkan API, loaded at run time: folio links no Vulkan library, so the
// same binary starts on machines without a Vulkan loader (and says so once
// when a device is asked for). load_vulkan() opens libvulkan.so.1 and fills
// the function pointers below; instance / device functions are fetched after
// the instance exists.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "core/status.h"

namespace folio::vulkan {

#define FOLIO_VK_GLOBAL_FUNCS(X) \
  X(vkCreateInstance)            \
  X(vkEnumerateInstanceVersion)

#define FOLIO_VK_INSTANCE_FUNCS(X)            \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkDestroyDevice)                          \
  X(vkGetDeviceQueue)                         \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkInvalidateMappedMemoryRanges)           \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreatePipelineCache)                    \
  X(vkDestroyPipelineCache)                   \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkResetDescriptorPool)                    \
  X(vkAllocateDescriptorSets)                 \
  X(vkUpdateDescriptorSets)                   \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkFreeCommandBuffers)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkResetCommandPool)                       \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdDispatch)                            \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdCopyBuffer)                          \
  X(vkCmdFillBuffer)                          \
  X(vkCreateQueryPool)                        \
  X(vkDestroyQueryPool)                       \
  X(vkCmdResetQueryPool)                      \
  X(vkCmdWriteTimestamp)                      \
  X(vkGetQueryPoolResults)                    \
  X(vkQueueSubmit)                            \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkWaitForFences)                          \
  X(vkResetFences)                            \
  X(vkDeviceWaitIdle)

struct Api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define FOLIO_VK_DECLARE(name) PFN_##name name = nullptr;
  FOLIO_VK_GLOBAL_FUNCS(FOLIO_VK_DECLARE)
  FOLIO_VK_INSTANCE_FUNCS(FOLIO_VK_DECLARE)
#undef FOLIO_VK_DECLARE
  // VK_KHR_push_descriptor; nullptr where the loader does not offer it (a
  // device uses it only where it also has and enables the extension).
  PFN_vkCmdPushDescriptorSetKHR vkCmdPushDescriptorSetKHR = nullptr;
};

// The process's API table; load_vulkan() fills its global functions (once;
// later calls return the first result), load_instance_functions() the rest.
Api& vk();
Status load_vulkan();
Status load_instance_functions(VkInstance instance);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY"
const char* vk_result_name(VkResult r);

}  // namespace folio::vulkan
