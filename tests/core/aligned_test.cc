#include "core/aligned.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace folio {
namespace {

bool aligned_to(const void* p, size_t a) {
  return reinterpret_cast<uintptr_t>(p) % a == 0;
}

// The line starting with `key` in the /proc/self/smaps entry of the
// mapping that holds p, with a space appended ("" if none, as on kernels
// without the field or without smaps).
std::string smaps_line(const void* p, const std::string& key) {
  std::ifstream in("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = addr >= lo && addr < hi;
      continue;
    }
    if (inside && line.rfind(key, 0) == 0) return line + " ";
  }
  return "";
}

// The mapping's "THPeligible:" value (-1: no such line).
int thp_eligible(const void* p) {
  const std::string line = smaps_line(p, "THPeligible:");
  return line.empty() ? -1 : std::atoi(line.c_str() + 12);
}

std::string vm_flags(const void* p) {
  return smaps_line(p, "VmFlags:");
}

// Whether madvise(MADV_HUGEPAGE) reaches this process's kernel mappings: a
// fresh anonymous mapping advised directly gets the "hg" flag. Under
// qemu-user (the ARM lane) the emulator answers madvise without passing
// the advice on, and smaps shows the host's mappings.
bool madvise_reaches_the_kernel() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const size_t n = 2 * kHugePageBytes;
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const bool took =
      ::madvise(p, n, MADV_HUGEPAGE) == 0 && vm_flags(p).find(" hg ") != std::string::npos;
  ::munmap(p, n);
  return took;
#else
  return false;
#endif
}

// The kernel's THP mode: "always", "madvise", "never" or "" (no THP).
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string all;
  std::getline(in, all);
  const size_t a = all.find('['), b = all.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : all.substr(a + 1, b - a - 1);
}

class HugePages : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(unsetenv("FOLIO_HUGEPAGES"), 0); }
  void TearDown() override { unsetenv("FOLIO_HUGEPAGES"); }
};

TEST_F(HugePages, RequestFollowsTheEnvironment) {
  EXPECT_TRUE(huge_pages_requested());
  ASSERT_EQ(setenv("FOLIO_HUGEPAGES", "1", 1), 0);
  EXPECT_TRUE(huge_pages_requested());
  ASSERT_EQ(setenv("FOLIO_HUGEPAGES", "", 1), 0);
  EXPECT_TRUE(huge_pages_requested());
  ASSERT_EQ(setenv("FOLIO_HUGEPAGES", "0", 1), 0);
  EXPECT_FALSE(huge_pages_requested());
  EXPECT_FALSE(huge_pages_available());
}

TEST_F(HugePages, AvailableWhereTheKernelGivesThemOnRequest) {
  const std::string mode = thp_mode();
#if defined(__linux__)
  EXPECT_EQ(huge_pages_available(), mode == "always" || mode == "madvise") << "THP mode " << mode;
#else
  EXPECT_FALSE(huge_pages_available());
#endif
}

TEST_F(HugePages, LargeBuffersAreAlignedAndAdvised) {
  const size_t size = 2 * kHugePageBytes + 4096 + 7;
  AlignedPtr p = large_alloc_bytes(size);
  ASSERT_NE(p, nullptr);
  std::memset(p.get(), 0x5a, size);
  EXPECT_EQ(static_cast<unsigned char*>(p.get())[size - 1], 0x5a);
  if (!huge_pages_available()) {
    std::printf("no transparent huge pages here (THP mode '%s'): the buffer has ordinary pages\n",
                thp_mode().c_str());
    EXPECT_TRUE(aligned_to(p.get(), kDefaultAlignment));
    return;
  }
  EXPECT_TRUE(aligned_to(p.get(), kHugePageBytes));
  if (!madvise_reaches_the_kernel()) {
    std::printf(
        "madvise(MADV_HUGEPAGE) does not reach the kernel's mappings here (an emulator): "
        "the advice on the buffer is not observable\n");
    return;
  }
  EXPECT_NE(vm_flags(p.get()).find(" hg "), std::string::npos) << vm_flags(p.get());
  const int eligible = thp_eligible(p.get());
  ASSERT_NE(eligible, -1) << "/proc/self/smaps has no THPeligible line for the buffer";
  EXPECT_EQ(eligible, 1);
}

TEST_F(HugePages, DeclinedOrSmallBuffersAreOrdinary) {
  AlignedPtr small = large_alloc_bytes(kHugePageBytes - 64, 128);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(aligned_to(small.get(), 128));

  ASSERT_EQ(setenv("FOLIO_HUGEPAGES", "0", 1), 0);
  const size_t size = 3 * kHugePageBytes;
  AlignedPtr p = large_alloc_bytes(size, 256);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(aligned_to(p.get(), 256));
  std::memset(p.get(), 1, size);
  EXPECT_FALSE(advise_huge_pages(p.get(), size));
  // Under "madvise" only advised memory is eligible ("always": all of it).
  if (thp_mode() == "madvise") {
    const int eligible = thp_eligible(p.get());
    if (eligible != -1) {
      EXPECT_EQ(eligible, 0);
    }
  }
}

TEST_F(HugePages, ImpossibleRequestsFailCleanly) {
  EXPECT_EQ(large_alloc_bytes(SIZE_MAX - 16), nullptr);
  EXPECT_EQ(large_alloc_bytes(SIZE_MAX - kHugePageBytes / 2), nullptr);
  EXPECT_FALSE(advise_huge_pages(nullptr, kHugePageBytes));
  char byte = 0;
  EXPECT_FALSE(advise_huge_pages(&byte, 0));
  // Less than one whole page inside the range: nothing to advise.
  EXPECT_FALSE(advise_huge_pages(&byte, 1));
}

}  // namespace
}  // namespace folio
