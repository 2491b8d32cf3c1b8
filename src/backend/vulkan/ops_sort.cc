// top_k / argsort (argsort.comp): one workgroup per row, a bitonic sort of
// (order key, index) pairs in shared memory, the row padded to N, the next
// power of two. Keys and indices take 8 bytes per element, so rows whose N
// does not fit the shared memory (N <= 2048 with 16 KiB) are declined and
// run on the CPU. top_k is the descending sort cut to its first k indices.
// Parameter struct: shaders/sort_interface.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/sort_interface.h"

namespace folio::vulkan {
namespace {

constexpr uint64_t kSharedBytesPerElement = 8;  // s_key + s_idx
constexpr uint64_t kMaxSharedBytes = 16384;     // the most any kernel here asks for

uint32_t padded_length(int64_t n) {
  uint32_t len = 2;
  while (len < n) len *= 2;
  return len;
}

bool match_sort(const Op& op, const DeviceCaps& caps) {
  const TensorView& x = op.src[0];
  if (x.dtype != DType::F32 || op.dst.dtype != DType::I32) return false;
  if (x.ne[0] < 1 || x.ne[0] > 65536) return false;
  if (static_cast<uint64_t>(x.nrows()) > std::numeric_limits<uint32_t>::max()) return false;
  const uint64_t shared = padded_length(x.ne[0]) * kSharedBytesPerElement;
  return shared <= std::min<uint64_t>(kMaxSharedBytes, caps.max_shared_bytes) &&
         caps.max_workgroup_size >= 1;
}

struct SortShaderParams {
  FOLIO_VK_SORT_PARAMS
};
static_assert(sizeof(SortShaderParams) == 2 * sizeof(TensorDesc) + 4);

Status record_sort(Recorder& r, const Op& op) {
  const TensorView& x = op.src[0];
  const bool top_k = op.kind == OpKind::kTopK;
  const bool descending = top_k || op.p<ArgsortParams>().descending;
  SortShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  p.k = static_cast<uint32_t>(top_k ? op.p<TopKParams>().k : x.ne[0]);
  const uint32_t n = padded_length(x.ne[0]);
  // Power-of-two workgroup, at most one compare-exchange per thread and step.
  uint32_t block = 1;
  while (2 * block <= std::min<uint32_t>({n / 2, 256, r.caps().max_workgroup_size})) block *= 2;
  uint32_t gx, gy;
  Recorder::split_groups(static_cast<uint64_t>(x.nrows()), gx, gy);
  return r.dispatch("argsort", {block, n, descending ? 1u : 0u}, &p, sizeof p, {x, op.dst}, gx, gy);
}

}  // namespace

void add_sort_kernels(std::vector<KernelDef>& out) {
  out.push_back({"top_k", OpKind::kTopK, match_sort, record_sort});
  out.push_back({"argsort", OpKind::kArgsort, match_sort, record_sort});
}

}  // namespace folio::vulkan
