#include "backend/vulkan/vk_pipelines.h"

#include <algorithm>
#include <cstring>

namespace folio::vulkan {

uint32_t spirv_binding_count(std::span<const uint32_t> words) {
  constexpr uint32_t kOpDecorate = 71, kDecorationBinding = 33;
  uint32_t count = 0;
  for (size_t i = 5; i < words.size();) {  // 5-word header
    const uint32_t n = words[i] >> 16, opcode = words[i] & 0xffff;
    if (n == 0) break;
    if (opcode == kOpDecorate && n >= 4 && words[i + 2] == kDecorationBinding) {
      count = std::max(count, words[i + 3] + 1);
    }
    i += n;
  }
  return count;
}

PipelineCache::PipelineCache(const VulkanDevice& device) : device_(device) {
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (vk().vkCreatePipelineCache(device_.device(), &ci, nullptr, &cache_) != VK_SUCCESS)
    cache_ = VK_NULL_HANDLE;
}

PipelineCache::~PipelineCache() {
  VkDevice dev = device_.device();
  for (auto& [key, p] : pipelines_) vk().vkDestroyPipeline(dev, p->pipeline, nullptr);
  for (auto& [n, l] : layouts_) {
    vk().vkDestroyPipelineLayout(dev, l.second, nullptr);
    vk().vkDestroyDescriptorSetLayout(dev, l.first, nullptr);
  }
  if (cache_ != VK_NULL_HANDLE) vk().vkDestroyPipelineCache(dev, cache_, nullptr);
}

Result<VkDescriptorSetLayout> PipelineCache::set_layout(uint32_t n_bindings,
                                                        VkPipelineLayout* layout) {
  auto it = layouts_.find(n_bindings);
  if (it != layouts_.end()) {
    *layout = it->second.second;
    return it->second.first;
  }
  std::vector<VkDescriptorSetLayoutBinding> b(n_bindings);
  for (uint32_t i = 0; i < n_bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dci.bindingCount = n_bindings;
  dci.pBindings = b.data();
  VkDescriptorSetLayout dsl;
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateDescriptorSetLayout(device_.device(), &dci, nullptr, &dsl),
                                 "vkCreateDescriptorSetLayout"));
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = 1;
  pci.pSetLayouts = &dsl;
  VkPipelineLayout pl;
  const VkResult r = vk().vkCreatePipelineLayout(device_.device(), &pci, nullptr, &pl);
  if (r != VK_SUCCESS) {
    vk().vkDestroyDescriptorSetLayout(device_.device(), dsl, nullptr);
    return vk_check(r, "vkCreatePipelineLayout");
  }
  layouts_[n_bindings] = {dsl, pl};
  *layout = pl;
  return dsl;
}

Result<const Pipeline*> PipelineCache::get(const char* shader, std::span<const uint32_t> spec,
                                           uint32_t min_bindings) {
  std::string key = std::string(shader) + "/" + std::to_string(min_bindings);
  for (uint32_t v : spec) {
    key += ':';
    key += std::to_string(v);
  }
  std::lock_guard lock(mu_);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second.get();

  const EmbeddedShader* src = nullptr;
  for (const EmbeddedShader& s : embedded_shaders()) {
    if (std::strcmp(s.name, shader) == 0) src = &s;
  }
  if (src == nullptr) return internal_error("vulkan: no embedded shader '{}'", shader);
  const std::span<const uint32_t> words(src->words, src->n_words);

  auto p = std::make_unique<Pipeline>();
  p->n_bindings = std::max(spirv_binding_count(words), min_bindings);
  FOLIO_ASSIGN_OR_RETURN(p->set_layout, set_layout(p->n_bindings, &p->layout));

  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = words.size_bytes();
  mci.pCode = words.data();
  VkShaderModule module;
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateShaderModule(device_.device(), &mci, nullptr, &module),
                                 "vkCreateShaderModule"));
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4u, 4u};
  VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), spec.size_bytes(),
                          spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  ci.layout = p->layout;
  const VkResult r =
      vk().vkCreateComputePipelines(device_.device(), cache_, 1, &ci, nullptr, &p->pipeline);
  vk().vkDestroyShaderModule(device_.device(), module, nullptr);
  if (r != VK_SUCCESS) {
    return internal_error("vulkan: cannot create the pipeline of shader '{}': {}", key,
                          vk_result_name(r));
  }
  const Pipeline* out = p.get();
  pipelines_[key] = std::move(p);
  return out;
}

}  // namespace folio::vulkan
