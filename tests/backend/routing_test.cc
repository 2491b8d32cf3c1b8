// Op routing and weight placement follow capabilities, never names.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend/buffer_type.h"
#include "backend/cpu/cpu_backend.h"

namespace folio {
namespace {

// A backend that accepts only ops of one kind, counting runs.
class FakeBackend final : public Backend {
 public:
  FakeBackend(std::string name, OpKind accepts) : name_(std::move(name)), accepts_(accepts) {}
  std::string name() const override { return name_; }
  bool supports_op(const Op& op) const override { return op.kind == accepts_; }
  Status run(const Op& op) override {
    ++runs;
    return Status();
  }
  const BufferType& default_buffer_type() const override { return host_buffer_type(); }
  int runs = 0;

 private:
  std::string name_;
  OpKind accepts_;
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
  EXPECT_EQ(route_op({&a, &b, &c}, op), &b);
  EXPECT_EQ(route_op({&c, &b}, op), &c);
  EXPECT_EQ(route_op({&a}, op), nullptr);
  ASSERT_TRUE(run_routed({&a, &b}, op).ok());
  EXPECT_EQ(b.runs, 1);
  Status s = run_routed({&a}, op);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("scale"), std::string::npos);
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
