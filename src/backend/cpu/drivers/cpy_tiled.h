// Strided copy (kCpy) in cache-friendly tiles, portable (tier kScalar).
#pragma once

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// Copies every 4-byte word of src0 to the same index of dst, as the
// reference (ref/cpy.cc) does, but in tiles of kCpyTile x kCpyTile over
// dims 0 and 1: a transposing copy (the DeltaNet conv window: channels
// innermost in, time innermost out) touches each cache line of both sides
// once per tile instead of once per element. Rows of 16 tiles are split
// across the thread pool; the bytes written do not depend on the order.
Status cpy_tiled(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
