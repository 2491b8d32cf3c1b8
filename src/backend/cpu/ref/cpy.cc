// Strided copy reference (kCpy): every element of src0 to the same index of
// dst, as raw 4-byte words, so any bit pattern (NaN payloads, -0.0) survives.
#include <cstring>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {

Status cpy(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& x = op.src[0];  // [ne0, ne1, ne2, ne3], F32 or I32
  const TensorView& d = op.dst;     // same shape and dtype, any strides
  const bool packed = x.nb[0] == 4 && d.nb[0] == 4;
  for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
        const char* xr = static_cast<const char*>(x.row(i1, i2, i3));
        char* dr = static_cast<char*>(d.row(i1, i2, i3));
        if (packed) {
          std::memcpy(dr, xr, static_cast<size_t>(x.ne[0]) * 4);
          continue;
        }
        for (int64_t i0 = 0; i0 < x.ne[0]; ++i0) {
          std::memcpy(dr + static_cast<size_t>(i0) * d.nb[0],
                      xr + static_cast<size_t>(i0) * x.nb[0], 4);
        }
      }
    }
  }
  return Status();
}

}  // namespace folio::ref
