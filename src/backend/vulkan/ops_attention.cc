// Attention-side kernels: flash attention over contiguous or paged K/V
// (shaders/flash_attn.comp), the cache write set_rows (shaders/set_rows.comp)
// and soft_max (shaders/soft_max.comp). Semantics: op.h.
//
// flash_attn: one workgroup of 256 invocations per (query token, head), or
// per (query token, several heads of one KV head) where enough workgroups
// remain (fa_heads_per_workgroup: the heads share each tile's K/V loads,
// each head's sums unchanged); the visible keys are split across the
// workgroup in tiles of 64 (see the shader). K/V of type F32, F16, BF16 or
// Q8_0 (K and V types independent; Q8_0 head dims multiples of 32), head
// dims up to 576 (multi-head latent attention's rows: K 576 with V the first
// 512 values of the same rows, read through V's view of them,
// KvLayerShape::v_in_k). The layout is a run-time parameter, not a
// specialization, so the paged and contiguous forms of an op run one
// pipeline and give byte-identical outputs.
// Few (token, head) pairs over a cache longer than one split (decode of a
// small batch) take split-K: up to kFaMaxSplits workgroups per pair, each
// over its pieces of kFaSplitKeys positions, partials in scratch memory,
// then a combine pass; the shader explains why both layouts still agree
// byte for byte whichever path each takes. Parameter structs and codes:
// shaders/attention_interface.h.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/attention_interface.h"
#include "backend/vulkan/shaders/mat_interface.h"
#include "core/status.h"

namespace folio::vulkan {
namespace {

constexpr size_t kQ8Block = 34;  // bytes of a Q8_0 block: f16 d, int8 qs[32]

bool dtype_code(DType t, uint32_t* code) {
  switch (t) {
    case DType::F32:
      *code = kDtypeF32;
      return true;
    case DType::F16:
      *code = kDtypeF16;
      return true;
    case DType::BF16:
      *code = kDtypeBF16;
      return true;
    case DType::Q8_0:
      *code = kDtypeQ8_0;
      return true;
    default:
      return false;
  }
}

// Bytes of dim 0's unit (an element, or a Q8_0 block).
size_t elem_bytes(DType t) {
  return t == DType::F32 ? 4 : t == DType::Q8_0 ? kQ8Block : 2;
}

// A tensor of 4-byte values the shaders index as uint / float arrays.
bool words_ok(const TensorView& t, DType want) {
  if (t.dtype != want) return false;
  for (size_t nb : t.nb) {
    if (nb % 4 != 0) return false;
  }
  return true;
}

// ---- flash attention -------------------------------------------------------

constexpr int64_t kFaMaxDim = 576;    // latent attention's K rows (512 + rope 64)
constexpr uint32_t kFaSplitKeys = 512;  // split-K piece: positions (a multiple of the tile, 64)
// Split-K below this many (token, head) pairs: a GPU has room for several
// workgroups per pair then.
constexpr int64_t kFaSplitMaxWork = 128;

// FOLIO_VULKAN_SPLIT_K=0 turns split-K off (to time its effect on a device).
bool split_k_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("FOLIO_VULKAN_SPLIT_K");
    return e == nullptr || std::string(e) != "0";
  }();
  return on;
}

struct FlashAttnParams {
  FOLIO_VK_FLASH_ATTN_PARAMS
};
static_assert(sizeof(FlashAttnParams) == 11 * sizeof(TensorDesc) + 15 * 4);
static_assert(offsetof(FlashAttnParams, n_head) == 9 * sizeof(TensorDesc) &&
              offsetof(FlashAttnParams, window) == 9 * sizeof(TensorDesc) + 36 &&
              offsetof(FlashAttnParams, has_sinks) == 9 * sizeof(TensorDesc) + 48 &&
              offsetof(FlashAttnParams, partials) == 9 * sizeof(TensorDesc) + 52 &&
              offsetof(FlashAttnParams, split_len) == 10 * sizeof(TensorDesc) + 56 &&
              offsetof(FlashAttnParams, qo) == 10 * sizeof(TensorDesc) + 60);

