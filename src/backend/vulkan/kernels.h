// Vulkan op kernels: how an Op becomes one or more compute dispatches.
//
// A kernel is a match function (can it run this op on this device?) and a
// record function (which shader, which tensors, which parameters, how many
// workgroups). Recording never waits: the dispatch joins the backend's
// current command buffer and runs when the backend next synchronizes (a
// readback, or the end of a step). It waits for earlier work only where it
// overlaps it (vk_hazards.h): each tensor's bytes [data, data + span) count
// as written when the shader's binding is not `readonly`, else as read, so a
// shader must touch nothing of a buffer outside the views it was given.
//
// Shader conventions (every shaders/*.comp follows them):
//   binding 0   params: a readonly std430 storage buffer, the per-dispatch
//               parameter struct. Its fields are written once, as a macro
//               in the shader family's interface header
//               (shaders/*_interface.h on shaders/interface.h), which the
//               shader expands in its block and the record function in
//               its C++ struct: 4-byte fields only,
//               TensorDesc for tensors, the struct's size and offsets
//               static_asserted against std430's. Constants both sides use
//               (workgroup sizes, mode / activation / dtype / error codes,
//               table bounds) live there too.
//   binding 1   errors: a std430 buffer { uint code; uint arg; } a shader sets
//               (atomicCompSwap from 0) when its data is invalid (an id out of
//               range); it then skips the read. The backend turns a non-zero
//               code into the Status of its next synchronize().
//   binding 2+i tensor i of the dispatch, bound as the whole device buffer
//               that holds it; the shader reads it at TensorDesc.off (bytes).
// Workgroup counts above 65535 are split by the caller into (x, y); shaders
// compute their linear group index as gl_WorkGroupID.y * gl_NumWorkGroups.x +
// gl_WorkGroupID.x and return when it is past their work.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/op.h"
#include "backend/vulkan/shaders/mat_interface.h"
#include "backend/vulkan/shaders/norm_interface.h"
#include "core/status.h"
#include "tensor/tensor_view.h"

