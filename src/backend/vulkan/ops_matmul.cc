// Matrix kernels: get_rows, mul_mat, mul_mat_id on weights of every plain
// GGUF format folio computes with (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K ... Q8_K, IQ4_NL, IQ4_XS, MXFP4, NVFP4; dequantization in
// shaders/dequant.glsl, the DType id passed as spec constant 0). Packed layouts (Q4_0_X16 ...) are
// the CPU's: declined.
//
//   get_rows.comp     one thread per 8 elements of an output row.
//   mul_mat_vec.comp  M <= kMatVecMaxCols activation columns (decode): the
//                     lanes of a row take its 64-element chunks, partials
//                     added in chunk order through shared memory.
//   mul_mat.comp      more columns (prefill): 64 x 64 output tiles, weights
//                     dequantized into shared memory once per K step.
// Both sum in the one order of shaders/mul_mat_sum.glsl, so an output column
// has the same bits whichever shader computes it and whatever other columns
// (or mul_mat_id tokens and experts) share the op: a sequence's logits do
// not change when its decode step joins a prefill batch.
// mul_mat_glu (decode: M <= kMatVecMaxCols; SwiGLU, GeGLU or GeGLU-erf, not
// swiglu_oai) is mul_mat_vec in its GLU mode: the gate and up rows of one
// output row in one workgroup, act(gate) * up written by it; bit for bit
// mul_mat followed by glu.
// mul_mat_add (kMulMatAdd) and rms_norm_mul_mat (kRmsNormMulMat, with or
// without the GLU) are mul_mat_vec with the residual added in its epilogue
// or the rms norm computed in its prologue: bit for bit the composition.
// The int8 path (kernels "*_q8"; a device with integer dot products, weights
// Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0, Q2_K ... Q6_K, IQ4_NL / IQ4_XS, MXFP4,
// NVFP4; 2-D products and mul_mat_id): activations quantized per 32
// elements as the CPU's Q8_0 activation rows, exact integer dot products per
// block, K-quant sub-scales applied as integers within it, NVFP4's two
// UE4M3 scales per half in float (shaders/mul_mat_q8.glsl). quant_act_q8
// quantizes x once into scratch memory (for kRmsNormMulMat normalising it
// first, in place of the matvec's prologue); then decode (and the three
// fusions) runs mul_mat_vec_q8, prefill mul_mat_q8; both sum in one
// order, so batch invariance holds as on the float path. Whether a
// product takes it depends on the device and the weight only, never on the
// column count; elsewhere the float shaders run.
// mul_mat_id on the float path uses either shader in its ID mode:
// mul_mat_vec (one column per (u, t) pair) while the pairs per expert are
// few, mul_mat (pairs grouped by expert in shared memory) once they average
// kTiledPairsPerExpert. On the int8 path (mul_mat_id_q8) quant_act_q8 first
// quantizes x [K, X1, T] into scratch memory, so each token's row is
// quantized once whichever experts read it; then, chosen the same way,
// mul_mat_vec_q8's ID mode (one workgroup per row block and pair) or
// mul_mat_id_q8 (mul_mat.comp's expert grouping around mul_mat_q8.comp's
// tile), both in
// mul_mat_q8.glsl's order: a pair's output has the same bits in either.
//
// Requirements checked by match(): weight rows contiguous (nb[0] = block
// bytes, as every weight is), F32 activations / outputs with nb[0] = 4 and
// 4-byte multiple strides, I32 ids with 4-byte multiple strides; everything
// else goes through the strides. Ids are range-checked in the shaders.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/elementwise_interface.h"
#include "backend/vulkan/shaders/mat_interface.h"

namespace folio::vulkan {
namespace {

constexpr int64_t kTiledPairsPerExpert = 4;  // mul_mat_id: tiled from this average on

bool vk_weight_type(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q8_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4:
    case DType::NVFP4:
      return true;
    default:
      return false;
  }
}

// Strides and shape the shaders address with 32-bit word indices.
bool words_ok(const TensorView& t) {
  for (int i = 0; i < kMaxDims; ++i) {
    if (t.nb[i] % 4 != 0 || t.ne[i] > UINT32_MAX) return false;
  }
  return t.nb[0] == 4;
}

bool weight_ok(const TensorView& w) {
  return vk_weight_type(w.dtype) && w.nb[0] == type_size(w.dtype) &&
         w.ne[0] % block_size(w.dtype) == 0;
}

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

Status aligned(const TensorDesc& d, const char* what) {
  if (d.off % 4 != 0) {
    return internal_error("vulkan mul_mat: {} at byte offset {} is not 4-byte aligned", what,
                          d.off);
  }
  return Status();
}

// ------------------------------------------------------------------ get_rows

// Binding 0 of get_rows: three std430 Tensors back to back.
struct GetRowsParams {
  FOLIO_VK_GET_ROWS_PARAMS
};
static_assert(sizeof(GetRowsParams) == 3 * sizeof(TensorDesc));
static_assert(offsetof(GetRowsParams, ids) == 36 && offsetof(GetRowsParams, d) == 72);

bool match_get_rows(const Op& op, const DeviceCaps&) {
  const TensorView &t = op.src[0], &ids = op.src[1], &d = op.dst;
  if (!weight_ok(t) || ids.dtype != DType::I32 || d.dtype != DType::F32) return false;
  if (!words_ok(ids) || !words_ok(d) || t.ne[2] * t.ne[3] != 1) return false;
  // One thread per 8 output elements, counted in 32 bits.
  const uint64_t threads = static_cast<uint64_t>(ids.nelements()) * ((t.ne[0] + 7) / 8);
  return threads < (uint64_t{1} << 32) - 256;
}

Status record_get_rows(Recorder& r, const Op& op) {
  const TensorView &t = op.src[0], &ids = op.src[1];
  if (op.dst.nelements() == 0) return Status();
  GetRowsParams p;
  FOLIO_ASSIGN_OR_RETURN(p.t, r.desc(t));
  FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(ids));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_RETURN_IF_ERROR(aligned(p.ids, "ids"));
  FOLIO_RETURN_IF_ERROR(aligned(p.d, "dst"));
  const uint64_t threads = static_cast<uint64_t>(ids.nelements()) * ((t.ne[0] + 7) / 8);
  uint32_t gx, gy;
  Recorder::split_groups((threads + 255) / 256, gx, gy);
  return r.dispatch("get_rows", {static_cast<uint32_t>(t.dtype)}, &p, sizeof p, {t, ids, op.dst},
                    gx, gy);
}