// Query heads a flash-attention workgroup takes (the shader's GH): the
// largest power of two up to caps.fa_max_heads that divides the heads per
// KV head (`group`), keeps each head's registers (its q slice,
// accumulators, running max and denominator) within kFaHeadRegisters
// floats in all, its shared memory within the device's, and leaves at
// least caps.fa_min_workgroups workgroups. Every head's sums are the same
// whatever the count, so the choice may follow the batch's size.
constexpr uint32_t kFaHeadRegisters = 96;
constexpr uint32_t kFaTile = kFaWorkgroup / kFaLanes * 2;  // keys a tile (the shader's BC)

// flash_attn.comp's shared memory at GH = gh: the lane partials (or the
// slots' accumulators), each head's scores and weights and running max,
// the slots' denominators and a flag, and (QOUT) the heads' output rows.
uint32_t fa_shared_bytes(uint32_t gh, uint32_t ve, uint32_t dv) {
  return 4 * (std::max(kFaWorkgroup * ve, gh * kFaTile * kFaLanes) + 2 * gh * kFaTile + gh + 8 + 1 +
              gh * dv);
}

uint32_t fa_heads_per_workgroup(int64_t n_work, uint32_t group, uint32_t kt, uint32_t kwpl,
                                uint32_t vt, uint32_t vwpt, uint32_t dv, const DeviceCaps& caps) {
  const uint32_t ke = kt == kDtypeQ8_0 ? 4 : 2, ve = vt == kDtypeQ8_0 ? 4 : 2;
  const uint32_t per_head = ke * kwpl + ve * vwpt + 2;
  uint32_t gh = 1;
  while (2 * gh <= caps.fa_max_heads && group % (2 * gh) == 0 &&
         2 * gh * per_head <= kFaHeadRegisters && n_work / (2 * gh) >= caps.fa_min_workgroups &&
         fa_shared_bytes(2 * gh, ve, dv) <= caps.max_shared_bytes) {
    gh *= 2;
  }
  return gh;
}

bool match_flash_attn(const Op& op, const DeviceCaps&) {
  const auto& p = op.p<AttentionParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];
  uint32_t code;
  if (!dtype_code(k.dtype, &code) || !dtype_code(v.dtype, &code)) return false;
  // Packed K/V rows (read as words from the row start).
  if (k.nb[0] != elem_bytes(k.dtype) || v.nb[0] != elem_bytes(v.dtype)) return false;
  const int64_t d = q.ne[0], dv = v.ne[0];
  if (d < 1 || d > kFaMaxDim || dv < 1 || dv > kFaMaxDim || k.ne[0] != d) return false;
  if ((k.dtype == DType::Q8_0 && d % 32 != 0) || (v.dtype == DType::Q8_0 && dv % 32 != 0)) {
    return false;
  }
  if (q.ne[3] != 1 || op.dst.ne[3] != 1) return false;
  if (!words_ok(q, DType::F32) || !words_ok(op.dst, DType::F32)) return false;
  for (int i = 3; i <= 5; ++i) {
    if (!words_ok(op.src[i], DType::I32)) return false;
  }
  if (!op.src[7].empty() && !words_ok(op.src[7], DType::F32)) return false;
  if (k.ne[1] < 1 || q.ne[1] % k.ne[1] != 0) return false;
  if (!fits_u32(q.ne[1] * q.ne[2]) || !fits_u32(k.ne[3]) || p.window < 0) return false;
  if (p.layout == KvLayout::kPaged) {
    if (p.block_size <= 0 || op.src[6].empty() || !words_ok(op.src[6], DType::I32)) return false;
  }
  return true;
}

