#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/fp16.h"
#include "core/thread_pool.h"

namespace folio {
namespace set_rows_test {

struct SetRowsFixture {
  std::vector<float> rows;
  std::vector<int32_t> slots;
  std::vector<uint16_t> table;
  Op op;

  SetRowsFixture(std::vector<int32_t> s, int64_t n_slots) : slots(std::move(s)) {
    const int64_t n = static_cast<int64_t>(slots.size());
    rows.resize(static_cast<size_t>(4 * n));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = 0.5f * static_cast<float>(i) + 0.25f;
    table.assign(static_cast<size_t>(4 * n_slots), 0x7777);
    op.kind = OpKind::kSetRows;
    op.src[0] = TensorView::contiguous(rows.data(), DType::F32, {4, n});
    op.src[1] = TensorView::contiguous(slots.data(), DType::I32, {n});
    op.dst = TensorView::contiguous(table.data(), DType::F16, {4, n_slots});
  }
};

TEST(SetRows, ScattersAndConverts) {
  SetRowsFixture f({3, 0}, 5);
  CpuBackend cpu;
  ASSERT_TRUE(cpu.run(f.op).ok());
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(f.table[3 * 4 + c], f32_to_f16(f.rows[c]));
    EXPECT_EQ(f.table[0 * 4 + c], f32_to_f16(f.rows[4 + c]));
    EXPECT_EQ(f.table[1 * 4 + c], 0x7777);  // untouched
  }
}

// On the reference and on the machine's best tier (a SIMD kernel where
// the CPU has one), alone and with threads.
TEST(SetRows, BadSlotIsAnErrorAndWritesNothing) {
  ThreadPool pool(2);
  for (const CpuBackendOptions& o :
       {CpuBackendOptions{Isa::kAmx, true, nullptr}, CpuBackendOptions{Isa::kAmx, false, nullptr},
        CpuBackendOptions{Isa::kAmx, false, &pool}}) {
    CpuBackend cpu(o);
    SetRowsFixture f({1, 5}, 5);
    Status s = cpu.run(f.op);
    ASSERT_FALSE(s.ok()) << cpu.name();
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
    EXPECT_NE(s.message().find("slot 5"), std::string::npos);
    for (uint16_t v : f.table) EXPECT_EQ(v, 0x7777);
    SetRowsFixture neg({-1}, 5);
    EXPECT_FALSE(cpu.run(neg.op).ok()) << cpu.name();
  }
}

}  // namespace
}  // namespace folio