// ------------------------------------------------------- mul_mat, mul_mat_id

// Binding 0 of mul_mat_vec and mul_mat: four std430 Tensors back to back.
struct MatParams {
  FOLIO_VK_MAT_PARAMS
};
static_assert(sizeof(MatParams) == 10 * sizeof(TensorDesc) + 8);
static_assert(offsetof(MatParams, x) == 36 && offsetof(MatParams, d) == 72 &&
              offsetof(MatParams, ids) == 108 && offsetof(MatParams, nw) == 144 &&
              offsetof(MatParams, r) == 180 && offsetof(MatParams, q) == 216 &&
              offsetof(MatParams, eps) == 252 && offsetof(MatParams, qo) == 256 &&
              offsetof(MatParams, nw2) == 292 && offsetof(MatParams, cnt) == 328 &&
              offsetof(MatParams, eps2) == 364);

// The float path's products, whatever the device.
bool mul_mat_ok(const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1], &d = op.dst;
  return weight_ok(w) && x.dtype == DType::F32 && d.dtype == DType::F32 && words_ok(x) &&
         words_ok(d);
}

// Whether kMulMat (or a decode fusion of it) takes the int8 path on this
// device: by the weight and the device, never by the column count, so a
// sequence's product is the same alone or in a batch.
bool int8_path(const Op& op, const DeviceCaps& caps) {
  const TensorView &w = op.src[0], &x = op.src[1];
  switch (w.dtype) {
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4:
    case DType::NVFP4:
      break;
    default:
      return false;
  }
  return caps.integer_dot && w.ne[2] * w.ne[3] == 1 && x.ne[2] * x.ne[3] == 1;
}

// Whether kMulMatId takes the int8 path: the weight types of the 2-D path
// (int8_path() asked about one expert's matrix against one token's
// column), by the weight and the device only, like it.
bool int8_id_path(const Op& op, const DeviceCaps& caps) {
  Op one = op;
  one.src[0].ne[2] = 1;
  one.src[1].ne[1] = one.src[1].ne[2] = 1;
  return int8_path(one, caps);
}

bool match_mul_mat(const Op& op, const DeviceCaps& caps) {
  return mul_mat_ok(op) && !int8_path(op, caps);
}

bool match_mul_mat_q8(const Op& op, const DeviceCaps& caps) {
  return mul_mat_ok(op) && int8_path(op, caps);
}

bool mul_mat_id_ok(const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1], &ids = op.src[2], &d = op.dst;
  // At most 3-D (the CPU reports anything else as an error).
  if (w.ne[3] != 1 || x.ne[3] != 1 || ids.ne[2] != 1 || ids.ne[3] != 1 || d.ne[3] != 1) {
    return false;
  }
  return weight_ok(w) && x.dtype == DType::F32 && d.dtype == DType::F32 &&
         ids.dtype == DType::I32 && words_ok(x) && words_ok(d) && words_ok(ids);
}

bool match_mul_mat_id(const Op& op, const DeviceCaps& caps) {
  return mul_mat_id_ok(op) && !int8_id_path(op, caps);
}

bool match_mul_mat_id_q8(const Op& op, const DeviceCaps& caps) {
  return mul_mat_id_ok(op) && int8_id_path(op, caps);
}

// The decode matvecs' most lanes per row (mul_mat_vec.glsl; the sums are
// the same whatever the count): one per kMatSumChunk-element chunk of the
// row (rounded up to a power of two), at most `most` (longer rows take
// several rounds of chunks).
uint32_t threads_per_row(int64_t k, uint32_t most = kMatVecWorkgroup) {
  const uint64_t chunks = static_cast<uint64_t>((k + kMatSumChunk - 1) / kMatSumChunk);
  return static_cast<uint32_t>(
      std::min<uint64_t>(std::bit_ceil(std::max<uint64_t>(chunks, 1)), most));
}

// `tpr` lanes a row, on a CPU device (caps.cpu_threads > 0) halved while the
// dispatch's workgroups, `rows` rows (times `copies`: a mul_mat_id's pairs)
// over kMatVecWorkgroup / lanes a workgroup, stay at least four per device
// thread.
uint32_t fewer_lanes_on_cpu(uint32_t tpr, int64_t rows, uint64_t copies, const DeviceCaps& caps) {
  const uint64_t enough = 4 * uint64_t{caps.cpu_threads};
  auto groups = [&](uint32_t t) {
    const uint64_t per_group = kMatVecWorkgroup / t;
    return (static_cast<uint64_t>(rows) + per_group - 1) / per_group * copies;
  };
  while (caps.cpu_threads > 0 && tpr > 1 && groups(tpr / 2) >= enough) tpr /= 2;
  return tpr;
}

