#include "backend/vulkan/kernels.h"

namespace folio::vulkan {

void add_rope_kernels(std::vector<KernelDef>& out) {}

}  // namespace folio::vulkan