namespace folio::vulkan {

// A tensor as a shader sees it (std430: nine uints). `off` is the byte
// offset of element 0 in the buffer bound for it; nb are byte strides.
struct TensorDesc {
  uint32_t off = 0;
  uint32_t ne[4] = {1, 1, 1, 1};
  uint32_t nb[4] = {0, 0, 0, 0};
};
static_assert(sizeof(TensorDesc) == 36);

// Device capabilities the kernels may choose variants by.
struct DeviceCaps {
  uint32_t subgroup_size = 32;
  uint32_t max_workgroup_size = 256;      // maxComputeWorkGroupInvocations (capped)
  uint32_t max_shared_bytes = 16384;      // maxComputeSharedMemorySize
  uint64_t max_storage_buffer_range = 1u << 27;
  bool fp16_arith = false;                // shaderFloat16
  bool int8_arith = false;                // shaderInt8
  bool integer_dot = false;               // shaderIntegerDotProduct (VK_KHR_shader_integer_dot_product, enabled)
  bool storage_16bit = false;             // storageBuffer16BitAccess
  bool cooperative_matrix = false;        // VK_KHR_cooperative_matrix
  bool push_descriptor = false;           // VK_KHR_push_descriptor (enabled when present)
  // The worker threads of a device that runs workgroups on CPU cores
  // (lavapipe); 0 on a GPU. There a decode matvec takes fewer lanes a row
  // (more rows a workgroup) while its workgroups still number at least
  // four per thread: a lane's share of a row's cross-lane reduction is
  // work on a CPU.
  uint32_t cpu_threads = 0;
  // The int8 decode matvec's most lanes a row (a power of two, at most
  // kMaxQ8MatvecLanes): more lanes give a long row more parallel loads,
  // fewer make each row's reduction cheaper. 32 on a GPU, 8 on a CPU
  // device (fewer by cpu_threads); FOLIO_VULKAN_Q8_LANES fixes it on any
  // device (q8_lanes_fixed: exactly that many, as far as the row's chunks
  // go).
  uint32_t q8_matvec_lanes = 32;
  bool q8_lanes_fixed = false;
  // Rows (and columns) of a 64 x 64 prefill tile (mul_mat.comp, the int8
  // tiles of mul_mat_q8_tile.glsl) each thread computes: 4 (256 threads) on
  // a GPU; 8 (64 threads) on a CPU device, where every shared-memory load
  // is a loop over the SIMD lanes and twice the outputs a load pays. The
  // same sums either way. FOLIO_VULKAN_TILE_ROWS (4 or 8) overrides the
  // device's choice.
  uint32_t tile_rows = 4;
  // A dispatch that writes the input of the next int8 decode product (a
  // product of one batch, flash attention) quantizes it for that product
  // in its tail (Recorder::hold, ops_matmul.cc), saving quant_act_q8's
  // dispatch and barrier; the same bits either way.
  // FOLIO_VULKAN_TAILS=0 turns it off (to time the difference).
  bool output_tails = true;
  // Flash attention gives a workgroup several query heads of one KV head
  // (sharing each tile's K/V loads), at most fa_max_heads (a power of two up
  // to kMaxFaHeads; FOLIO_VULKAN_FA_HEADS overrides it, 1: one head a
  // workgroup), and only while at least fa_min_workgroups workgroups
  // remain: about what keeps a GPU's cores full (1024), a few per core on a
  // CPU device (16).
  uint32_t fa_max_heads = 8;
  uint32_t fa_min_workgroups = 1024;
};

// The most q8_matvec_lanes may be: the GLU mode of the matvec needs two
// row slots in its workgroup.
inline constexpr uint32_t kMaxQ8MatvecLanes = kMatVecWorkgroup / 2;
// The most query heads a flash-attention workgroup takes.
inline constexpr uint32_t kMaxFaHeads = 8;

// A dispatch as dispatch() takes it, owned: what hold() keeps.
struct HeldDispatch {
  const char* shader = nullptr;  // a string literal
  std::vector<uint32_t> spec;
  std::vector<uint8_t> params;
  std::vector<TensorView> tensors;
  uint32_t groups[3] = {1, 1, 1};
};

// A dispatch of these arguments (the parameter bytes copied), to hold or
// to record.
inline HeldDispatch held_dispatch(const char* shader, std::vector<uint32_t> spec,
                                  const void* params, size_t params_bytes,
                                  std::span<const TensorView> tensors, uint32_t gx, uint32_t gy) {
  HeldDispatch d;
  d.shader = shader;
  d.spec = std::move(spec);
  const auto* bytes = static_cast<const uint8_t*>(params);
  d.params.assign(bytes, bytes + params_bytes);
  d.tensors.assign(tensors.begin(), tensors.end());
  d.groups[0] = gx;
  d.groups[1] = gy;
  return d;
}

// What a record function uses: tensor descriptors and dispatches. Tests
// record through a fake one without a device
// (tests/backend/vulkan_fake_recorder.h).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual const DeviceCaps& caps() const = 0;
  // Records one dispatch of shader `shader` (file stem under shaders/, e.g.
  // "add") with specialization constants `spec` (constant_id i = spec[i]),
  // the parameter struct `params` (binding 0), the tensors (binding 2 + i;
  // each in this device's memory, bound as the whole buffer holding it) and
  // groups (x, y, z). An empty view (data nullptr) stands for an absent
  // optional tensor: a placeholder buffer is bound and its desc() is zeros.
  Status dispatch(const char* shader, std::initializer_list<uint32_t> spec, const void* params,
                  size_t params_bytes, std::initializer_list<TensorView> tensors, uint32_t gx,
                  uint32_t gy = 1, uint32_t gz = 1) {
    return dispatch_spans(shader, {spec.begin(), spec.size()}, params, params_bytes,
                          {tensors.begin(), tensors.size()}, gx, gy, gz);
  }
  Status dispatch(const HeldDispatch& d) {
    return dispatch_spans(d.shader, d.spec, d.params.data(), d.params.size(), d.tensors,
                          d.groups[0], d.groups[1], d.groups[2]);
  }
  virtual Status dispatch_spans(const char* shader, std::span<const uint32_t> spec,
                                const void* params, size_t params_bytes,
                                std::span<const TensorView> tensors, uint32_t gx, uint32_t gy,
                                uint32_t gz) = 0;
  // A dispatch kept unrecorded so that the record function right after may
  // change it before it is recorded (the int8 decode products' output
  // tail, ops_matmul.cc): the next command of any kind (a dispatch, a
  // transfer, a submit, a scratch() that waits) records it first, as it
  // is; take_held() instead hands it to the caller, who must record it
  // (changed or not) before anything else. nullopt when none is held.
  virtual Status hold(HeldDispatch d) = 0;
  virtual std::optional<HeldDispatch> take_held() = 0;
  // One 32-bit word of device memory that reads 0 before every dispatch:
  // a dispatch may count its workgroups on it and must set it back to 0
  // before it ends (the output tails' last-workgroup count).
  virtual Result<TensorView> counter() = 0;
  // The descriptor of `t` for the parameter struct: its byte offset within
  // the buffer dispatch() binds for it, shape and strides; kInvalidArgument
  // if `t` is not in this device's memory, kUnsupported if its offsets or
  // strides exceed 32 bits.
  virtual Result<TensorDesc> desc(const TensorView& t) const = 0;
  // Device memory for a kernel's intermediate results: an F32 view of
  // ceil(bytes / 4) elements, contents undefined, for the dispatches the same
  // record function records after this call (it stays valid until the
  // backend next synchronizes; a later scratch() call may reuse it then).
  virtual Result<TensorView> scratch(size_t bytes) = 0;
  // Splits `n` workgroups into (x, y) with x <= 65535.
  static void split_groups(uint64_t n, uint32_t& x, uint32_t& y);
};

