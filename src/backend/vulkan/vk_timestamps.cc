#include "backend/vulkan/vk_timestamps.h"

#include <algorithm>

#include "backend/vulkan/vk_device.h"

namespace folio::vulkan {

Result<std::unique_ptr<DeviceTimer>> DeviceTimer::create(const VulkanDevice& device,
                                                         uint32_t capacity) {
  if (device.timestamp_valid_bits() == 0 || device.timestamp_period_ns() <= 0) {
    return unsupported("vulkan: {}'s compute queue writes no timestamps", device.info().name);
  }
  if (capacity < 2) return invalid_argument("vulkan: a device timer needs room for 2 timestamps");
  auto t = std::unique_ptr<DeviceTimer>(new DeviceTimer(device, capacity));
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = capacity;
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateQueryPool(device.device(), &qi, nullptr, &t->pool_),
                                 "vkCreateQueryPool"));
  return t;
}

DeviceTimer::DeviceTimer(const VulkanDevice& device, uint32_t capacity)
    : device_(device), capacity_(capacity) {
  names_.reserve(capacity);
}

DeviceTimer::~DeviceTimer() {
  if (pool_ != VK_NULL_HANDLE) vk().vkDestroyQueryPool(device_.device(), pool_, nullptr);
}

void DeviceTimer::start(VkCommandBuffer cmd) {
  if (started_) return;
  vk().vkCmdResetQueryPool(cmd, pool_, 0, capacity_);
  vk().vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 0);
  started_ = true;
  names_.clear();
}

void DeviceTimer::mark(VkCommandBuffer cmd, const std::string* name) {
  if (!started_) return;
  const size_t q = names_.size() + 1;
  if (q >= capacity_) {
    ++untimed_;
    return;
  }
  vk().vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_,
                           static_cast<uint32_t>(q));
  names_.push_back(name);
}

Status DeviceTimer::collect(bool ran) {
  if (!started_) return Status();
  started_ = false;
  const uint32_t n = static_cast<uint32_t>(names_.size() + 1);
  if (!ran || n < 2) {  // a failed submission: its timestamps may never be written
    names_.clear();
    return Status();
  }
  ticks_.assign(n, 0);
  const VkResult r =
      vk().vkGetQueryPoolResults(device_.device(), pool_, 0, n, n * sizeof(uint64_t), ticks_.data(),
                                 sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
  if (r == VK_NOT_READY) {
    names_.clear();
    return internal_error("vulkan: timestamps not written after the wait");
  }
  FOLIO_RETURN_IF_ERROR(vk_check(r, "vkGetQueryPoolResults"));
  const uint32_t bits = device_.timestamp_valid_bits();
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const double period = device_.timestamp_period_ns();
  for (uint32_t q = 1; q < n; ++q) {
    const uint64_t d =
        ((ticks_[q] & mask) - (ticks_[q - 1] & mask)) & mask;  // wraps within the bits
    DeviceTimeRow& row = totals_[*names_[q - 1]];
    if (row.name.empty()) row.name = *names_[q - 1];
    ++row.count;
    row.ns += static_cast<double>(d) * period;
  }
  names_.clear();
  return Status();
}

std::vector<DeviceTimeRow> DeviceTimer::rows() const {
  std::vector<DeviceTimeRow> out;
  out.reserve(totals_.size());
  for (const auto& [name, row] : totals_) out.push_back(row);
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceTimeRow& a, const DeviceTimeRow& b) { return a.ns > b.ns; });
  return out;
}

void DeviceTimer::clear() {
  totals_.clear();
  untimed_ = 0;
}

}  // namespace folio::vulkan
