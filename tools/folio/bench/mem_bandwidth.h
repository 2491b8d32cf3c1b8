// Memory bandwidth of this machine, measured STREAM-style, for `folio bench
// --mem`: the limit decode speed is compared with (a decode step streams
// every weight once, so tokens/s <= bandwidth / weight bytes per token).
//
//   triad: a[i] = b[i] + s * c[i] over three double arrays, each split into
//          one contiguous chunk per thread of the pool (first touched by the
//          thread that later uses it). Bytes counted as STREAM does: 3 * 8
//          per element (the write-allocate read of a[] is not counted).
//   read:  a sum over a[] (8 bytes per element read, nothing written), the
//          access pattern of a decode step's weight reads.
// Each is run `runs` times; the best (highest) rate is reported, like STREAM.
// The arrays are on ordinary (4 KiB) pages, as STREAM's static arrays are
// where transparent huge pages are only given on request, or, with
// huge_pages, advised as huge pages as folio's weight buffers are
// (core/aligned.h): the single-stream read gains most from that.
// The arrays must be far larger than the last-level cache, or the result is
// cache bandwidth: default_array_bytes() takes twice the L3 size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace folio {
class ThreadPool;
}  // namespace folio

namespace folio::tools {

struct MemBandwidthOptions {
  size_t array_bytes = 0;  // bytes of EACH of the three arrays; 0: default_array_bytes()
  int runs = 5;
  bool huge_pages = false;  // advise the arrays as transparent huge pages
};

struct MemBandwidthResult {
  double triad_gbps = 0;  // best of runs, 1e9 bytes/s
  double read_gbps = 0;   // best of runs
  size_t array_bytes = 0;
  int threads = 0;
  int runs = 0;
  bool huge_pages = false;  // huge pages were asked for and the kernel took the advice
};

// Last-level (L3) cache size in bytes from sysfs; 0 if unknown.
size_t l3_cache_bytes();
// Twice the L3 size, at least 64 MiB and at most 1 GiB per array.
size_t default_array_bytes();

// Allocates the arrays (kResourceExhausted if that fails), runs both kernels
// on `pool`'s threads and checks the triad's result.
Result<MemBandwidthResult> measure_mem_bandwidth(ThreadPool& pool,
                                                 const MemBandwidthOptions& options);

}  // namespace folio::tools