// Whether `v` fits the shaders' 32-bit counters and offsets.
inline bool fits_u32(int64_t v) {
  return v >= 0 && v <= static_cast<int64_t>(UINT32_MAX);
}

// The workgroup of the row-norm shaders (norm.comp, add_rms_norm.comp) for
// rows of ne0 elements: the smallest power of two >= ne0 from 32 to 256 (or
// the largest power of two within the device's limit). mul_mat_vec's NORM
// prologue sums as that workgroup does, so both must take it from here.
inline uint32_t norm_workgroup(int64_t ne0, const DeviceCaps& caps) {
  const uint32_t cap =
      caps.max_workgroup_size < kNormMaxWorkgroup ? caps.max_workgroup_size : kNormMaxWorkgroup;
  uint32_t b = kNormMinWorkgroup;
  while (b < ne0 && 2 * b <= cap) b *= 2;
  return b;
}

// A tensor the shader reads as 4-byte words must start on a word.
inline Status aligned4(const TensorDesc& d, const Op& op) {
  if (d.off % 4 == 0) return Status();
  return invalid_argument("{}: a 4-byte tensor at byte offset {}", op.describe(), d.off);
}

// One kernel: ops of `kind` for which match() is true.
struct KernelDef {
  const char* name;  // "mul_mat.q4_K.matvec": shows in profiles and the parity harness
  OpKind kind;
  bool (*match)(const Op& op, const DeviceCaps& caps);
  Status (*record)(Recorder& r, const Op& op);
};

// The kernel table, in selection order (narrower variants before general
// ones). Each ops_*.cc contributes its kernels through one of these.
// activation.glsl's code of a GLU's activation (glu.comp's and the decode
// matvec's GLU epilogue; kSwiGluOai has none: the caller declines it).
uint32_t glu_activation_code(GluKind kind);
void add_elementwise_kernels(std::vector<KernelDef>& out);  // ops_elementwise.cc: add, mul, scale, cpy, unary, glu
void add_norm_kernels(std::vector<KernelDef>& out);         // ops_norm.cc: rms_norm, add_rms_norm, l2_norm, rms_norm_add_rms_norm
void add_rope_kernels(std::vector<KernelDef>& out);         // ops_rope.cc: rope, rope_set_rows
void add_sort_kernels(std::vector<KernelDef>& out);         // ops_sort.cc: top_k, argsort
void add_moe_kernels(std::vector<KernelDef>& out);          // ops_moe.cc: moe_route, moe_sum
void add_matmul_kernels(std::vector<KernelDef>& out);       // ops_matmul.cc: get_rows, mul_mat(_q8), mul_mat_id(_q8), mul_mat_glu(_q8), mul_mat_add(_q8), rms_norm_mul_mat(_q8)
void add_attention_kernels(std::vector<KernelDef>& out);    // ops_attention.cc: flash_attn, set_rows, soft_max
void add_recurrent_kernels(std::vector<KernelDef>& out);    // ops_recurrent.cc: ssm_conv, gated_delta_net, +_update, ssm_scan
const std::vector<KernelDef>& vulkan_kernels();

// Output tails (an int8 decode product's input quantized by the dispatch
// that writes it, ops_matmul.cc's tail_held_product): flash attention's,
// in its held write pass. Sets `h` to also write x (its output, viewed
// as the product's input) into q as quant_act_q8 would; false where `h`
// is not such a pass or does not write exactly x.
Result<bool> flash_attn_output_tail(Recorder& r, HeldDispatch& h, const TensorView& x,
                                    const TensorView& q);

}  // namespace folio::vulkan
