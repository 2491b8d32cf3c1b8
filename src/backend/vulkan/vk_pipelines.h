// Compute pipelines: the SPIR-V of every shaders/*.comp is compiled at build
// time and embedded (vk_shaders.cc, generated); a pipeline is created the
// first time a (shader, specialization constants) pair is dispatched and
// kept. Each pipeline's descriptor layout has as many storage-buffer
// bindings as its shader declares (read from the SPIR-V), and the pipeline
// knows which bindings its shader may write (those not declared readonly)
// and whether it reads the error word, for the command stream's hazard
// tracking (vk_hazards.h).
//
// A dispatch finds its pipeline in a small open-addressed table keyed by the
// shader name's address and the constants (no string, no allocation, no
// lock: the backend's lock is held); the first dispatch of a key takes the
// slow path by name.
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
  std::string name;  // shader, binding count and constants ("mul_mat_vec/8:2:1:32:0:1:0")
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t n_bindings = 0;  // bindings 0 .. n_bindings - 1
  uint32_t writable = 0;    // bit b: binding b may be written (not readonly in the shader)
  bool reads_errors = false;  // reads the error word (binding 1) to skip its work
};

class PipelineCache {
 public:
  // push_descriptors: the set layouts are for vkCmdPushDescriptorSetKHR
  // (VK_KHR_push_descriptor, enabled on the device), else for allocated sets.
  PipelineCache(const VulkanDevice& device, bool push_descriptors);
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
  // A resolved (shader name address, constants, bindings) key.
  static constexpr size_t kMaxFastSpec = 12;
  static constexpr size_t kFastSlots = 1024;  // power of two; a full table still works by name
  struct FastEntry {
    const char* shader = nullptr;  // nullptr: empty slot
    uint32_t min_bindings = 0;
    uint32_t n_spec = 0;
    uint32_t spec[kMaxFastSpec] = {};
    const Pipeline* pipeline = nullptr;
  };
  Result<const Pipeline*> get_by_name(const char* shader, std::span<const uint32_t> spec,
                                      uint32_t min_bindings);
  Result<VkDescriptorSetLayout> set_layout(uint32_t n_bindings, VkPipelineLayout* layout);

  std::vector<FastEntry> fast_;  // kFastSlots, linear probing
  size_t fast_used_ = 0;

  const VulkanDevice& device_;
  const bool push_descriptors_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  // Per binding count: the descriptor set layout and pipeline layout.
  std::map<uint32_t, std::pair<VkDescriptorSetLayout, VkPipelineLayout>> layouts_;
};

// Highest binding number a SPIR-V module declares, plus one (0 if none).
uint32_t spirv_binding_count(std::span<const uint32_t> words);
// Bit b set: a storage buffer at binding b may be written, i.e. some variable
// bound there is neither decorated NonWritable nor a block whose members all
// are (GLSL `readonly`). Bindings the module does not declare are not set.
uint32_t spirv_writable_bindings(std::span<const uint32_t> words);
// Whether shader `name` reads the error word to decide what to do (the fused
// state updates return when a slot check failed). Every other shader only
// sets it.
bool shader_reads_errors(const char* name);

}  // namespace folio::vulkan
