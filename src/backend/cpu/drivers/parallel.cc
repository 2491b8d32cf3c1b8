#include "backend/cpu/drivers/parallel.h"

#include "core/thread_pool.h"

namespace folio::cpu {

void run_range(const KernelContext& ctx, int64_t n, bool parallel,
               const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (ctx.pool == nullptr || ctx.pool->size() <= 1 || n == 1 || !parallel) {
    fn(0, n);
    return;
  }
  ctx.pool->parallel_for(n, [&](int, int64_t b, int64_t e) { fn(b, e); });
}

}  // namespace folio::cpu