// mul_mat_vec_q8's lanes per row: at most the device's q8_matvec_lanes
// (a row of more chunks takes several rounds), fewer on a CPU device as on
// the float path; a count fixed by FOLIO_VULKAN_Q8_LANES is taken as it
// is.
uint32_t q8_threads_per_row(int64_t k, int64_t rows, const DeviceCaps& caps) {
  const uint32_t most = threads_per_row(k, caps.q8_matvec_lanes);
  return caps.q8_lanes_fixed ? most : fewer_lanes_on_cpu(most, rows, 1, caps);
}

// The lanes per row of `op`'s matvec before a CPU device's halving: what
// decides whether the GLU mode (two row slots a workgroup) takes the
// product, so that the choice of kernel is the same on every device.
uint32_t matvec_most_lanes(const Op& op, const DeviceCaps& caps) {
  const int64_t k = op.src[0].ne[0];
  return int8_path(op, caps) ? threads_per_row(k, caps.q8_matvec_lanes) : threads_per_row(k);
}

// The lanes per row of the matvec that `op` records (src[0]: the weights,
// K x rows).
uint32_t matvec_tpr(const Op& op, const DeviceCaps& caps) {
  const TensorView& w = op.src[0];
  return int8_path(op, caps) ? q8_threads_per_row(w.ne[0], w.ne[1], caps)
                             : fewer_lanes_on_cpu(threads_per_row(w.ne[0]), w.ne[1], 1, caps);
}

// mul_mat_vec's X16 and W16: whether x rows (F32 / F16 / BF16 weight rows)
// all start 16-byte aligned in their buffers, so the shader may read them
// 16 bytes at a time; W16 for a legacy block type: its rows start 4-byte
// aligned, so a two-block chunk is whole words (dequant.glsl, legacy_pair).
uint32_t x16(const MatParams& p) {
  return (p.x.off | p.x.nb[1] | p.x.nb[2] | p.x.nb[3]) % 16 == 0 ? 1u : 0u;
}

uint32_t w16(const MatParams& p, DType w) {
  const bool plain = w == DType::F32 || w == DType::F16 || w == DType::BF16;
  const bool legacy = w == DType::Q4_0 || w == DType::Q4_1 || w == DType::Q5_0 ||
                      w == DType::Q5_1 || w == DType::Q8_0;
  const uint64_t bits = p.w.off | p.w.nb[1] | p.w.nb[2] | p.w.nb[3];
  return (plain && bits % 16 == 0) || (legacy && bits % 4 == 0) ? 1u : 0u;
}

// The prefill tiles' rows a thread (DeviceCaps::tile_rows) and the
// workgroup they make.
uint32_t tile_rows(const DeviceCaps& caps) {
  return caps.tile_rows == 8 ? 8u : 4u;
}
uint32_t tile_workgroup(const DeviceCaps& caps) {
  const uint32_t side = kMatTile / tile_rows(caps);
  return side * side;
}

// mul_mat.comp's spec constants: TYPE, ID, the rows a thread and the
// workgroup.
std::array<uint32_t, 4> float_tile_spec(const DeviceCaps& caps, DType w, uint32_t id) {
  return {static_cast<uint32_t>(w), id, tile_rows(caps), tile_workgroup(caps)};
}

Status fill_params(Recorder& r, const Op& op, bool with_ids, MatParams& p) {
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_RETURN_IF_ERROR(aligned(p.x, "input"));
  FOLIO_RETURN_IF_ERROR(aligned(p.d, "dst"));
  if (with_ids) {
    FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(op.src[2]));
    FOLIO_RETURN_IF_ERROR(aligned(p.ids, "ids"));
  } else {
    p.ids = p.x;  // binding 5 is the input again; mul_mat never reads it
  }
  return Status();
}

Status record_mul_mat(Recorder& r, const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1];
  if (op.dst.nelements() == 0) return Status();
  MatParams p{};
  FOLIO_RETURN_IF_ERROR(fill_params(r, op, false, p));
  const uint32_t type = static_cast<uint32_t>(w.dtype);
  const uint64_t n = w.ne[1], m = x.ne[1], batches = x.ne[2] * x.ne[3];
  uint32_t gx, gy;
  if (m <= kMatVecMaxCols) {
    const uint32_t tpr = fewer_lanes_on_cpu(threads_per_row(w.ne[0]), w.ne[1], batches, r.caps());
    const uint64_t rows_per_group = kMatVecWorkgroup / tpr;
    Recorder::split_groups((n + rows_per_group - 1) / rows_per_group * batches, gx, gy);
    return r.dispatch("mul_mat_vec", {type, u32(m), tpr, 0u, x16(p), w16(p, w.dtype)}, &p, sizeof p,
                      {w, x, op.dst, x, {}, {}}, gx, gy);
  }
  Recorder::split_groups((n + kMatTile - 1) / kMatTile * ((m + kMatTile - 1) / kMatTile) * batches, gx, gy);
  const std::array<TensorView, 4> tensors{w, x, op.dst, x};
  return r.dispatch_spans("mul_mat", float_tile_spec(r.caps(), w.dtype, 0u), &p, sizeof p, tensors,
                          gx, gy, 1);
}

