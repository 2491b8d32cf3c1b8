// The Vulkan kernels' match and record functions without a device: each op
// goes through the kernel table (vulkan_kernels(): the first match of its
// kind, as the backend selects) and is recorded into a FakeRecorder, whose
// log says which shader, spec constants, parameters, tensors and workgroups
// the device would have run. The parameter bytes are read back through the
// shaders' own interface headers.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/op.h"
#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/attention_interface.h"
#include "backend/vulkan/shaders/elementwise_interface.h"
#include "backend/vulkan/shaders/mat_interface.h"
#include "backend/vulkan/shaders/norm_interface.h"
#include "backend/vulkan/shaders/recurrent_interface.h"
#include "backend/vulkan/shaders/rope_interface.h"
#include "backend/vulkan/shaders/sort_interface.h"
#include "vulkan_fake_recorder.h"

namespace folio::vulkan {
namespace vulkan_record_test {

struct NormShaderParams {
  FOLIO_VK_NORM_PARAMS
};
struct AddRmsNormShaderParams {
  FOLIO_VK_ADD_RMS_NORM_PARAMS
};
struct FlashAttnShaderParams {
  FOLIO_VK_FLASH_ATTN_PARAMS
};
struct RopeShaderParams {
  FOLIO_VK_ROPE_PARAMS
};
struct SlotCheckShaderParams {
  FOLIO_VK_SLOT_CHECK_PARAMS
};
struct GdnShaderParams {
  FOLIO_VK_GDN_PARAMS
};
struct SortShaderParams {
  FOLIO_VK_SORT_PARAMS
};

// Selects the kernel for `op` on r's device and records it; the kernel's name.
std::string record(FakeRecorder& r, const Op& op, Status* status = nullptr) {
  const KernelDef* k = select_vulkan_kernel(op, r.caps());
  if (k == nullptr) return "";
  const Status s = k->record(r, op);
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << k->name << ": " << s.to_string();
  }
  return k->name;
}

bool zero_desc(const TensorDesc& d) {
  const TensorDesc zero;
  return std::memcmp(&d, &zero, sizeof d) == 0;
}

Op rms_norm_op(FakeRecorder& r, int64_t ne0, int64_t rows) {
  Op op;
  op.kind = OpKind::kRmsNorm;
  op.src[0] = r.tensor(DType::F32, {ne0, rows});
  op.src[1] = r.tensor(DType::F32, {ne0});
  op.dst = r.tensor(DType::F32, {ne0, rows});
  op.params = RmsNormParams{1e-5f};
  return op;
}

TEST(VulkanRecord, SplitGroupsKeepsEachCountWithinTheDeviceLimit) {
  struct Case {
    uint64_t n;
    uint32_t x, y;
  };
  for (const Case& c : {Case{0, 1, 1}, Case{1, 1, 1}, Case{65535, 65535, 1}, Case{65536, 65535, 2},
                        Case{65535 * 3 + 1, 65535, 4}}) {
    uint32_t x = 0, y = 0;
    Recorder::split_groups(c.n, x, y);
    EXPECT_EQ(x, c.x) << c.n;
    EXPECT_EQ(y, c.y) << c.n;
  }
}

TEST(VulkanRecord, RmsNormTakesTheRowNormWorkgroupAsItsSpecConstant) {
  // Row length -> workgroup: the smallest power of two >= ne0 within [32, 256].
  const std::vector<std::pair<int64_t, uint32_t>> cases = {
      {1, 32}, {32, 32}, {33, 64}, {100, 128}, {256, 256}, {257, 256}, {4096, 256}};
  for (const auto& [ne0, want] : cases) {
    FakeRecorder r;
    const Op op = rms_norm_op(r, ne0, 3);
    EXPECT_EQ(record(r, op), "rms_norm");
    ASSERT_EQ(r.dispatches().size(), 1u);
    const RecordedDispatch& d = r.dispatches()[0];
    EXPECT_EQ(d.shader, "norm");
    EXPECT_EQ(d.spec, (std::vector<uint32_t>{want, kNormModeRms, 1u})) << ne0;
    EXPECT_EQ(d.total_groups(), 3u);  // one workgroup per row
    const auto p = d.params_as<NormShaderParams>();
    EXPECT_EQ(p.x.ne[0], static_cast<uint32_t>(ne0));
    EXPECT_EQ(p.w.nb[0], 4u);
    EXPECT_EQ(p.eps, 1e-5f);
    EXPECT_EQ(d.buffers, (std::vector<int>{0, 1, 2}));
  }
  // A device with smaller workgroups: the largest power of two it allows.
  FakeRecorder small;
  small.mutable_caps().max_workgroup_size = 100;
  EXPECT_EQ(record(small, rms_norm_op(small, 4096, 1)), "rms_norm");
  ASSERT_EQ(small.dispatches().size(), 1u);
  EXPECT_EQ(small.dispatches()[0].spec[0], 64u);
  // Below the smallest row-norm workgroup the op is declined.
  FakeRecorder tiny;
  tiny.mutable_caps().max_workgroup_size = 16;
  EXPECT_EQ(select_vulkan_kernel(rms_norm_op(tiny, 64, 1), tiny.caps()), nullptr);
}

TEST(VulkanRecord, L2NormBindsAPlaceholderForItsAbsentWeight) {
  FakeRecorder r;
  Op op;
  op.kind = OpKind::kL2Norm;
  op.src[0] = r.tensor(DType::F32, {40, 2});
  op.dst = r.tensor(DType::F32, {40, 2});
  op.params = NormParams{1e-6f};
  EXPECT_EQ(record(r, op), "l2_norm");
  ASSERT_EQ(r.dispatches().size(), 1u);
  const RecordedDispatch& d = r.dispatches()[0];
  EXPECT_EQ(d.spec, (std::vector<uint32_t>{64u, kNormModeL2, 0u}));
  EXPECT_TRUE(d.tensors[1].empty());
  EXPECT_EQ(d.buffers[1], -1);
  EXPECT_TRUE(zero_desc(d.params_as<NormShaderParams>().w));
}

TEST(VulkanRecord, AddRmsNormAndItsSandwichFusionShareOneRecordFunction) {
  FakeRecorder r;
  Op op;
  op.kind = OpKind::kAddRmsNorm;
  op.src[0] = r.tensor(DType::F32, {96, 2});
  op.src[1] = r.tensor(DType::F32, {96, 2});
  op.src[2] = r.tensor(DType::F32, {96});
  op.dst = r.tensor(DType::F32, {96, 2});
  op.dst2 = r.tensor(DType::F32, {96, 2});
  op.params = RmsNormParams{1e-6f};
  Op fused = op;
  fused.kind = OpKind::kRmsNormAddRmsNorm;
  fused.src[3] = r.tensor(DType::F32, {96});
  EXPECT_EQ(select_vulkan_kernel(op, r.caps())->record,
            select_vulkan_kernel(fused, r.caps())->record);
  EXPECT_EQ(record(r, op), "add_rms_norm");
  EXPECT_EQ(record(r, fused), "rms_norm_add_rms_norm");
  ASSERT_EQ(r.dispatches().size(), 2u);
  const RecordedDispatch &plain = r.dispatches()[0], &sandwich = r.dispatches()[1];
  EXPECT_EQ(plain.shader, "add_rms_norm");
  EXPECT_EQ(sandwich.shader, "rms_norm_add_rms_norm");
  for (const RecordedDispatch* d : {&plain, &sandwich}) {
    EXPECT_EQ(d->spec, (std::vector<uint32_t>{128u, 1u}));
    EXPECT_EQ(d->tensors.size(), 6u);
    EXPECT_EQ(d->total_groups(), 2u);
  }
  // b's norm weight: binding 5 and field wb, a placeholder and zeros without it.
  EXPECT_EQ(plain.buffers[3], -1);
  EXPECT_TRUE(zero_desc(plain.params_as<AddRmsNormShaderParams>().wb));
  EXPECT_EQ(sandwich.buffers[3], r.buffer_of(fused.src[3].data, 0));
  EXPECT_EQ(sandwich.params_as<AddRmsNormShaderParams>().wb.ne[0], 96u);
  EXPECT_EQ(plain.params_as<AddRmsNormShaderParams>().d2.ne[1], 2u);
}

// rms_norm_add: the sandwich shader without its last pass (spec NEXT 0),
// the sum in d2 and d bound to the same tensor, b's weight in wb.
TEST(VulkanRecord, RmsNormAddIsTheSandwichShaderWithoutItsNextNorm) {
  FakeRecorder r;
  Op op;
  op.kind = OpKind::kRmsNormAdd;
  op.src[0] = r.tensor(DType::F32, {96, 2});
  op.src[1] = r.tensor(DType::F32, {96, 2});
  op.src[2] = r.tensor(DType::F32, {96});
  op.dst = op.src[0];
  op.params = RmsNormParams{1e-6f};
  EXPECT_EQ(record(r, op), "rms_norm_add");
  ASSERT_EQ(r.dispatches().size(), 1u);
  const RecordedDispatch& d = r.dispatches()[0];
  EXPECT_EQ(d.shader, "rms_norm_add_rms_norm");
  EXPECT_EQ(d.spec, (std::vector<uint32_t>{128u, 0u, 0u}));
  EXPECT_EQ(d.total_groups(), 2u);
  ASSERT_EQ(d.buffers.size(), 6u);
  EXPECT_EQ(d.buffers[2], -1);  // no next norm weight
  EXPECT_EQ(d.buffers[3], r.buffer_of(op.src[2].data, 0));
  EXPECT_EQ(d.buffers[4], d.buffers[5]);
  const auto& p = d.params_as<AddRmsNormShaderParams>();
  EXPECT_EQ(std::memcmp(&p.d, &p.d2, sizeof p.d), 0);
  EXPECT_EQ(p.wb.ne[0], 96u);
}

TEST(VulkanRecord, LargeOpsSplitTheirWorkgroupsIntoXAndY) {
  {  // rms_norm: a workgroup per row
    FakeRecorder r;
    const int64_t rows = 200000;
    EXPECT_EQ(record(r, rms_norm_op(r, 4, rows)), "rms_norm");
    ASSERT_EQ(r.dispatches().size(), 1u);
    const RecordedDispatch& d = r.dispatches()[0];
    EXPECT_EQ(d.groups[0], 65535u);
    EXPECT_EQ(d.groups[1], 4u);  // ceil(200000 / 65535)
    EXPECT_EQ(d.groups[2], 1u);
  }
  {  // unary: kElementWorkgroup elements per workgroup (fake memory costs no RAM)
    FakeRecorder r;
    const int64_t n = int64_t{65535} * kElementWorkgroup + 1;
    Op op;
    op.kind = OpKind::kUnary;
    op.src[0] = r.tensor(DType::F32, {n});
    op.dst = op.src[0];
    op.params = UnaryParams{UnaryKind::kTanh};
    EXPECT_EQ(record(r, op), "unary");
    ASSERT_EQ(r.dispatches().size(), 1u);
    const RecordedDispatch& d = r.dispatches()[0];
    EXPECT_EQ(d.spec, (std::vector<uint32_t>{kActTanh}));
    EXPECT_EQ(d.groups[0], 65535u);
    EXPECT_EQ(d.groups[1], 2u);
  }
}

Op mul_mat_op(FakeRecorder& r, DType wtype, int64_t k, int64_t n, int64_t m) {
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = r.tensor(wtype, {k, n});
  op.src[1] = r.tensor(DType::F32, {k, m});
  op.dst = r.tensor(DType::F32, {n, m});
  return op;
}

TEST(VulkanRecord, MulMatTakesTheMatvecUpToItsColumnLimitAndTilesBeyond) {
  for (int64_t m = 1; m <= kMatVecMaxCols + 2; ++m) {
    FakeRecorder r;
    EXPECT_EQ(record(r, mul_mat_op(r, DType::F16, 512, 40, m)), "mul_mat");
    ASSERT_EQ(r.dispatches().size(), 1u);
    const RecordedDispatch& d = r.dispatches()[0];
    if (m <= kMatVecMaxCols) {
      EXPECT_EQ(d.shader, "mul_mat_vec") << m;
      EXPECT_EQ(d.spec[1], static_cast<uint32_t>(m));  // NCOLS
    } else {
      EXPECT_EQ(d.shader, "mul_mat") << m;
      EXPECT_EQ(d.total_groups(), 1u);  // one 64 x 64 tile
    }
    EXPECT_EQ(d.spec[0], static_cast<uint32_t>(DType::F16));
  }
}

TEST(VulkanRecord, Int8ProductsOnlyWithIntegerDotProductsAndTheirWeightTypes) {
  struct Case {
    DType w;
    bool integer_dot;
    const char* kernel;
  };
  for (const Case& c :
       {Case{DType::Q4_0, true, "mul_mat_q8"}, Case{DType::Q8_0, true, "mul_mat_q8"},
        Case{DType::Q4_0, false, "mul_mat"}, Case{DType::Q4_K, true, "mul_mat_q8"},
        Case{DType::NVFP4, true, "mul_mat_q8"}, Case{DType::Q8_K, true, "mul_mat"},
        Case{DType::F16, true, "mul_mat"}}) {
    FakeRecorder r;
    r.mutable_caps().integer_dot = c.integer_dot;
    for (int64_t m : {int64_t{1}, int64_t{20}}) {
      const KernelDef* k = select_vulkan_kernel(mul_mat_op(r, c.w, 256, 32, m), r.caps());
      ASSERT_NE(k, nullptr);
      EXPECT_STREQ(k->name, c.kernel) << dtype_name(c.w) << " m=" << m;  // never by column count
    }
  }
  // Both quantize x into scratch first (quant_act_q8, one invocation a
  // block), then decode runs the int8 matvec, prefill the tiles.
  FakeRecorder r;
  r.mutable_caps().integer_dot = true;
  const size_t column_bytes = (256 / kMatQ8Block) * kMatQ8BlockWords * 4;
  EXPECT_EQ(record(r, mul_mat_op(r, DType::Q4_0, 256, 32, 1)), "mul_mat_q8");
  ASSERT_EQ(r.dispatches().size(), 2u);
  EXPECT_EQ(r.dispatches()[0].shader, "quant_act_q8");
  EXPECT_EQ(r.dispatches()[0].spec[0], 0u);  // no norm
  EXPECT_EQ(r.dispatches()[1].shader, "mul_mat_vec_q8");
  EXPECT_EQ(r.dispatches()[0].buffers[1], r.dispatches()[1].buffers[1]);  // q: written, then read
  ASSERT_EQ(r.scratch_requests().size(), 1u);
  EXPECT_EQ(r.scratch_requests()[0], column_bytes);
  EXPECT_EQ(record(r, mul_mat_op(r, DType::Q4_0, 256, 32, 20)), "mul_mat_q8");
  ASSERT_EQ(r.dispatches().size(), 4u);
  EXPECT_EQ(r.dispatches()[2].shader, "quant_act_q8");
  EXPECT_EQ(r.dispatches()[3].shader, "mul_mat_q8");
  // 20 columns of 256 / 32 blocks of kMatQ8BlockWords words.
  ASSERT_EQ(r.scratch_requests().size(), 2u);
  EXPECT_EQ(r.scratch_requests()[1], 20u * column_bytes);
}

// The prefill tiles, float and int8, give each thread the device's rows
// (DeviceCaps::tile_rows) and take the workgroup those make of a 64 x 64
// tile: 256 threads at 4 rows, 64 at 8.
TEST(VulkanRecord, PrefillTilesTakeTheDevicesRowsAThread) {
  for (const uint32_t rows : {4u, 8u}) {
    const uint32_t threads = rows == 4 ? 256u : 64u;
    for (const DType w : {DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K}) {
      FakeRecorder r;
      r.mutable_caps().integer_dot = true;
      r.mutable_caps().tile_rows = rows;
      const bool int8 = w != DType::F16;
      EXPECT_EQ(record(r, mul_mat_op(r, w, 256, 32, 20)), int8 ? "mul_mat_q8" : "mul_mat");
      ASSERT_EQ(r.dispatches().size(), int8 ? 2u : 1u);
      const RecordedDispatch& tile = r.dispatches().back();
      const std::vector<uint32_t> want =
          int8 ? std::vector<uint32_t>{static_cast<uint32_t>(w), rows, threads}
               : std::vector<uint32_t>{static_cast<uint32_t>(w), 0u, rows, threads};
      EXPECT_EQ(tile.spec, want) << dtype_name(w) << " at " << rows << " rows";
    }
  }
}

// kRmsNormMulMat with the GLU: w [K, 2F] (gate rows, then up rows), x [K, M],
// norm weight [K], dst [F, M].
Op norm_glu_op(const TensorView& w, const TensorView& x, const TensorView& nw,
               const TensorView& dst) {
  Op op;
  op.kind = OpKind::kRmsNormMulMat;
  op.src[0] = w;
  op.src[1] = x;
  op.src[2] = nw;
  op.dst = dst;
  NormMulMatParams np;
  np.eps = 1e-5f;
  np.glu = true;
  op.params = np;
  return op;
}

// The int8 decode fusions quantize x first as well: kRmsNormMulMat's norm
// moves into quant_act_q8 (NORM, a workgroup of norm.comp's size a
// column), and the matvec reads the normalised blocks without its own
// prologue; kMulMatId's pairs read one quantization of each token's row
// through the matvec's ID mode.
TEST(VulkanRecord, Int8DecodeFusionsAndPairsReadQuantizedX) {
  FakeRecorder r;
  r.mutable_caps().integer_dot = true;
  const Op op = norm_glu_op(r.tensor(DType::Q4_0, {1024, 64}),  // gate rows, then up rows
                            r.tensor(DType::F32, {1024, 3}), r.tensor(DType::F32, {1024}),
                            r.tensor(DType::F32, {32, 3}));
  EXPECT_EQ(record(r, op), "rms_norm_mul_mat_q8");
  ASSERT_EQ(r.dispatches().size(), 2u);
  const RecordedDispatch &quant = r.dispatches()[0], &vec = r.dispatches()[1];
  EXPECT_EQ(quant.shader, "quant_act_q8");
  EXPECT_EQ(quant.spec[0], 1u);                                 // NORM
  EXPECT_EQ(quant.spec[1], norm_workgroup(1024, r.caps()));     // its workgroup
  EXPECT_EQ(quant.total_groups(), 3u);                          // a column each
  EXPECT_EQ(quant.buffers[2], r.buffer_of(op.src[2].data, 0));  // the norm weight
  EXPECT_EQ(vec.shader, "mul_mat_vec_q8");
  EXPECT_EQ(vec.spec[6], kMatGluGateFirst);
  EXPECT_EQ(vec.spec[7], 0u);  // no prologue: x came normalised
  EXPECT_EQ(vec.buffers[1], quant.buffers[1]);

  FakeRecorder ri;
  ri.mutable_caps().integer_dot = true;
  Op id;
  id.kind = OpKind::kMulMatId;
  id.src[0] = ri.tensor(DType::Q4_0, {256, 32, 8});  // 8 experts
  id.src[1] = ri.tensor(DType::F32, {256, 1, 2});    // 2 tokens
  id.src[2] = ri.tensor(DType::I32, {2, 2});         // 2 experts each
  id.dst = ri.tensor(DType::F32, {32, 2, 2});
  EXPECT_EQ(record(ri, id), "mul_mat_id_q8");
  ASSERT_EQ(ri.dispatches().size(), 2u);
  EXPECT_EQ(ri.dispatches()[0].shader, "quant_act_q8");
  EXPECT_EQ(ri.dispatches()[0].total_groups(), 1u);  // 2 rows of 8 blocks
  EXPECT_EQ(ri.dispatches()[1].shader, "mul_mat_vec_q8");
  EXPECT_EQ(ri.dispatches()[1].spec[3], 1u);  // ID
}

// A dispatch that writes the input of the next int8 decode product takes
// that product's quantization into its tail: a product's last workgroup
// (mul_mat_vec.glsl TAIL: normalised for a norm + product, plain for the
// others), flash attention's write pass (QOUT). The quantizer's dispatch
// goes, and the product reads the blocks the tail wrote. A product of
// anything else records the held dispatch as it was, then quantizes.
TEST(VulkanRecord, Int8ProductsTakeTheirInputFromTheWritersTail) {
  FakeRecorder r;
  r.mutable_caps().integer_dot = true;
  const TensorView res = r.tensor(DType::F32, {512, 1});  // the residual stream
  // Attention of one token, 8 heads of 64 over 2 KV heads, its output
  // read as [512, 1] by the output projection.
  Op fa;
  fa.kind = OpKind::kFlashAttn;
  fa.src[0] = r.tensor(DType::F32, {64, 8, 1});
  fa.src[1] = r.tensor(DType::F16, {64, 2, 256, 1});
  fa.src[2] = r.tensor(DType::F16, {64, 2, 256, 1});
  fa.src[3] = r.tensor(DType::I32, {1});
  fa.src[4] = r.tensor(DType::I32, {1});
  fa.src[5] = r.tensor(DType::I32, {1});
  fa.dst = r.tensor(DType::F32, {64, 8, 1});
  fa.params = AttentionParams{};
  EXPECT_EQ(record(r, fa), "flash_attn");
  Op o;
  o.kind = OpKind::kMulMatAdd;
  o.src[0] = r.tensor(DType::Q4_0, {512, 512});
  o.src[1] = TensorView::contiguous(fa.dst.data, DType::F32, {512, 1});
  o.src[2] = res;
  o.dst = res;
  EXPECT_EQ(record(r, o), "mul_mat_add_q8");
  const Op up = norm_glu_op(r.tensor(DType::Q4_0, {512, 256}), res,  // the FFN's norm, gate / up
                            r.tensor(DType::F32, {512}), r.tensor(DType::F32, {128, 1}));
  EXPECT_EQ(record(r, up), "rms_norm_mul_mat_q8");
  Op down;
  down.kind = OpKind::kMulMatAdd;
  down.src[0] = r.tensor(DType::Q4_0, {128, 512});
  down.src[1] = up.dst;
  down.src[2] = res;
  down.dst = res;
  EXPECT_EQ(record(r, down), "mul_mat_add_q8");
  const Op other = mul_mat_op(r, DType::Q4_0, 512, 64, 1);  // reads another x
  EXPECT_EQ(record(r, other), "mul_mat_q8");

  const std::vector<RecordedDispatch>& d = r.dispatches();
  std::vector<std::string> shaders;
  for (const RecordedDispatch& x : d) shaders.push_back(x.shader);
  ASSERT_EQ(shaders,
            (std::vector<std::string>{"flash_attn", "mul_mat_vec_q8", "mul_mat_vec_q8",
                                      "mul_mat_vec_q8", "quant_act_q8", "mul_mat_vec_q8"}));
  const RecordedDispatch &attn = d[0], &o_vec = d[1], &up_vec = d[2], &down_vec = d[3];
  const Result<TensorView> cnt = r.counter();
  ASSERT_TRUE(cnt.ok());
  EXPECT_EQ(attn.spec[10], 1u);                   // QOUT
  EXPECT_EQ(attn.buffers[10], o_vec.buffers[1]);  // its blocks are what o reads
  EXPECT_EQ(attn.descs[10].off, o_vec.descs[1].off);
  EXPECT_EQ(o_vec.spec[11], kMatTailNormQuant);  // normalised for the FFN's product
  EXPECT_EQ(o_vec.spec[8], norm_workgroup(512, r.caps()));
  EXPECT_EQ(o_vec.buffers[6], up_vec.buffers[1]);
  EXPECT_EQ(o_vec.descs[6].off, up_vec.descs[1].off);
  EXPECT_EQ(o_vec.buffers[7], r.buffer_of(cnt->data, 0));
  EXPECT_EQ(o_vec.buffers[8], r.buffer_of(up.src[2].data, 0));  // the norm weight
  EXPECT_EQ(up_vec.spec[11], kMatTailQuant);                    // the GLU output, for down
  EXPECT_EQ(up_vec.buffers[6], down_vec.buffers[1]);
  EXPECT_EQ(up_vec.buffers[8], -1);           // no norm
  EXPECT_EQ(down_vec.spec[11], kMatTailOff);  // the next product read another x
  for (const RecordedDispatch* v : {&o_vec, &up_vec, &down_vec}) EXPECT_EQ(v->tensors.size(), 9u);

  // Tails off (FOLIO_VULKAN_TAILS=0): each product quantizes its input.
  FakeRecorder off;
  off.mutable_caps().integer_dot = true;
  off.mutable_caps().output_tails = false;
  Op o2 = o;
  o2.src[0] = off.tensor(DType::Q4_0, {512, 512});
  o2.src[1] = off.tensor(DType::F32, {512, 1});
  o2.src[2] = o2.dst = off.tensor(DType::F32, {512, 1});
  const Op up2 = norm_glu_op(off.tensor(DType::Q4_0, {512, 256}), o2.dst,
                             off.tensor(DType::F32, {512}), off.tensor(DType::F32, {128, 1}));
  EXPECT_EQ(record(off, o2), "mul_mat_add_q8");
  EXPECT_EQ(record(off, up2), "rms_norm_mul_mat_q8");
  shaders.clear();
  for (const RecordedDispatch& x : off.dispatches()) shaders.push_back(x.shader);
  EXPECT_EQ(shaders, (std::vector<std::string>{"quant_act_q8", "mul_mat_vec_q8", "quant_act_q8",
                                               "mul_mat_vec_q8"}));
  EXPECT_EQ(off.dispatches()[1].spec[11], kMatTailOff);
}

// The decode matvecs' lanes a row (spec constant 2): one per 64-element
// chunk of the row, the int8 path's at most the device's q8_matvec_lanes;
// on a CPU device (cpu_threads > 0) halved while the workgroups (128 lanes
// each) stay at least four per thread, unless FOLIO_VULKAN_Q8_LANES fixed
// the int8 count (q8_lanes_fixed).
TEST(VulkanRecord, MatvecLanesFollowTheDeviceAndTheRowCount) {
  struct Case {
    int64_t k, n;
    uint32_t max_lanes, cpu_threads, lanes;
    bool fixed = false;
    DType w = DType::Q4_0;
  };
  for (const Case& c : {
           Case{2048, 2048, 32, 0, 32},                    // a GPU: 32 chunks, 32 lanes
           Case{256, 2048, 32, 0, 4},                      // a GPU, a short row: its 4 chunks
           Case{2048, 2048, 8, 2, 1},                      // 2 threads: 16 workgroups of 128 rows
           Case{2048, 1024, 8, 2, 1},                      // 8 workgroups: still four per thread
           Case{2048, 512, 8, 2, 2},                       // 1 lane would leave 4 workgroups
           Case{2048, 2048, 8, 32, 8},                     // 32 threads: 128 workgroups of 16 rows
           Case{2048, 2048, 8, 16, 4},                     // 16 threads: 64 workgroups of 32 rows
           Case{2048, 40, 8, 2, 8},                        // few rows: the device's most
           Case{5632, 2048, 16, 0, 16, true},              // FOLIO_VULKAN_Q8_LANES=16
           Case{5632, 2048, 16, 2, 16, true},              // the same on a CPU device: no halving
           Case{2048, 2048, 8, 0, 32, false, DType::F16},  // the float path: a lane a chunk
           Case{2048, 2048, 8, 2, 1, false, DType::F16},   // fewer on 2 threads
           Case{2048, 2048, 8, 16, 4, false, DType::F16},  // 64 workgroups of 32 rows
       }) {
    FakeRecorder r;
    r.mutable_caps().integer_dot = true;
    r.mutable_caps().q8_matvec_lanes = c.max_lanes;
    r.mutable_caps().cpu_threads = c.cpu_threads;
    r.mutable_caps().q8_lanes_fixed = c.fixed;
    const std::string what = fmt::format("{} K {} N {} lanes {} threads {}", dtype_name(c.w), c.k,
                                         c.n, c.max_lanes, c.cpu_threads);
    const bool int8 = c.w != DType::F16;
    EXPECT_EQ(record(r, mul_mat_op(r, c.w, c.k, c.n, 1)), int8 ? "mul_mat_q8" : "mul_mat") << what;
    ASSERT_EQ(r.dispatches().size(), int8 ? 2u : 1u) << what;  // int8: quant_act_q8 first
    const RecordedDispatch& d = r.dispatches().back();
    EXPECT_EQ(d.shader, int8 ? "mul_mat_vec_q8" : "mul_mat_vec") << what;
    EXPECT_EQ(d.spec[2], c.lanes) << what;
    EXPECT_EQ(d.total_groups(), static_cast<uint64_t>(c.n * c.lanes + 127) / 128) << what;
  }
}

// Flash attention of n_tokens tokens of one sequence over a contiguous F16
// cache of n_ctx positions, head dim 64, two heads.
Op flash_attn_op(FakeRecorder& r, int64_t n_tokens, int64_t n_ctx) {
  Op op;
  op.kind = OpKind::kFlashAttn;
  op.src[0] = r.tensor(DType::F32, {64, 2, n_tokens});
  op.src[1] = r.tensor(DType::F16, {64, 2, n_ctx, 1});
  op.src[2] = r.tensor(DType::F16, {64, 2, n_ctx, 1});
  op.src[3] = r.tensor(DType::I32, {n_tokens});
  op.src[4] = r.tensor(DType::I32, {n_tokens});
  op.src[5] = r.tensor(DType::I32, {1});
  op.dst = r.tensor(DType::F32, {64, 2, n_tokens});
  op.params = AttentionParams{};
  return op;
}

TEST(VulkanRecord, FlashAttentionSplitsLongCachesOfFewPairs) {
  // FOLIO_VULKAN_SPLIT_K=0 turns split-K off everywhere.
  const char* env = std::getenv("FOLIO_VULKAN_SPLIT_K");
  const bool split_on = env == nullptr || std::string(env) != "0";
  struct Case {
    int64_t n_tokens, n_ctx;
    uint32_t n_split;  // 0: one pass
  };
  for (const Case& c : {Case{1, 512, 0},                      // one 512-position piece
                        Case{1, 2048, 4},                     // four pieces
                        Case{3, 64 * 512 + 1, kFaMaxSplits},  // 65 pieces, at most 64 partials
                        Case{64, 4096, 0}}) {  // 128 (token, head) pairs: enough work
    FakeRecorder r;
    EXPECT_EQ(record(r, flash_attn_op(r, c.n_tokens, c.n_ctx)), "flash_attn");
    const uint32_t pairs = static_cast<uint32_t>(2 * c.n_tokens);
    const uint32_t n_split = split_on ? c.n_split : 0;
    if (n_split == 0) {
      ASSERT_EQ(r.dispatches().size(), 1u) << c.n_ctx;
      EXPECT_EQ(r.dispatches()[0].spec[8], kFaSplitNone);
      EXPECT_EQ(r.dispatches()[0].total_groups(), pairs);
      EXPECT_TRUE(r.scratch_requests().empty());
      continue;
    }
    ASSERT_EQ(r.dispatches().size(), 2u) << c.n_ctx;
    const RecordedDispatch &part = r.dispatches()[0], &combine = r.dispatches()[1];
    EXPECT_EQ(part.spec[8], kFaSplitPartials);
    EXPECT_EQ(part.groups[2], n_split);
    EXPECT_EQ(part.groups[0] * part.groups[1], pairs);
    EXPECT_EQ(combine.spec[8], kFaSplitCombine);
    EXPECT_EQ(combine.total_groups(), pairs);
    // Partials [DV + 2, n_split, pairs] in scratch, bound last in both passes.
    ASSERT_EQ(r.scratch_requests().size(), 1u);
    EXPECT_EQ(r.scratch_requests()[0], size_t{pairs} * n_split * (64 + 2) * 4);
    EXPECT_EQ(part.buffers[9], combine.buffers[9]);
    const auto p = part.params_as<FlashAttnShaderParams>();
    EXPECT_EQ(p.n_split, n_split);
    EXPECT_EQ(p.split_len, 512u);
    EXPECT_EQ(p.capacity, static_cast<uint32_t>(c.n_ctx));
    EXPECT_EQ(p.partials.ne[0], pairs * n_split * (64 + 2));
  }
}

// A workgroup takes several query heads of one KV head (the shader's GH,
// spec constant 9) while at least DeviceCaps::fa_min_workgroups workgroups
// remain: the largest power of two up to DeviceCaps::fa_max_heads that
// divides the heads per KV head and keeps each head's registers within 96
// floats in all and the workgroup's shared memory (partials, scores and
// weights of every head) within the device's; split-K passes take one.
TEST(VulkanRecord, FlashAttentionGroupsTheQueryHeadsOfAKvHead) {
  struct Case {
    int64_t d, n_head, n_kv_head, n_tokens, n_ctx;
    uint32_t min_workgroups, heads;
    uint32_t max_heads = 8;  // DeviceCaps::fa_max_heads
    uint32_t shared_bytes = 32768;  // DeviceCaps::max_shared_bytes
  };
  for (const Case& c : {
           Case{64, 8, 2, 512, 512, 1024, 4},      // group 4: all of it
           Case{64, 32, 4, 512, 512, 1024, 8},     // 12 floats a head: 8 fit
           Case{128, 32, 4, 512, 512, 1024, 4},    // 20 floats a head: 4 fit
           Case{576, 16, 1, 512, 512, 1024, 1},    // latent attention's rows: 1
           Case{64, 32, 4, 16, 512, 1024, 1},      // 512 workgroups: too few for a GPU
           Case{64, 32, 4, 16, 512, 16, 8},        // a CPU device's 16
           Case{64, 32, 4, 3, 512, 16, 4},         // 96 pairs: 4 heads leave 24
           Case{64, 12, 2, 512, 512, 1024, 2},     // group 6: 2 divides it, 4 does not
           Case{64, 8, 8, 512, 512, 1024, 1},      // no GQA
           Case{64, 32, 4, 1, 4096, 16, 1},        // split-K (32 pairs, 8 pieces)
           Case{64, 32, 4, 512, 512, 1024, 2, 2},  // FOLIO_VULKAN_FA_HEADS=2
           Case{64, 32, 4, 512, 512, 1024, 1, 1},  // FOLIO_VULKAN_FA_HEADS=1
           // Vulkan's least shared memory: 8 heads need 22596 bytes, 4 fit.
           Case{64, 32, 4, 512, 512, 1024, 4, 8, 16384},
       }) {
    DeviceCaps caps;
    caps.max_shared_bytes = c.shared_bytes;
    caps.fa_min_workgroups = c.min_workgroups;
    caps.fa_max_heads = c.max_heads;
    FakeRecorder r(caps);
    Op op;
    op.kind = OpKind::kFlashAttn;
    op.src[0] = r.tensor(DType::F32, {c.d, c.n_head, c.n_tokens});
    op.src[1] = r.tensor(DType::F16, {c.d, c.n_kv_head, c.n_ctx, 1});
    op.src[2] = r.tensor(DType::F16, {c.d, c.n_kv_head, c.n_ctx, 1});
    op.src[3] = r.tensor(DType::I32, {c.n_tokens});
    op.src[4] = r.tensor(DType::I32, {c.n_tokens});
    op.src[5] = r.tensor(DType::I32, {1});
    op.dst = r.tensor(DType::F32, {c.d, c.n_head, c.n_tokens});
    op.params = AttentionParams{};
    const std::string what = fmt::format("d {} heads {}/{} tokens {} min {}", c.d, c.n_head,
                                         c.n_kv_head, c.n_tokens, c.min_workgroups);
    EXPECT_EQ(record(r, op), "flash_attn") << what;
    ASSERT_FALSE(r.dispatches().empty()) << what;
    const RecordedDispatch& first = r.dispatches()[0];
    ASSERT_EQ(first.spec.size(), 11u) << what;
    EXPECT_EQ(first.spec[10], 0u) << what;  // QOUT: no int8 product took the output
    EXPECT_EQ(first.spec[9], c.heads) << what;
    EXPECT_EQ(uint64_t{first.groups[0]} * first.groups[1],
              static_cast<uint64_t>(c.n_head * c.n_tokens / c.heads))
        << what;
  }
}

TEST(VulkanRecord, RopeFillsItsAngleTableInTheParameters) {
  FakeRecorder r;
  Op op;
  op.kind = OpKind::kRope;
  op.src[0] = r.tensor(DType::F32, {64, 4, 3});
  op.src[1] = r.tensor(DType::I32, {3});
  op.dst = op.src[0];
  RopeParams rp;
  rp.mode = RopeMode::kNeox;
  rp.n_dims = 32;
  rp.freq_base = 10000.0f;
  op.params = rp;
  EXPECT_EQ(record(r, op), "rope");
  ASSERT_EQ(r.dispatches().size(), 1u);
  const RecordedDispatch& d = r.dispatches()[0];
  EXPECT_EQ(d.spec, (std::vector<uint32_t>{kRopeModeNeox, 0u}));
  // Work items: 16 pairs + 32 pass-through dims per (head, token) row.
  EXPECT_EQ(d.total_groups(), (48u * 12 + kElementWorkgroup - 1) / kElementWorkgroup);
  const auto p = d.params_as<RopeShaderParams>();
  EXPECT_EQ(p.n_dims, 32u);
  EXPECT_EQ(p.sec0 + p.sec1 + p.sec2 + p.sec3, 0u);
  EXPECT_EQ(p.mscale, 1.0f);
  EXPECT_EQ(p.coef[0], 1.0f);                            // base^0
  EXPECT_FLOAT_EQ(p.coef[8], static_cast<float>(0.01));  // 10000^(-16 / 32)
}

TEST(VulkanRecord, GatedDeltaNetUpdateChecksItsSlotsBeforeItsStep) {
  // 3 sequences, one token each, 2 heads of 128 x 128 states in a pool of 5 slots.
  FakeRecorder r;
  Op op;
  op.kind = OpKind::kGatedDeltaNetUpdate;
  for (int i : {0, 1, 2}) op.src[i] = r.tensor(DType::F32, {128, 2, 1, 3});
  op.src[3] = r.tensor(DType::F32, {2, 1, 3});
  op.src[4] = r.tensor(DType::F32, {2, 1, 3});
  op.src[5] = r.tensor(DType::F32, {128, 128, 2, 5});
  op.src[6] = r.tensor(DType::I32, {3});
  op.dst = r.tensor(DType::F32, {128, 2, 1, 3});
  op.dst2 = op.src[5];
  op.params = GatedDeltaNetParams{};
  EXPECT_EQ(record(r, op), "gated_delta_net_update");
  ASSERT_EQ(r.dispatches().size(), 2u);
  const RecordedDispatch &check = r.dispatches()[0], &step = r.dispatches()[1];
  EXPECT_EQ(check.shader, "state_slots_check");
  EXPECT_EQ(check.total_groups(), 1u);
  const auto cp = check.params_as<SlotCheckShaderParams>();
  EXPECT_EQ(cp.n_seq, 3u);
  EXPECT_EQ(cp.n_slots, 5u);
  EXPECT_EQ(cp.has_dst, 0u);
  EXPECT_EQ(check.buffers[1], -1);  // no explicit destinations
  EXPECT_EQ(step.shader, "gated_delta_net");
  // 64 invocations, 8 lanes of 16 elements per state row, UPDATE, vec4 rows.
  EXPECT_EQ(step.spec, (std::vector<uint32_t>{64u, 8u, 16u, 1u, 1u}));
  const auto gp = step.params_as<GdnShaderParams>();
  EXPECT_EQ(gp.row_blocks, 16u);  // 128 rows, 8 per workgroup
  EXPECT_EQ(step.total_groups(), 16u * 2 * 3);
  EXPECT_EQ(gp.state.ne[3], 5u);
  EXPECT_EQ(step.buffers[5], step.buffers[9]);  // the pool, read and written in place
}

TEST(VulkanRecord, TopKSortsRowsPaddedToAPowerOfTwo) {
  FakeRecorder r;
  Op op;
  op.kind = OpKind::kTopK;
  op.src[0] = r.tensor(DType::F32, {100, 3});
  op.dst = r.tensor(DType::I32, {5, 3});
  op.params = TopKParams{5};
  EXPECT_EQ(record(r, op), "top_k");
  ASSERT_EQ(r.dispatches().size(), 1u);
  const RecordedDispatch& d = r.dispatches()[0];
  EXPECT_EQ(d.shader, "argsort");
  // 64 invocations (one compare-exchange each of 128 / 2), N = 128, descending.
  EXPECT_EQ(d.spec, (std::vector<uint32_t>{64u, 128u, 1u}));
  EXPECT_EQ(d.params_as<SortShaderParams>().k, 5u);
  EXPECT_EQ(d.total_groups(), 3u);
}

TEST(VulkanRecord, TensorsOffAFourByteBoundaryAreAClearError) {
  FakeRecorder r;
  char* mem = r.alloc(256);
  Op op;
  op.kind = OpKind::kCpy;
  op.src[0] = TensorView::contiguous(mem + 2, DType::F32, {8});
  op.dst = TensorView::contiguous(mem + 128, DType::F32, {8});
  Status s;
  EXPECT_EQ(record(r, op, &s), "cpy");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.to_string().find("byte offset 2"), std::string::npos) << s.to_string();
  EXPECT_TRUE(r.dispatches().empty());

