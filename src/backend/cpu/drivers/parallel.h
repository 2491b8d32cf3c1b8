// Row-parallel loops for the optimised kernels of every tier. Work is split
// into contiguous ranges of independent rows, so the result never depends
// on the thread count.
#pragma once

#include <cstdint>
#include <functional>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// Runs fn(begin, end) over [0, n): on ctx.pool when there is one with more
// than one thread and `parallel` says the work is worth waking it for,
// otherwise on the calling thread.
void run_range(const KernelContext& ctx, int64_t n, bool parallel,
               const std::function<void(int64_t, int64_t)>& fn);

// Tensors worth splitting across threads (waking the pool costs several
// microseconds): streaming ops (add, mul, scale, norms) from this many
// elements, ops that evaluate exp per element (activations, softmax) from
// half as many.
inline constexpr int64_t kMinParallelElements = 1 << 16;
inline constexpr int64_t kMinParallelElementsExp = 1 << 15;

}  // namespace folio::cpu