// Binding 0 of quant_act_q8.
struct QuantActParams {
  FOLIO_VK_QUANT_ACT_PARAMS
};
static_assert(sizeof(QuantActParams) == 3 * sizeof(TensorDesc) + 4);

// Binding 0 of mul_mat_q8.
struct MatQ8Params {
  FOLIO_VK_MATQ8_PARAMS
};
static_assert(sizeof(MatQ8Params) == 4 * sizeof(TensorDesc));
static_assert(offsetof(MatQ8Params, x) == 36 && offsetof(MatQ8Params, d) == 72 &&
              offsetof(MatQ8Params, q) == 108);

// quant_act_q8's blocks of x [K, M, B2, B3], and their bytes for one
// column of k elements and for all of x.
int64_t q8_blocks(const TensorView& x) {
  return x.ne[0] / kMatQ8Block * x.ne[1] * x.ne[2] * x.ne[3];
}
int64_t q8_column_bytes(int64_t k) {
  return k / kMatQ8Block * kMatQ8BlockWords * 4;
}
int64_t q8_bytes(const TensorView& x) {
  return q8_blocks(x) * kMatQ8BlockWords * 4;
}

// quant_act_q8: x F32 [K, M, B2, B3] into q (q8_bytes(x) of scratch
// memory), one invocation a block; with a norm weight `nw` (kRmsNormMulMat,
// one batch) one workgroup a column, of norm.comp's size, normalising it
// first.
Status record_quant_act(Recorder& r, const TensorView& x, const TensorView& q,
                        const TensorView& nw = {}, float eps = 0.0f) {
  QuantActParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.q, r.desc(q));
  FOLIO_RETURN_IF_ERROR(aligned(p.x, "input"));
  uint32_t gx, gy;
  if (nw.empty()) {
    Recorder::split_groups((static_cast<uint64_t>(q8_blocks(x)) + 255) / 256, gx, gy);
    return r.dispatch("quant_act_q8", {0u, 256u}, &p, sizeof p, {x, q, {}}, gx, gy);
  }
  FOLIO_ASSIGN_OR_RETURN(p.nw, r.desc(nw));
  FOLIO_RETURN_IF_ERROR(aligned(p.nw, "norm weight"));
  p.eps = eps;
  Recorder::split_groups(static_cast<uint64_t>(x.ne[1]), gx, gy);
  return r.dispatch("quant_act_q8", {1u, norm_workgroup(x.ne[0], r.caps())}, &p, sizeof p,
                    {x, q, nw}, gx, gy);
}

// ---- The int8 decode matvec (mul_mat_vec_q8) and its output tail.

// Its spec constants in full (mul_mat_vec.glsl's constant_id 0 .. 11):
// those given, then the shader's defaults, so a tail can set its own.
constexpr size_t kQ8MatvecSpecs = 12;
constexpr size_t kSpecNormB = 8, kSpecTail = 11;
std::vector<uint32_t> q8_matvec_spec(std::initializer_list<uint32_t> given) {
  std::vector<uint32_t> s = {0u,         1u, 32u, 0u,         0u,       0u,
                             kMatGluOff, 0u, 32u, kMatAddOff, kActSilu, kMatTailOff};
  std::copy(given.begin(), given.end(), s.begin());
  return s;
}

// Records an int8 decode product: bindings 2 .. 7 as given, then the
// tail's qo, cnt and nw2 (empty). A product of one batch is held
// (Recorder::hold): when the next record function quantizes this output
// for its own product, it gives this one the tail instead
// (tail_held_product), and the quantizer's dispatch goes.
Status record_q8_matvec(Recorder& r, std::vector<uint32_t> spec, const MatParams& p,
                        std::initializer_list<TensorView> tensors, uint32_t gx, uint32_t gy,
                        bool one_batch) {
  HeldDispatch d = held_dispatch("mul_mat_vec_q8", std::move(spec), &p, sizeof p,
                                 {tensors.begin(), tensors.size()}, gx, gy);
  d.tensors.resize(9);
  if (one_batch && r.caps().output_tails) return r.hold(std::move(d));
  return r.dispatch(d);
}

