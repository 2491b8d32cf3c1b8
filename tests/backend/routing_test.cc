// Op routing and weight placement follow capabilities, never names.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend/buffer_type.h"
#include "backend/cpu/cpu_backend.h"

namespace folio {
namespace routing_test {

// A backend that accepts only ops of one kind, counting selections and runs.
class FakeBackend final : public Backend {
 public:
  FakeBackend(std::string name, OpKind accepts) : name_(std::move(name)), accepts_(accepts) {}
  std::string name() const override { return name_; }
  KernelHandle select_kernel(const Op& op) const override {
    ++selections;
    return op.kind == accepts_ ? &kernel_ : nullptr;
  }
  Status run_kernel(KernelHandle kernel, const Op& op) override {
    EXPECT_EQ(kernel, &kernel_);
    ++runs;
    return Status();
  }
  std::string kernel_name_of(KernelHandle kernel) const override {
    EXPECT_EQ(kernel, &kernel_);
    return name_ + ".kernel";
  }
  const BufferType& default_buffer_type() const override { return host_buffer_type(); }
  mutable int selections = 0;
  int runs = 0;

 private:
  std::string name_;
  OpKind accepts_;
  int kernel_ = 0;  // its address is the one handle this backend hands out
};

// A packed type that only takes q4_0 matrices consumed by mul_mat.
class PackedQ4Type final : public BufferType {
 public:
  std::string name() const override { return "packed"; }
  size_t alignment() const override { return 64; }
  bool is_host() const override { return true; }
  Result<std::unique_ptr<Buffer>> alloc(size_t size) const override {
    auto b = HostBuffer::create(size, this);
    if (!b.ok()) return b.status();
    return std::unique_ptr<Buffer>(std::move(b).value());
  }
  bool supports_weight(const WeightUse& w) const override {
    return w.dtype == DType::Q4_0 && w.consumer == OpKind::kMulMat && w.ne[1] % 8 == 0;
  }
};

Op scale_op(float* x, float* y, int n) {
  Op op;
  op.kind = OpKind::kScale;
  op.src[0] = TensorView::contiguous(x, DType::F32, {n});
  op.dst = TensorView::contiguous(y, DType::F32, {n});
  op.params = ScaleParams{2.0f, 1.0f};
  return op;
}

TEST(Routing, FirstBackendThatSupportsTheOpWins) {
  FakeBackend a("a", OpKind::kMulMat), b("b", OpKind::kScale), c("c", OpKind::kScale);
  float x[4] = {}, y[4] = {};
  Op op = scale_op(x, y, 4);
  EXPECT_EQ(route_op({&a, &b, &c}, op).backend, &b);
  EXPECT_EQ(route_op({&c, &b}, op).backend, &c);
  EXPECT_FALSE(route_op({&a}, op));
  EXPECT_EQ(route_op({&a}, op).kernel, nullptr);
  ASSERT_TRUE(run_routed({&a, &b}, op).ok());
  EXPECT_EQ(b.runs, 1);
  Status s = run_routed({&a}, op);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("scale"), std::string::npos);
}

TEST(Routing, EachRunSelectsTheKernelOnce) {
  FakeBackend a("a", OpKind::kMulMat), b("b", OpKind::kScale), c("c", OpKind::kScale);
  float x[4] = {}, y[4] = {};
  Op op = scale_op(x, y, 4);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(run_routed({&a, &b, &c}, op).ok());
    EXPECT_EQ(a.selections, i);  // asked once, refused
    EXPECT_EQ(b.selections, i);  // asked once, selected and run
    EXPECT_EQ(b.runs, i);
    EXPECT_EQ(c.selections, 0);  // never asked: b came first
  }
  // A route selected once runs that kernel without asking again.
  const RoutedOp r = route_op({&a, &b, &c}, op);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.backend->kernel_name_of(r.kernel), "b.kernel");
  ASSERT_TRUE(run_route(r, op).ok());
  ASSERT_TRUE(run_route(r, op).ok());
  EXPECT_EQ(b.selections, 4);
  EXPECT_EQ(b.runs, 5);
  // One op on one backend: also one selection per run.
  ASSERT_TRUE(b.run(op).ok());
  EXPECT_EQ(b.selections, 5);
  EXPECT_EQ(b.runs, 6);
}

TEST(Routing, InvalidOpsReachNoBackend) {
  FakeBackend b("b", OpKind::kScale);
  float x[4] = {}, y[3] = {};
  Op op = scale_op(x, y, 4);
  op.dst = TensorView::contiguous(y, DType::F32, {3});
  EXPECT_FALSE(route_op({&b}, op));
  EXPECT_EQ(run_routed({&b}, op).code(), StatusCode::kUnsupported);
  EXPECT_FALSE(b.supports_op(op));
  EXPECT_EQ(b.run(op).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.selections, 0);  // validation turned the op away before any selection
  EXPECT_EQ(b.runs, 0);
}

TEST(Placement, FirstBufferTypeThatAcceptsTheWeight) {
  PackedQ4Type packed;
  std::vector<const BufferType*> prio{&packed, &host_buffer_type()};
  WeightUse w{"blk.0.ffn_up.weight", DType::Q4_0, {4096, 64, 1, 1}, OpKind::kMulMat};
  EXPECT_EQ(*place_weight(prio, w), &packed);
  WeightUse norm{"blk.0.attn_norm.weight", DType::F32, {4096, 1, 1, 1}, OpKind::kMul};
  EXPECT_EQ(*place_weight(prio, norm), &host_buffer_type());
  WeightUse emb{"token_embd.weight", DType::Q4_0, {4096, 32000, 1, 1}, OpKind::kGetRows};
  EXPECT_EQ(*place_weight(prio, emb), &host_buffer_type());
  WeightUse odd{"x", DType::IQ2_XXS, {256, 8, 1, 1}, OpKind::kMulMat};
  auto r = place_weight(prio, odd);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos);
}

TEST(Validation, RejectsBadShapesWithAMessage) {
  float x[4] = {}, y[3] = {};
  Op op = scale_op(x, y, 4);
  op.dst = TensorView::contiguous(y, DType::F32, {3});
  Status s = validate_op(op);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shape mismatch"), std::string::npos);
  CpuBackend cpu;
  EXPECT_FALSE(cpu.supports_op(op));
  EXPECT_FALSE(cpu.run(op).ok());
  Op wrong_params = scale_op(x, x, 4);
  wrong_params.params = NoParams{};
  EXPECT_FALSE(validate_op(wrong_params).ok());
}

}  // namespace
}  // namespace folio
