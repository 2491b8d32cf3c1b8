#include "bench/mem_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/aligned.h"
#include "core/thread_pool.h"

namespace folio::tools {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kScalar = 3.0;

// "491520K", "480M", "32768" -> bytes; 0 if unparsable.
size_t parse_cache_size(const std::string& s) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &pos);
  } catch (...) {
    return 0;
  }
  const char unit = pos < s.size() ? s[pos] : '\0';
  if (unit == 'K') return static_cast<size_t>(v) << 10;
  if (unit == 'M') return static_cast<size_t>(v) << 20;
  if (unit == 'G') return static_cast<size_t>(v) << 30;
  return static_cast<size_t>(v);
}

void triad_chunk(double* a, const double* b, const double* c, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + kScalar * c[i];
}

// Integer addition is associative, so the compiler vectorizes this loop
// (a floating-point sum it would have to keep in order).
uint64_t read_chunk(const uint64_t* a, int64_t begin, int64_t end) {
  uint64_t s = 0;
  for (int64_t i = begin; i < end; ++i) s += a[i];
  return s;
}

}  // namespace

size_t l3_cache_bytes() {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_in(dir + "/level");
    int level = 0;
    if (!(level_in >> level)) break;
    if (level != 3) continue;
    std::ifstream size_in(dir + "/size");
    std::string size;
    if (size_in >> size) return parse_cache_size(size);
  }
  return 0;
}

size_t default_array_bytes() {
  constexpr size_t kMin = size_t{64} << 20;
  constexpr size_t kMax = size_t{1} << 30;
  return std::clamp(2 * l3_cache_bytes(), kMin, kMax);
}

Result<MemBandwidthResult> measure_mem_bandwidth(ThreadPool& pool,
                                                 const MemBandwidthOptions& options) {
  if (options.runs < 1)
    return invalid_argument("membench: runs must be >= 1, got {}", options.runs);
  const size_t bytes = options.array_bytes > 0 ? options.array_bytes : default_array_bytes();
  const auto n = static_cast<int64_t>(bytes / sizeof(double));
  if (n < 1024) return invalid_argument("membench: arrays of {} bytes are too small", bytes);
  const size_t size = static_cast<size_t>(n) * sizeof(double);
  const size_t align = options.huge_pages ? kHugePageBytes : 4096;
  AlignedPtr pa = aligned_alloc_bytes(size, align);
  AlignedPtr pb = aligned_alloc_bytes(size, align);
  AlignedPtr pc = aligned_alloc_bytes(size, align);
  if (!pa || !pb || !pc)
    return resource_exhausted("membench: cannot allocate 3 arrays of {} bytes", size);
  bool advised = options.huge_pages;  // and the kernel took it for all three
  if (options.huge_pages) {
    for (const AlignedPtr* p : {&pa, &pb, &pc})
      advised = advise_huge_pages(p->get(), size) && advised;
  }
  auto* a = static_cast<double*>(pa.get());
  auto* b = static_cast<double*>(pb.get());
  auto* c = static_cast<double*>(pc.get());

  // First touch by the thread that will use each chunk.
  pool.parallel_for(n, [&](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      a[i] = 0.0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
  });

  MemBandwidthResult r;
  r.array_bytes = size;
  r.threads = pool.size();
  r.runs = options.runs;
  r.huge_pages = advised;
  const double triad_bytes = 3.0 * static_cast<double>(size);
  for (int run = 0; run < options.runs; ++run) {
    const auto t0 = Clock::now();
    pool.parallel_for(n,
                      [&](int, int64_t begin, int64_t end) { triad_chunk(a, b, c, begin, end); });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) r.triad_gbps = std::max(r.triad_gbps, triad_bytes / s / 1e9);
  }
  // The result proves the stores happened: b + 3 c = 7 everywhere.
  for (int64_t i : {int64_t{0}, n / 2, n - 1}) {
    if (a[i] != 1.0 + kScalar * 2.0)
      return internal_error("membench: triad wrote {} at index {}, expected 7", a[i], i);
  }

  std::vector<uint64_t> sums(static_cast<size_t>(pool.size()), 0);
  const auto* words = reinterpret_cast<const uint64_t*>(a);
  uint64_t expected = 0;
  uint64_t seven = 0;
  const double seven_d = 7.0;
  std::memcpy(&seven, &seven_d, sizeof(seven));
  expected = seven * static_cast<uint64_t>(n);  // modulo 2^64, like the sums
  for (int run = 0; run < options.runs; ++run) {
    std::fill(sums.begin(), sums.end(), 0);
    const auto t0 = Clock::now();
    pool.parallel_for(n, [&](int t, int64_t begin, int64_t end) {
      sums[static_cast<size_t>(t)] = read_chunk(words, begin, end);
    });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    if (total != expected) return internal_error("membench: read sum mismatch");
    if (s > 0) r.read_gbps = std::max(r.read_gbps, static_cast<double>(size) / s / 1e9);
  }
  return r;
}

}  // namespace folio::tools