Status record_flash_attn(Recorder& r, const Op& op) {
  const auto& ap = op.p<AttentionParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];
  const bool paged = ap.layout == KvLayout::kPaged;
  const bool has_sinks = !op.src[7].empty();
  // Absent tensors (empty views) bind a placeholder the shader never reads.
  const TensorView blocks = paged ? op.src[6] : TensorView{};
  const TensorView& sinks = op.src[7];

  FlashAttnParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.q, r.desc(q));
  FOLIO_ASSIGN_OR_RETURN(p.k, r.desc(k));
  FOLIO_ASSIGN_OR_RETURN(p.v, r.desc(v));
  FOLIO_ASSIGN_OR_RETURN(p.seq_idx, r.desc(op.src[3]));
  FOLIO_ASSIGN_OR_RETURN(p.pos, r.desc(op.src[4]));
  FOLIO_ASSIGN_OR_RETURN(p.kv_len, r.desc(op.src[5]));
  FOLIO_ASSIGN_OR_RETURN(p.blocks, r.desc(blocks));
  FOLIO_ASSIGN_OR_RETURN(p.sinks, r.desc(sinks));
  FOLIO_ASSIGN_OR_RETURN(p.dst, r.desc(op.dst));
  for (const TensorDesc* d : {&p.q, &p.seq_idx, &p.pos, &p.kv_len, &p.blocks, &p.sinks, &p.dst}) {
    FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  }
  const int64_t n_head = q.ne[1], n_tokens = q.ne[2];
  p.n_head = static_cast<uint32_t>(n_head);
  p.group = static_cast<uint32_t>(n_head / k.ne[1]);
  p.n_tokens = static_cast<uint32_t>(n_tokens);
  p.n_seq = static_cast<uint32_t>(op.src[5].nelements());
  p.paged = paged ? 1 : 0;
  // kv_len is an I32, so a capacity past INT32_MAX admits every non-negative length.
  const int64_t capacity = paged ? op.src[6].ne[0] * static_cast<int64_t>(ap.block_size) : k.ne[2];
  p.capacity = static_cast<uint32_t>(std::min<int64_t>(capacity, INT32_MAX));
  p.block_size = paged ? static_cast<uint32_t>(ap.block_size) : 1;
  p.n_blocks = paged ? static_cast<uint32_t>(k.ne[3]) : 0;
  p.causal = ap.causal ? 1 : 0;
  p.window = ap.window;
  p.scale = ap.scale;
  p.softcap = ap.softcap;
  p.has_sinks = has_sinks ? 1 : 0;

  uint32_t kt = 0, vt = 0;
  dtype_code(k.dtype, &kt);
  dtype_code(v.dtype, &vt);
  const uint32_t d = static_cast<uint32_t>(q.ne[0]), dv = static_cast<uint32_t>(v.ne[0]);
  // 32-bit words per row: one element (f32), two (f16, bf16) or four codes (q8_0) each.
  auto words = [](uint32_t code, uint32_t n) {
    const uint32_t per_word = code == kDtypeF32 ? 1 : code == kDtypeQ8_0 ? 4 : 2;
    return (n + per_word - 1) / per_word;
  };
  const uint32_t wk = words(kt, d);
  const uint32_t wv = words(vt, dv);
  const uint32_t kwpl = (wk + kFaLanes - 1) / kFaLanes;
  // Key slots for the values: as many as leave one invocation per V word, at most 8.
  uint32_t vs = 1;
  while (vs < 8 && kFaWorkgroup / (2 * vs) >= wv) vs *= 2;
  const uint32_t ct = kFaWorkgroup / vs;
  const uint32_t vwpt = (wv + ct - 1) / ct;

  // Rows that start on and fill whole 32-bit words are read as plain words
  // (Q8_0 rows have their own reads and do not take part).
  auto word_rows = [](const TensorDesc& t, const TensorView& view) {
    if (view.dtype == DType::Q8_0) return true;
    return t.off % 4 == 0 && t.nb[1] % 4 == 0 && t.nb[2] % 4 == 0 && t.nb[3] % 4 == 0 &&
           view.row_bytes() % 4 == 0;
  };
  const uint32_t aligned = word_rows(p.k, k) && word_rows(p.v, v) ? 1 : 0;

  const int64_t n_work = n_head * n_tokens;
  uint32_t gx, gy;
  // The pass that writes the output, held (Recorder::hold) where the next
  // record function may want that output quantized (an int8 product of
  // it: flash_attn_output_tail): whole 32-element blocks of a head's row,
  // the output packed.
  const bool tail_ok = r.caps().output_tails && dv % kMatQ8Block == 0 && op.dst.is_contiguous();
  auto write_pass = [&](uint32_t split, uint32_t gh,
                        std::initializer_list<TensorView> tensors) -> Status {
    HeldDispatch h =
        held_dispatch("flash_attn", {kt, vt, d, dv, kwpl, vs, vwpt, aligned, split, gh, 0u}, &p,
                      sizeof p, {tensors.begin(), tensors.size()}, gx, gy);
    return tail_ok ? r.hold(std::move(h)) : r.dispatch(h);
  };
  const int64_t pieces = (capacity + kFaSplitKeys - 1) / kFaSplitKeys;
  if (n_work >= kFaSplitMaxWork || pieces <= 1 || !split_k_enabled()) {
    const uint32_t gh = fa_heads_per_workgroup(n_work, p.group, kt, kwpl, vt, vwpt, dv, r.caps());
    Recorder::split_groups(static_cast<uint64_t>(n_work / gh), gx, gy);
    return write_pass(kFaSplitNone, gh,
                      {q, k, v, op.src[3], op.src[4], op.src[5], blocks, sinks, op.dst, {}, {}});
  }
  Recorder::split_groups(static_cast<uint64_t>(n_work), gx, gy);
  // Split-K: partials [dv + 2, n_split, n_work] in scratch, then the combine.
  const uint32_t n_split = static_cast<uint32_t>(std::min<int64_t>(pieces, kFaMaxSplits));
  const size_t partial_bytes = static_cast<size_t>(n_work) * n_split * (dv + 2) * sizeof(float);
  FOLIO_ASSIGN_OR_RETURN(const TensorView partials, r.scratch(partial_bytes));
  FOLIO_ASSIGN_OR_RETURN(p.partials, r.desc(partials));
  p.n_split = n_split;
  p.split_len = kFaSplitKeys;
  const std::initializer_list<TensorView> tensors = {
      q, k, v, op.src[3], op.src[4], op.src[5], blocks, sinks, op.dst, partials, {}};
  FOLIO_RETURN_IF_ERROR(
      r.dispatch("flash_attn", {kt, vt, d, dv, kwpl, vs, vwpt, aligned, kFaSplitPartials, 1u, 0u},
                 &p, sizeof p, tensors, gx, gy, n_split));
  return write_pass(kFaSplitCombine, 1u, tensors);
}

}  // namespace