// Quantizes x into q (and normalises it with nw, eps when given) in the
// tail of the held dispatch that writes x, when there is one (the command
// right before): an int8 decode product's (TAIL) or, without a norm,
// flash attention's write pass (QOUT). Otherwise records the held
// dispatch as it is and returns false: the caller quantizes.
Result<bool> tail_held_product(Recorder& r, const TensorView& x, const TensorView& q,
                               const TensorView& nw, float eps) {
  std::optional<HeldDispatch> h = r.take_held();
  if (!h) return false;
  if (nw.empty() && x.ne[2] * x.ne[3] == 1) {
    FOLIO_ASSIGN_OR_RETURN(const bool attn, flash_attn_output_tail(r, *h, x, q));
    if (attn) {
      FOLIO_RETURN_IF_ERROR(r.dispatch(*h));
      return true;
    }
  }
  const TensorView& out = h->tensors[2];
  const bool fits = std::strcmp(h->shader, "mul_mat_vec_q8") == 0 &&
                    h->spec.size() == kQ8MatvecSpecs && h->spec[kSpecTail] == kMatTailOff &&
                    h->params.size() == sizeof(MatParams) && out.data == x.data &&
                    out.dtype == x.dtype && out.ne == x.ne && out.nb == x.nb &&
                    x.ne[0] % kMatQ8Block == 0 && x.ne[2] * x.ne[3] == 1 &&
                    (nw.empty() || norm_workgroup(x.ne[0], r.caps()) <= kMatNormMaxWorkgroup);
  if (!fits) {
    FOLIO_RETURN_IF_ERROR(r.dispatch(*h));
    return false;
  }
  MatParams p;
  std::memcpy(&p, h->params.data(), sizeof p);
  FOLIO_ASSIGN_OR_RETURN(const TensorView cnt, r.counter());
  FOLIO_ASSIGN_OR_RETURN(p.qo, r.desc(q));
  FOLIO_ASSIGN_OR_RETURN(p.cnt, r.desc(cnt));
  h->spec[kSpecTail] = kMatTailQuant;
  h->tensors[6] = q;
  h->tensors[7] = cnt;
  if (!nw.empty()) {
    FOLIO_ASSIGN_OR_RETURN(p.nw2, r.desc(nw));
    FOLIO_RETURN_IF_ERROR(aligned(p.nw2, "norm weight"));
    p.eps2 = eps;
    h->spec[kSpecTail] = kMatTailNormQuant;
    h->spec[kSpecNormB] = norm_workgroup(x.ne[0], r.caps());
    h->tensors[8] = nw;
  }
  std::memcpy(h->params.data(), &p, sizeof p);
  FOLIO_RETURN_IF_ERROR(r.dispatch(*h));
  return true;
}

// Binding 3 of a decode matvec (and p.q): x itself on the float path; on
// the int8 path x quantized first, normalised when a norm weight is given:
// by the tail of the product that wrote x where that is the held dispatch,
// else by quant_act_q8; its blocks in scratch memory.
Result<TensorView> matvec_input(Recorder& r, const Op& op, MatParams& p, const TensorView& nw = {},
                                float eps = 0.0f) {
  const TensorView& x = op.src[1];
  if (!int8_path(op, r.caps())) return x;
  FOLIO_ASSIGN_OR_RETURN(const TensorView q, r.scratch(static_cast<size_t>(q8_bytes(x))));
  FOLIO_ASSIGN_OR_RETURN(const bool tailed, tail_held_product(r, x, q, nw, eps));
  if (!tailed) FOLIO_RETURN_IF_ERROR(record_quant_act(r, x, q, nw, eps));
  FOLIO_ASSIGN_OR_RETURN(p.q, r.desc(q));
  return q;
}

// Quantized activations of one prefill dispatch pair at most (larger
// products go in pieces of columns).
constexpr int64_t kQ8ScratchBytes = int64_t{32} << 20;

Status record_mul_mat_q8(Recorder& r, const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1];
  if (op.dst.nelements() == 0) return Status();
  const uint32_t type = static_cast<uint32_t>(w.dtype);
  const int64_t k = w.ne[0], n = w.ne[1], m = x.ne[1];
  uint32_t gx, gy;
  if (m <= kMatVecMaxCols) {
    MatParams p{};
    FOLIO_RETURN_IF_ERROR(fill_params(r, op, false, p));
    FOLIO_ASSIGN_OR_RETURN(const TensorView q, matvec_input(r, op, p));
    const uint32_t tpr = q8_threads_per_row(k, n, r.caps());
    const uint64_t rows_per_group = kMatVecWorkgroup / tpr;
    Recorder::split_groups((n + rows_per_group - 1) / rows_per_group, gx, gy);
    return record_q8_matvec(r, q8_matvec_spec({type, u32(m), tpr, 0u, 0u, w16(p, w.dtype)}), p,
                            {w, q, op.dst, q, {}, {}}, gx, gy, x.ne[2] * x.ne[3] == 1);
  }
  const int64_t col_bytes = q8_column_bytes(k);
  const int64_t piece =
      std::max<int64_t>(kMatTile, kQ8ScratchBytes / col_bytes / kMatTile * kMatTile);
  FOLIO_ASSIGN_OR_RETURN(const TensorView q, r.scratch(static_cast<size_t>(
                                                 std::min(piece, m) * col_bytes)));
  for (int64_t c0 = 0; c0 < m; c0 += piece) {
    TensorView xs = x, ds = op.dst;
    xs.ne[1] = ds.ne[1] = std::min(piece, m - c0);
    xs.data = static_cast<char*>(x.data) + c0 * x.nb[1];
    ds.data = static_cast<char*>(op.dst.data) + c0 * op.dst.nb[1];
    MatQ8Params p{};
    FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(w));
    FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(xs));
    FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(ds));
    FOLIO_ASSIGN_OR_RETURN(p.q, r.desc(q));
    FOLIO_RETURN_IF_ERROR(aligned(p.d, "dst"));
    FOLIO_RETURN_IF_ERROR(record_quant_act(r, xs, q));
    Recorder::split_groups((n + kMatTile - 1) / kMatTile * ((xs.ne[1] + kMatTile - 1) / kMatTile),
                           gx, gy);
    FOLIO_RETURN_IF_ERROR(r.dispatch("mul_mat_q8",
                                     {type, tile_rows(r.caps()), tile_workgroup(r.caps())}, &p,
                                     sizeof p, {w, q, ds}, gx, gy));
  }
  return Status();
}

