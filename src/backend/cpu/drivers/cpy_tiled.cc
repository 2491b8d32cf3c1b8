#include "backend/cpu/drivers/cpy_tiled.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/drivers/parallel.h"

namespace folio::cpu {

namespace {

constexpr int64_t kCpyTile = 16;

}  // namespace

Status cpy_tiled(const Op& op, const KernelContext& ctx) {
  const TensorView& x = op.src[0];  // [ne0, ne1, ne2, ne3], F32 or I32
  const TensorView& d = op.dst;     // same shape and dtype, any strides
  const int64_t ne0 = x.ne[0], ne1 = x.ne[1], n_outer = x.ne[2] * x.ne[3];
  const int64_t tiles1 = (ne1 + kCpyTile - 1) / kCpyTile;
  run_range(ctx, n_outer * tiles1, x.nelements() >= kMinParallelElements,
            [&](int64_t begin, int64_t end) {
              for (int64_t item = begin; item < end; ++item) {
                const int64_t outer = item / tiles1, i1_0 = (item % tiles1) * kCpyTile;
                const int64_t i2 = outer % x.ne[2], i3 = outer / x.ne[2];
                const int64_t i1_1 = std::min(ne1, i1_0 + kCpyTile);
                for (int64_t i0_0 = 0; i0_0 < ne0; i0_0 += kCpyTile) {
                  const int64_t i0_1 = std::min(ne0, i0_0 + kCpyTile);
                  for (int64_t i1 = i1_0; i1 < i1_1; ++i1) {
                    const char* xr = static_cast<const char*>(x.row(i1, i2, i3));
                    char* dr = static_cast<char*>(d.row(i1, i2, i3));
                    for (int64_t i0 = i0_0; i0 < i0_1; ++i0) {
                      std::memcpy(dr + static_cast<size_t>(i0) * d.nb[0],
                                  xr + static_cast<size_t>(i0) * x.nb[0], 4);
                    }
                  }
                }
              }
            });
  return Status();
}

}  // namespace folio::cpu
