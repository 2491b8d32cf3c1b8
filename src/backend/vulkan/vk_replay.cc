#include "backend/vulkan/vk_replay.h"

#include <algorithm>

#include "core/aligned.h"

namespace folio::vulkan {

bool same_command(const StreamCommand& a, std::span<const AccessRange> ra, const StreamCommand& b,
                  std::span<const AccessRange> rb) {
  if (a.kind != b.kind || a.data_bytes != b.data_bytes || ra.size() != rb.size()) return false;
  switch (a.kind) {
    case CommandKind::kDispatch:
      if (a.pipeline != b.pipeline || a.n_tensors != b.n_tensors || a.groups[0] != b.groups[0] ||
          a.groups[1] != b.groups[1] || a.groups[2] != b.groups[2] ||
          a.reads_errors != b.reads_errors ||
          !std::equal(a.tensors, a.tensors + a.n_tensors, b.tensors)) {
        return false;
      }
      break;
    case CommandKind::kUpload:
    case CommandKind::kFill:
      if (a.dst != b.dst || a.dst_off != b.dst_off || a.size != b.size) return false;
      break;
    case CommandKind::kRead:
      if (a.src != b.src || a.src_off != b.src_off || a.size != b.size) return false;
      break;
    case CommandKind::kCopy:
      if (a.src != b.src || a.src_off != b.src_off || a.dst != b.dst || a.dst_off != b.dst_off ||
          a.size != b.size) {
        return false;
      }
      break;
  }
  for (size_t i = 0; i < ra.size(); ++i) {
    if (!(ra[i] == rb[i])) return false;
  }
  return true;
}

bool Recording::place_params(size_t n, uint64_t* off) {
  const size_t o = align_up(params_used, 256);
  if (o + n > params.size) return false;
  params_used = o + n;
  *off = o;
  return true;
}

bool Recording::place_staging(size_t n, uint64_t* off) {
  const size_t o = align_up(staging_used, 16);
  if (o + n > staging.size) return false;
  staging_used = o + n;
  *off = o;
  return true;
}

void Recording::log(StreamCommand c, std::span<const AccessRange> r) {
  c.range_first = static_cast<uint32_t>(ranges.size());
  c.n_ranges = static_cast<uint32_t>(r.size());
  ranges.insert(ranges.end(), r.begin(), r.end());
  commands.push_back(c);
}

Result<std::unique_ptr<ReplayCache>> ReplayCache::create(const VulkanDevice& device) {
  auto c = std::unique_ptr<ReplayCache>(new ReplayCache(device));
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = device.queue_family();
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateCommandPool(device.device(), &pci, nullptr, &c->pool_),
                                 "vkCreateCommandPool"));
  return c;
}

ReplayCache::~ReplayCache() {
  for (auto* list : {&recordings_, &spare_}) {
    for (auto& r : *list) {
      reset(*r);
      destroy_buffer(device_, r->params);
      destroy_buffer(device_, r->staging);
    }
  }
  if (pool_ != VK_NULL_HANDLE) vk().vkDestroyCommandPool(device_.device(), pool_, nullptr);
}

void ReplayCache::reset(Recording& rec) {
  if (!rec.pieces.empty()) {
    vk().vkFreeCommandBuffers(device_.device(), pool_, static_cast<uint32_t>(rec.pieces.size()),
                              rec.pieces.data());
  }
  rec.pieces.clear();
  rec.commands.clear();
  rec.ranges.clear();
  rec.params_used = 0;
  rec.staging_used = 0;
  rec.complete = false;
  rec.busy = false;
}

Recording* ReplayCache::find_first(const StreamCommand& c, std::span<const AccessRange> r) {
  Recording* best = nullptr;
  for (auto& rec : recordings_) {
    if (!rec->complete || rec->commands.empty()) continue;
    const StreamCommand& first = rec->commands.front();
    if (!same_command(first, rec->ranges_of(first), c, r)) continue;
    if (best == nullptr || rec->last_use > best->last_use) best = rec.get();
  }
  return best;
}

Recording* ReplayCache::find_continuation(const Recording& prefix, size_t n, const StreamCommand& c,
                                          std::span<const AccessRange> r) {
  for (auto& rec : recordings_) {
    if (rec.get() == &prefix || !rec->complete || rec->commands.size() <= n) continue;
    const StreamCommand& next = rec->commands[n];
    if (!same_command(next, rec->ranges_of(next), c, r)) continue;
    bool same = true;
    for (size_t i = 0; i < n && same; ++i) {
      const StreamCommand& a = prefix.commands[i];
      const StreamCommand& b = rec->commands[i];
      same = a.ends_piece == b.ends_piece && same_command(a, prefix.ranges_of(a), b, rec->ranges_of(b));
    }
    if (same) return rec.get();
  }
  return nullptr;
}

Result<Recording*> ReplayCache::start() {
  if (recordings_.size() >= kMaxRecordings) {
    auto victim = recordings_.end();
    for (auto it = recordings_.begin(); it != recordings_.end(); ++it) {
      if ((*it)->busy) continue;
      if (victim == recordings_.end() || (*it)->last_use < (*victim)->last_use) victim = it;
    }
    if (victim == recordings_.end()) return resource_exhausted("vulkan: every recording is in use");
    reset(**victim);
    spare_.push_back(std::move(*victim));
    recordings_.erase(victim);
  }
  std::unique_ptr<Recording> rec;
  if (!spare_.empty()) {
    rec = std::move(spare_.back());
    spare_.pop_back();
  } else {
    rec = std::make_unique<Recording>();
    Result<VkMem> p = make_buffer(device_, kParamsBytes, device_.params_memory_type(), true,
                                  "recorded parameters");
    if (!p.ok()) {
      p = make_buffer(device_, kParamsBytes, device_.upload_memory_type(), true,
                      "recorded parameters");
    }
    FOLIO_ASSIGN_OR_RETURN(rec->params, std::move(p));
    Result<VkMem> s = make_buffer(device_, kStagingBytes, device_.upload_memory_type(), true,
                                  "recorded uploads");
    if (!s.ok()) {
      destroy_buffer(device_, rec->params);
      return s.status();
    }
    rec->staging = *s;
  }
  rec->busy = true;
  touch(rec.get());
  recordings_.push_back(std::move(rec));
  return recordings_.back().get();
}

Result<VkCommandBuffer> ReplayCache::add_piece(Recording& rec) {
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  VkCommandBuffer c;
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkAllocateCommandBuffers(device_.device(), &cai, &c),
                                 "vkAllocateCommandBuffers"));
  rec.pieces.push_back(c);
  return c;
}

void ReplayCache::drop(Recording* rec) {
  for (auto it = recordings_.begin(); it != recordings_.end(); ++it) {
    if (it->get() != rec) continue;
    reset(**it);
    spare_.push_back(std::move(*it));
    recordings_.erase(it);
    return;
  }
}

void ReplayCache::clear() {
  for (size_t i = recordings_.size(); i-- > 0;) {
    if (!recordings_[i]->busy) drop(recordings_[i].get());
  }
}

}  // namespace folio::vulkan