// kMulMatGlu: the GLU mode needs two row slots per workgroup (lanes per
// row at most half the workgroup: rows up to 64 chunks of K).
bool mul_mat_glu_ok(const Op& op, const DeviceCaps& caps) {
  const TensorView &w = op.src[0], &x = op.src[1];
  return mul_mat_ok(op) && op.p<GluParams>().kind != GluKind::kSwiGluOai &&
         w.ne[2] * w.ne[3] == 1 && x.ne[2] * x.ne[3] == 1 && x.ne[1] <= kMatVecMaxCols &&
         matvec_most_lanes(op, caps) <= kMatVecWorkgroup / 2;
}

bool match_mul_mat_glu(const Op& op, const DeviceCaps& caps) {
  return mul_mat_glu_ok(op, caps) && !int8_path(op, caps);
}

bool match_mul_mat_glu_q8(const Op& op, const DeviceCaps& caps) {
  return mul_mat_glu_ok(op, caps) && int8_path(op, caps);
}

Status record_mul_mat_glu(Recorder& r, const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1];
  if (op.dst.nelements() == 0) return Status();
  MatParams p{};
  FOLIO_RETURN_IF_ERROR(fill_params(r, op, false, p));
  FOLIO_ASSIGN_OR_RETURN(const TensorView in, matvec_input(r, op, p));
  const uint32_t tpr = matvec_tpr(op, r.caps());
  const uint64_t outputs_per_group = kMatVecWorkgroup / tpr / 2;
  const uint32_t glu = op.p<GluParams>().swapped ? kMatGluUpFirst : kMatGluGateFirst;
  uint32_t gx, gy;
  Recorder::split_groups((op.dst.ne[0] + outputs_per_group - 1) / outputs_per_group, gx, gy);
  const uint32_t act = glu_activation_code(op.p<GluParams>().kind);
  if (int8_path(op, r.caps())) {
    return record_q8_matvec(r,
                            q8_matvec_spec({static_cast<uint32_t>(w.dtype), u32(x.ne[1]), tpr, 0u,
                                            0u, w16(p, w.dtype), glu, 0u, 32u, 0u, act}),
                            p, {w, in, op.dst, in, {}, {}}, gx, gy, true);
  }
  return r.dispatch("mul_mat_vec",
                    {static_cast<uint32_t>(w.dtype), u32(x.ne[1]), tpr, 0u, x16(p), w16(p, w.dtype),
                     glu, 0u, 32u, 0u, act},
                    &p, sizeof p, {w, in, op.dst, in, {}, {}}, gx, gy);
}

Status record_mul_mat_id(Recorder& r, const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1], &ids = op.src[2];
  if (op.dst.nelements() == 0) return Status();
  MatParams p{};
  FOLIO_RETURN_IF_ERROR(fill_params(r, op, true, p));
  const uint32_t type = static_cast<uint32_t>(w.dtype);
  const uint64_t n = w.ne[1], n_exp = w.ne[2];
  const uint64_t pairs = static_cast<uint64_t>(ids.ne[0] * ids.ne[1]);
  uint32_t gx, gy;
  if (pairs < kTiledPairsPerExpert * n_exp) {
    const uint32_t tpr = fewer_lanes_on_cpu(threads_per_row(w.ne[0]), w.ne[1], pairs, r.caps());
    const uint64_t rows_per_group = kMatVecWorkgroup / tpr;
    Recorder::split_groups((n + rows_per_group - 1) / rows_per_group * pairs, gx, gy);
    return r.dispatch("mul_mat_vec", {type, 1u, tpr, 1u, x16(p), w16(p, w.dtype)}, &p, sizeof p,
                      {w, x, op.dst, ids, {}, {}}, gx, gy);
  }
  Recorder::split_groups((n + kMatTile - 1) / kMatTile * n_exp, gx, gy);
  const std::array<TensorView, 4> tensors{w, x, op.dst, ids};
  return r.dispatch_spans("mul_mat", float_tile_spec(r.caps(), w.dtype, 1u), &p, sizeof p, tensors,
                          gx, gy, 1);
}

// Binding 0 of mul_mat_id_q8.
struct MatQ8IdParams {
  FOLIO_VK_MATQ8_ID_PARAMS
};
static_assert(sizeof(MatQ8IdParams) == 5 * sizeof(TensorDesc));
static_assert(offsetof(MatQ8IdParams, q) == 108 && offsetof(MatQ8IdParams, ids) == 144);

