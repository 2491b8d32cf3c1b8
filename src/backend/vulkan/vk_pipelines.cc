#include "backend/vulkan/vk_pipelines.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

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

uint32_t spirv_writable_bindings(std::span<const uint32_t> words) {
  constexpr uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71,
                     kOpMemberDecorate = 72, kDecorationBinding = 33, kDecorationNonWritable = 24;
  std::map<uint32_t, uint32_t> binding_of;      // variable id -> binding
  std::set<uint32_t> nonwritable;               // ids decorated NonWritable
  std::map<uint32_t, std::set<uint32_t>> nonwritable_members;  // struct id -> members
  std::map<uint32_t, uint32_t> struct_members;  // struct id -> member count
  std::map<uint32_t, uint32_t> pointee;         // pointer type id -> pointee type id
  std::map<uint32_t, uint32_t> var_type;        // variable id -> pointer type id
  for (size_t i = 5; i < words.size();) {
    const uint32_t n = words[i] >> 16, opcode = words[i] & 0xffff;
    if (n == 0 || i + n > words.size()) break;
    const uint32_t* w = &words[i];
    if (opcode == kOpDecorate && n >= 3) {
      if (w[2] == kDecorationBinding && n >= 4) binding_of[w[1]] = w[3];
      if (w[2] == kDecorationNonWritable) nonwritable.insert(w[1]);
    } else if (opcode == kOpMemberDecorate && n >= 4 && w[3] == kDecorationNonWritable) {
      nonwritable_members[w[1]].insert(w[2]);
    } else if (opcode == kOpTypeStruct && n >= 2) {
      struct_members[w[1]] = n - 2;
    } else if (opcode == kOpTypePointer && n >= 4) {
      pointee[w[1]] = w[3];
    } else if (opcode == kOpVariable && n >= 4) {
      var_type[w[2]] = w[1];
    }
    i += n;
  }
  uint32_t mask = 0;
  for (const auto& [var, binding] : binding_of) {
    if (binding >= 32) continue;
    bool readonly = nonwritable.count(var) > 0;
    if (!readonly) {
      // The block type behind the variable's pointer: read-only when every
      // member is. Anything the walk does not recognise stays writable.
      const auto t = var_type.find(var);
      const auto p = t == var_type.end() ? pointee.end() : pointee.find(t->second);
      if (p != pointee.end()) {
        const auto members = struct_members.find(p->second);
        const auto nw = nonwritable_members.find(p->second);
        readonly = members != struct_members.end() && nw != nonwritable_members.end() &&
                   members->second > 0 && nw->second.size() == members->second;
      }
    }
    if (!readonly) mask |= 1u << binding;
  }
  return mask;
}

bool shader_reads_errors(const char* name) {
  // The shaders whose `err_code` reads gate their writes (a test checks this
  // list against the shader sources).
  for (const char* s : {"gated_delta_net", "ssm_conv_update", "ssm_scan"}) {
    if (std::strcmp(s, name) == 0) return true;
  }
  return false;
}

PipelineCache::PipelineCache(const VulkanDevice& device, bool push_descriptors)
    : device_(device), push_descriptors_(push_descriptors) {
  fast_.resize(kFastSlots);
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
  if (push_descriptors_) dci.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
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
  if (spec.size() > kMaxFastSpec) return get_by_name(shader, spec, min_bindings);
  uint64_t h = reinterpret_cast<uintptr_t>(shader) * 0x9E3779B97F4A7C15ull ^ min_bindings;
  for (uint32_t v : spec) h = (h ^ v) * 0x100000001B3ull;
  h ^= h >> 29;
  for (size_t probe = 0; probe < kFastSlots; ++probe) {
    FastEntry& e = fast_[(h + probe) & (kFastSlots - 1)];
    if (e.shader == nullptr) {
      FOLIO_ASSIGN_OR_RETURN(const Pipeline* p, get_by_name(shader, spec, min_bindings));
      if (fast_used_ + 1 < kFastSlots / 2) {  // keep probes short
        e.shader = shader;
        e.min_bindings = min_bindings;
        e.n_spec = static_cast<uint32_t>(spec.size());
        std::copy(spec.begin(), spec.end(), e.spec);
        e.pipeline = p;
        ++fast_used_;
      }
      return p;
    }
    if (e.shader == shader && e.min_bindings == min_bindings && e.n_spec == spec.size() &&
        std::equal(spec.begin(), spec.end(), e.spec)) {
      return e.pipeline;
    }
  }
  return get_by_name(shader, spec, min_bindings);
}

Result<const Pipeline*> PipelineCache::get_by_name(const char* shader,
                                                   std::span<const uint32_t> spec,
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
  p->name = key;
  p->n_bindings = std::max(spirv_binding_count(words), min_bindings);
  p->writable = spirv_writable_bindings(words);
  p->reads_errors = shader_reads_errors(shader);
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