Result<bool> flash_attn_output_tail(Recorder& r, HeldDispatch& h, const TensorView& x,
                                    const TensorView& q) {
  if (std::strcmp(h.shader, "flash_attn") != 0 || h.spec.size() != 11 || h.spec[10] != 0u ||
      h.spec[8] == kFaSplitPartials || h.params.size() != sizeof(FlashAttnParams)) {
    return false;
  }
  const TensorView& out = h.tensors[8];
  if (out.data != x.data || x.dtype != DType::F32 || !x.is_contiguous() ||
      x.nbytes_contiguous() != out.nbytes_contiguous()) {
    return false;
  }
  FlashAttnParams p;
  std::memcpy(&p, h.params.data(), sizeof p);
  FOLIO_ASSIGN_OR_RETURN(p.qo, r.desc(q));
  std::memcpy(h.params.data(), &p, sizeof p);
  h.spec[10] = 1u;
  h.tensors[10] = q;
  return true;
}

namespace {

// ---- set_rows --------------------------------------------------------------

struct SetRowsParams {
  FOLIO_VK_SET_ROWS_PARAMS
};
static_assert(sizeof(SetRowsParams) == 3 * sizeof(TensorDesc) + 4);

bool match_set_rows(const Op& op, const DeviceCaps&) {
  const TensorView &rows = op.src[0], &slots = op.src[1], &table = op.dst;
  uint32_t code;
  if (!dtype_code(table.dtype, &code)) return false;
  if (!words_ok(rows, DType::F32) || !words_ok(slots, DType::I32)) return false;
  if (slots.ne[2] * slots.ne[3] != 1) return false;  // read flat through nb0, nb1
  if (table.ne[2] * table.ne[3] != 1 || table.ne[0] != rows.ne[0]) return false;
  if (table.dtype == DType::F32) return table.nb[0] % 4 == 0 && table.nb[1] % 4 == 0;
  // Two-byte elements and Q8_0 blocks: packed rows, any even row offset.
  if (table.dtype == DType::Q8_0 && table.ne[0] % 32 != 0) return false;
  return table.nb[0] == elem_bytes(table.dtype) && table.nb[1] % 2 == 0 &&
         fits_u32(slots.nelements());
}

Status record_set_rows(Recorder& r, const Op& op) {
  SetRowsParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.rows, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.slots, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.table, r.desc(op.dst));
  FOLIO_RETURN_IF_ERROR(aligned4(p.rows, op));
  FOLIO_RETURN_IF_ERROR(aligned4(p.slots, op));
  const uint32_t align = op.dst.dtype == DType::F32 ? 4 : 2;  // Q8_0: its f16 scales
  if (p.table.off % align != 0) {
    return invalid_argument("{}: table at byte offset {}", op.describe(), p.table.off);
  }
  p.n = static_cast<uint32_t>(op.src[1].nelements());
  uint32_t dt = 0;
  dtype_code(op.dst.dtype, &dt);
  uint32_t gx, gy;
  Recorder::split_groups(p.n, gx, gy);
  return r.dispatch("set_rows", {dt}, &p, sizeof p, {op.src[0], op.src[1], op.dst}, gx, gy);
}