// kMulMatId on the int8 path: quant_act_q8 quantizes x [K, X1, T] once
// (each token's row once, whichever experts read it), then the decode
// matvec in its ID mode (one workgroup per row block and pair) or the
// expert-grouped tiles, chosen as on the float path. Larger batches go in
// pieces of tokens, so the scratch stays within kQ8ScratchBytes.
Status record_mul_mat_id_q8(Recorder& r, const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1], &ids = op.src[2];
  if (op.dst.nelements() == 0) return Status();
  const uint32_t type = static_cast<uint32_t>(w.dtype);
  const int64_t k = w.ne[0], n = w.ne[1], n_exp = w.ne[2], n_tok = x.ne[2];
  const int64_t tok_bytes = q8_column_bytes(k) * x.ne[1];
  const int64_t piece = std::max<int64_t>(1, kQ8ScratchBytes / tok_bytes);
  FOLIO_ASSIGN_OR_RETURN(const TensorView q,
                         r.scratch(static_cast<size_t>(std::min(piece, n_tok) * tok_bytes)));
  for (int64_t t0 = 0; t0 < n_tok; t0 += piece) {
    const int64_t count = std::min(piece, n_tok - t0);
    TensorView xs = x, is = ids, ds = op.dst;
    xs.ne[2] = is.ne[1] = ds.ne[2] = count;
    xs.data = static_cast<char*>(x.data) + t0 * x.nb[2];
    is.data = static_cast<char*>(ids.data) + t0 * ids.nb[1];
    ds.data = static_cast<char*>(op.dst.data) + t0 * op.dst.nb[2];
    MatQ8IdParams p{};
    FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(w));
    FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(xs));
    FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(ds));
    FOLIO_ASSIGN_OR_RETURN(p.q, r.desc(q));
    FOLIO_ASSIGN_OR_RETURN(p.ids, r.desc(is));
    FOLIO_RETURN_IF_ERROR(aligned(p.d, "dst"));
    FOLIO_RETURN_IF_ERROR(aligned(p.ids, "ids"));
    FOLIO_RETURN_IF_ERROR(record_quant_act(r, xs, q));
    const uint64_t pairs = static_cast<uint64_t>(is.ne[0] * count);
    uint32_t gx, gy;
    if (pairs < static_cast<uint64_t>(kTiledPairsPerExpert * n_exp)) {
      MatParams vp{};  // the matvec's binding 0: the same tensors
      vp.w = p.w;
      vp.x = p.x;
      vp.d = p.d;
      vp.ids = p.ids;
      vp.q = p.q;
      const uint32_t tpr = fewer_lanes_on_cpu(threads_per_row(k), n, pairs, r.caps());
      const uint64_t rows_per_group = kMatVecWorkgroup / tpr;
      Recorder::split_groups((n + rows_per_group - 1) / rows_per_group * pairs, gx, gy);
      FOLIO_RETURN_IF_ERROR(
          record_q8_matvec(r, q8_matvec_spec({type, 1u, tpr, 1u, 0u, w16(vp, w.dtype)}), vp,
                           {w, q, ds, is, {}, {}}, gx, gy, false));
    } else {
      Recorder::split_groups((n + kMatTile - 1) / kMatTile * n_exp, gx, gy);
      FOLIO_RETURN_IF_ERROR(r.dispatch("mul_mat_id_q8",
                                       {type, tile_rows(r.caps()), tile_workgroup(r.caps())}, &p,
                                       sizeof p, {w, q, ds, is}, gx, gy));
    }
  }
  return Status();
}

// ---- Device fusions on the decode matvec: kMulMatAdd (the residual add
// in its epilogue, spec ADD; with a gate, kMatAddGated, the gate's sigmoid
// and scale before it) and kRmsNormMulMat (the norm in its prologue, spec
// NORM with norm.comp's workgroup, with or without the GLU mode).

bool mul_mat_add_ok(const Op& op, const DeviceCaps& caps) {
  const TensorView &w = op.src[0], &x = op.src[1], &res = op.src[2], &gate = op.src[3];
  return mul_mat_ok(op) && w.ne[2] * w.ne[3] == 1 && x.ne[2] * x.ne[3] == 1 &&
         x.ne[1] <= kMatVecMaxCols && res.dtype == DType::F32 && words_ok(res) &&
         (gate.empty() || (gate.dtype == DType::F32 && words_ok(gate)));
}

bool match_mul_mat_add(const Op& op, const DeviceCaps& caps) {
  return mul_mat_add_ok(op, caps) && !int8_path(op, caps);
}

bool match_mul_mat_add_q8(const Op& op, const DeviceCaps& caps) {
  return mul_mat_add_ok(op, caps) && int8_path(op, caps);
}

Status record_mul_mat_add(Recorder& r, const Op& op) {
  const TensorView &w = op.src[0], &x = op.src[1], &res = op.src[2], &gate = op.src[3];
  if (op.dst.nelements() == 0) return Status();
  MatParams p{};
  FOLIO_RETURN_IF_ERROR(fill_params(r, op, false, p));
  FOLIO_ASSIGN_OR_RETURN(p.r, r.desc(res));
  FOLIO_RETURN_IF_ERROR(aligned(p.r, "residual"));
  if (!gate.empty()) {  // the gate column in the norm weight's binding
    FOLIO_ASSIGN_OR_RETURN(p.nw, r.desc(gate));
    FOLIO_RETURN_IF_ERROR(aligned(p.nw, "gate"));
  }
  FOLIO_ASSIGN_OR_RETURN(const TensorView in, matvec_input(r, op, p));
  const uint32_t tpr = matvec_tpr(op, r.caps());
  const uint64_t rows_per_group = kMatVecWorkgroup / tpr;
  uint32_t gx, gy;
  Recorder::split_groups((w.ne[1] + rows_per_group - 1) / rows_per_group, gx, gy);
  const uint32_t add = gate.empty() ? kMatAddPlain : kMatAddGated;
  if (int8_path(op, r.caps())) {
    return record_q8_matvec(r,
                            q8_matvec_spec({static_cast<uint32_t>(w.dtype), u32(x.ne[1]), tpr, 0u,
                                            0u, w16(p, w.dtype), kMatGluOff, 0u, 32u, add}),
                            p, {w, in, op.dst, in, gate, res}, gx, gy, true);
  }
  return r.dispatch("mul_mat_vec",
                    {static_cast<uint32_t>(w.dtype), u32(x.ne[1]), tpr, 0u, x16(p), w16(p, w.dtype),
                     kMatGluOff, 0u, 32u, add},
                    &p, sizeof p, {w, in, op.dst, in, gate, res}, gx, gy);
}

