// Compute pipelines: the SPIR-V of every shaders/*.comp is compiled at build
// time and embedded (vk_shaders.cc, generated); a pipeline is created the
// first time a (shader, specialization constants) pair is dispatched and
// kept. Each pipeline's descriptor layout has as many storage-buffer
// bindings as its shader declares (read from the SPIR-V).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/vulkan/vk_device.h"

namespace folio::vulkan {

struct EmbeddedShader {
  const char* name;  // file stem: "add"
  const uint32_t* words;
  size_t n_words;
};
// The embedded shaders (generated at build time).
std::span<const EmbeddedShader> embedded_shaders();

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t n_bindings = 0;  // bindings 0 .. n_bindings - 1
};

class PipelineCache {
 public:
  explicit PipelineCache(const VulkanDevice& device);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The pipeline of `shader` specialised with constant_id i = spec[i], with
  // at least `min_bindings` bindings (the optimiser drops unused ones from
  // the SPIR-V; the dispatch still binds them).
  Result<const Pipeline*> get(const char* shader, std::span<const uint32_t> spec,
                              uint32_t min_bindings);
  size_t size() const { return pipelines_.size(); }

 private:
  Result<VkDescriptorSetLayout> set_layout(uint32_t n_bindings, VkPipelineLayout* layout);

  const VulkanDevice& device_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  // Per binding count: the descriptor set layout and pipeline layout.
  std::map<uint32_t, std::pair<VkDescriptorSetLayout, VkPipelineLayout>> layouts_;
};

// Highest binding number a SPIR-V module declares, plus one (0 if none).
uint32_t spirv_binding_count(std::span<const uint32_t> words);

}  // namespace folio::vulkan