// ---- soft_max --------------------------------------------------------------

struct SoftMaxShaderParams {
  FOLIO_VK_SOFT_MAX_PARAMS
};
static_assert(sizeof(SoftMaxShaderParams) == 3 * sizeof(TensorDesc) + 8);
static_assert(offsetof(SoftMaxShaderParams, scale) == 108 &&
              offsetof(SoftMaxShaderParams, has_mask) == 112);

bool match_soft_max(const Op& op, const DeviceCaps&) {
  const TensorView& mask = op.src[1];
  if (!words_ok(op.src[0], DType::F32) || !words_ok(op.dst, DType::F32)) return false;
  if (mask.empty()) return true;
  return words_ok(mask, DType::F32) && mask.ne[2] > 0 && mask.ne[3] > 0;
}

Status record_soft_max(Recorder& r, const Op& op) {
  const bool has_mask = !op.src[1].empty();
  const TensorView& mask = op.src[1];  // may be empty: a placeholder is bound
  SoftMaxShaderParams p{};
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.mask, r.desc(mask));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  for (const TensorDesc* d : {&p.x, &p.mask, &p.d}) FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  p.scale = op.p<SoftMaxParams>().scale;
  p.has_mask = has_mask ? 1 : 0;
  uint32_t gx, gy;
  Recorder::split_groups(static_cast<uint64_t>(op.src[0].nrows()), gx, gy);
  return r.dispatch("soft_max", {}, &p, sizeof p, {op.src[0], mask, op.dst}, gx, gy);
}

}  // namespace

void add_attention_kernels(std::vector<KernelDef>& out) {
  out.push_back({"flash_attn", OpKind::kFlashAttn, match_flash_attn, record_flash_attn});
  out.push_back({"set_rows", OpKind::kSetRows, match_set_rows, record_set_rows});
  out.push_back({"soft_max", OpKind::kSoftMax, match_soft_max, record_soft_max});
}

}  // namespace folio::vulkan