// The norm's workgroup must be one the prologue emulates (a power of two
// up to kMatNormMaxWorkgroup: norm_workgroup gives no other).
bool rms_norm_mul_mat_ok(const Op& op, const DeviceCaps& caps) {
  const auto& np = op.p<NormMulMatParams>();
  const TensorView &w = op.src[0], &x = op.src[1], &nw = op.src[2];
  const bool glu_ok = !np.glu || (np.glu_params.kind != GluKind::kSwiGluOai &&
                                  matvec_most_lanes(op, caps) <= kMatVecWorkgroup / 2);
  return mul_mat_ok(op) && glu_ok && w.ne[2] * w.ne[3] == 1 &&
         x.ne[2] * x.ne[3] == 1 && x.ne[1] <= kMatVecMaxCols && nw.dtype == DType::F32 &&
         nw.is_contiguous() && caps.max_workgroup_size >= 32 &&
         norm_workgroup(x.ne[0], caps) <= kMatNormMaxWorkgroup;
}

bool match_rms_norm_mul_mat(const Op& op, const DeviceCaps& caps) {
  return rms_norm_mul_mat_ok(op, caps) && !int8_path(op, caps);
}

bool match_rms_norm_mul_mat_q8(const Op& op, const DeviceCaps& caps) {
  return rms_norm_mul_mat_ok(op, caps) && int8_path(op, caps);
}

Status record_rms_norm_mul_mat(Recorder& r, const Op& op) {
  const auto& np = op.p<NormMulMatParams>();
  const TensorView &w = op.src[0], &x = op.src[1], &nw = op.src[2];
  if (op.dst.nelements() == 0) return Status();
  MatParams p{};
  FOLIO_RETURN_IF_ERROR(fill_params(r, op, false, p));
  const uint32_t tpr = matvec_tpr(op, r.caps());
  const uint64_t outputs_per_group = kMatVecWorkgroup / tpr / (np.glu ? 2 : 1);
  const uint32_t glu = !np.glu                 ? kMatGluOff
                       : np.glu_params.swapped ? kMatGluUpFirst
                                               : kMatGluGateFirst;
  const uint32_t act = np.glu ? glu_activation_code(np.glu_params.kind) : 0u;
  uint32_t gx, gy;
  Recorder::split_groups((op.dst.ne[0] + outputs_per_group - 1) / outputs_per_group, gx, gy);
  if (int8_path(op, r.caps())) {  // quant_act_q8 normalises x as it quantizes it
    FOLIO_ASSIGN_OR_RETURN(const TensorView q, matvec_input(r, op, p, nw, np.eps));
    return record_q8_matvec(r,
                            q8_matvec_spec({static_cast<uint32_t>(w.dtype), u32(x.ne[1]), tpr, 0u,
                                            0u, w16(p, w.dtype), glu, 0u, 32u, 0u, act}),
                            p, {w, q, op.dst, q, {}, {}}, gx, gy, true);
  }
  FOLIO_ASSIGN_OR_RETURN(p.nw, r.desc(nw));
  FOLIO_RETURN_IF_ERROR(aligned(p.nw, "norm weight"));
  p.eps = np.eps;
  return r.dispatch("mul_mat_vec",
                    {static_cast<uint32_t>(w.dtype), u32(x.ne[1]), tpr, 0u, x16(p), w16(p, w.dtype),
                     glu, 1u, norm_workgroup(x.ne[0], r.caps()), 0u, act},
                    &p, sizeof p, {w, x, op.dst, x, nw, {}}, gx, gy);
}

}  // namespace

void add_matmul_kernels(std::vector<KernelDef>& out) {
  out.push_back({"get_rows", OpKind::kGetRows, match_get_rows, record_get_rows});
  out.push_back({"mul_mat_q8", OpKind::kMulMat, match_mul_mat_q8, record_mul_mat_q8});
  out.push_back({"mul_mat", OpKind::kMulMat, match_mul_mat, record_mul_mat});
  out.push_back(
      {"mul_mat_id_q8", OpKind::kMulMatId, match_mul_mat_id_q8, record_mul_mat_id_q8});
  out.push_back({"mul_mat_id", OpKind::kMulMatId, match_mul_mat_id, record_mul_mat_id});
  out.push_back(
      {"mul_mat_glu_q8", OpKind::kMulMatGlu, match_mul_mat_glu_q8, record_mul_mat_glu});
  out.push_back({"mul_mat_glu", OpKind::kMulMatGlu, match_mul_mat_glu, record_mul_mat_glu});
  out.push_back(
      {"mul_mat_add_q8", OpKind::kMulMatAdd, match_mul_mat_add_q8, record_mul_mat_add});
  out.push_back({"mul_mat_add", OpKind::kMulMatAdd, match_mul_mat_add, record_mul_mat_add});
  out.push_back({"rms_norm_mul_mat_q8", OpKind::kRmsNormMulMat, match_rms_norm_mul_mat_q8,
                 record_rms_norm_mul_mat});
  out.push_back({"rms_norm_mul_mat", OpKind::kRmsNormMulMat, match_rms_norm_mul_mat,
                 record_rms_norm_mul_mat});
}

}  // namespace folio::vulkan
