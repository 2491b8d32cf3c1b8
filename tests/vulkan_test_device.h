// The Vulkan device tests run on (the best one: lavapipe on CI machines),
// opened once per test binary. Where none can be opened the tests skip with
// a `hardware:` reason, unless FOLIO_REQUIRE_VULKAN is set (scripts/test.sh
// sets it: lavapipe is always installable, so CI never skips them).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "backend/devices.h"

namespace folio::testing {

struct VulkanTestDevice {
  std::unique_ptr<Backend> backend;  // nullptr: none (see why)
  std::string why;
};

inline VulkanTestDevice& vulkan_test_device() {
  static VulkanTestDevice* d = [] {
    auto* v = new VulkanTestDevice();  // never destroyed: outlives every test's buffers
    Result<std::unique_ptr<Backend>> b = open_device("vulkan");
    if (b.ok()) v->backend = std::move(b).value();
    else v->why = b.status().message();
    return v;
  }();
  return *d;
}

inline bool vulkan_required() {
  const char* e = std::getenv("FOLIO_REQUIRE_VULKAN");
  return e != nullptr && e[0] != '\0' && std::string(e) != "0";
}

}  // namespace folio::testing

// In a test body: the device, or skip (fail when required).
#define FOLIO_VULKAN_OR_SKIP(var)                                                              \
  ::folio::Backend* var = ::folio::testing::vulkan_test_device().backend.get();                \
  if (var == nullptr) {                                                                        \
    if (::folio::testing::vulkan_required())                                                   \
      FAIL() << "FOLIO_REQUIRE_VULKAN is set but no Vulkan device opens: "                     \
             << ::folio::testing::vulkan_test_device().why;                                    \
    GTEST_SKIP() << "hardware: no Vulkan device (" << ::folio::testing::vulkan_test_device().why \
                 << "); install mesa-vulkan-drivers for lavapipe";                              \
  }