  Op sm;
  sm.kind = OpKind::kSoftMax;
  sm.src[0] = TensorView::contiguous(mem + 6, DType::F32, {4, 2});
  sm.dst = TensorView::contiguous(mem + 64, DType::F32, {4, 2});
  sm.params = SoftMaxParams{};
  EXPECT_EQ(record(r, sm, &s), "soft_max");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.to_string().find("byte offset 6"), std::string::npos) << s.to_string();
  EXPECT_TRUE(r.dispatches().empty());
}

TEST(VulkanRecord, TensorsOutsideDeviceMemoryAreRefused) {
  FakeRecorder r;
  std::vector<float> host(64);
  Op op = rms_norm_op(r, 32, 2);
  op.src[0] = TensorView::contiguous(host.data(), DType::F32, {32, 2});
  Status s;
  EXPECT_EQ(record(r, op, &s), "rms_norm");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(r.dispatches().empty());
}

TEST(VulkanRecord, TheFakeRefusesWhatTheBackendWouldRefuse) {
  FakeRecorder r;
  const TensorView x = r.tensor(DType::F32, {32});
  const uint32_t params[4] = {};
  Recorder& rec = r;  // dispatch()'s default workgroup counts
  // norm.comp binds x, w and d: two tensors leave a binding unfilled.
  EXPECT_FALSE(rec.dispatch("norm", {32u, 0u, 0u}, params, sizeof params, {x, x}, 1).ok());
  EXPECT_FALSE(rec.dispatch("no_such_shader", {}, params, sizeof params, {x}, 1).ok());
  EXPECT_FALSE(rec.dispatch("cpy", {}, params, sizeof params, {x, x}, 0).ok());
  EXPECT_FALSE(rec.dispatch("cpy", {}, params, sizeof params, {x, x}, 65536).ok());
  EXPECT_FALSE(rec.dispatch("cpy", {}, params, 6, {x, x}, 1).ok());
  EXPECT_TRUE(r.dispatches().empty());
  ASSERT_TRUE(rec.dispatch("cpy", {}, params, sizeof params, {x, x}, 1).ok());
  EXPECT_EQ(r.dispatches().size(), 1u);
}

}  // namespace vulkan_record_test
}  // namespace folio::vulkan
