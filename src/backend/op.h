// Op descriptors: what a backend is asked to run. An Op names its kind, its
// output views (dst, and dst2 for ops with two outputs), up to kMaxSrc input
// views and a per-kind parameter struct. Shapes use ggml order: ne[0] is the
// innermost dimension. Activations are F32 unless stated; integer inputs are
// I32. The exact semantics below are what the scalar reference
// (backend/cpu/ref) implements and what every other kernel is tested against.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>

#include "tensor/tensor_view.h"

namespace folio {

enum class OpKind : int {
  // src0 table [n_cols, n_rows] (any supported dtype, 2-D), src1 ids I32 [n]
  // (any shape, read in flat order); dst F32 [n_cols, n]: dst[:, i] =
  // dequant(table[:, ids[i]]). An id outside [0, n_rows) is an error.
  kGetRows,
  // src0 weight W [K, N, B2w, B3w] (any supported dtype), src1 X F32
  // [K, M, B2, B3] with B2 % B2w == 0 and B3 % B3w == 0 (W broadcast);
  // dst F32 [N, M, B2, B3]: dst[n, m, b2, b3] = sum_k W[k, n, b2 / (B2/B2w), b3 / ..] * X[k, m, b2, b3].
  kMulMat,
  // MoE experts. src0 W [K, N, E] (any dtype), src1 X F32 [K, X1, T] with X1
  // == 1 (one input shared by all chosen experts) or X1 == n_used, src2 ids
  // I32 [n_used, T] (expert ids in [0, E)); dst F32 [N, n_used, T]:
  // dst[:, u, t] = W[:, :, ids[u, t]]^T X[:, u % X1, t]. All at most 3-D; an
  // id outside [0, E) is an error.
  kMulMatId,
  // Element-wise with broadcasting of src1 (each src1.ne[i] divides src0.ne[i]):
  // dst = src0 + src1 (kAdd) or src0 * src1 (kMul), src1 indexed modulo its
  // own shape. All F32, dst shaped like src0.
  kAdd,
  kMul,
  // dst = src0 * scale + bias (ScaleParams).
  kScale,
  // dst = src0 / sqrt(mean(src0^2 over dim 0) + eps) [* src1 weight F32 [ne0]].
  kRmsNorm,
  // Fused residual add + RMS norm: dst2 = src0 + src1 (the new residual);
  // dst = rms_norm(dst2) [* src2 weight]. (RmsNormParams)
  kAddRmsNorm,
  // dst = src0 / max(sqrt(sum src0^2 over dim 0), eps). (NormParams)
  kL2Norm,
  // Layer norm (ggml_norm, then the affine part): per row (dim 0),
  // dst = (src0 - mean) / sqrt(var + eps) [* src1 weight F32 [ne0]]
  // [+ src2 bias F32 [ne0]], var the biased variance mean((src0 - mean)^2).
  // (NormParams)
  kNorm,
  // Rotary embedding (RopeParams). src0 x F32 [head_dim, n_head, n_tokens],
  // src1 positions I32 [n_tokens] (or [4 * n_tokens] for multi-section modes:
  // section s of token t at pos[s * n_tokens + t]), optional src2 freq
  // factors F32 [n_dims / 2]; dst like src0. Dims >= n_dims pass through.
  // Multi-section modes need sections >= 0 with a positive sum; the section
  // of each rotary pair is defined in backend/cpu/ref/rope.cc.
  kRope,
  // dst = softmax over dim 0 of (src0 * scale + src1 mask [ne0, ne1] (optional,
  // broadcast over dims 2, 3: mask dims 2, 3 are indexed modulo their size)).
  // A row with every value -inf gives zeros. (SoftMaxParams)
  kSoftMax,
  // Element-wise unary, F32 -> F32 (UnaryParams: silu, gelu, sigmoid, ...).
  kUnary,
  // Gated linear unit (GluParams): dst = act(gate) * up (kSwiGluOai: the
  // clamped form defined at GluKind). With src1: gate =
  // src0, up = src1, same shapes. Without src1: src0 [2 * n, ...] holds gate in
  // the first half of each row and up in the second (swapped if params.swapped;
  // ignored with src1); dst [n, ...].
  kGlu,
  // src0 F32 [n, rows]; dst I32 [k, rows]: indices of the k largest values of
  // each row, largest first; ties broken by the lower index. NaN orders below
  // every number (here and in kArgsort). (TopKParams)
  kTopK,
  // src0 F32 [n, rows]; dst I32 [n, rows]: a stable sort of indices by value,
  // ascending or descending; equal values keep ascending index order in both
  // directions. (ArgsortParams)
  kArgsort,
  // Mixture-of-experts router (MoeRouteParams): src0 logits F32 [X, n]
  // (2-D, X experts, n tokens), optional src1 selection bias F32 [X]; dst
  // ids I32 [k, n], dst2 weights F32 [k, n]. Per token, in this order:
  //   p = softmax(logits) (kSoftmax), sigmoid(logits) (kSigmoid) or the
  //       logits themselves (kSoftmaxWeight), each value computed in double
  //       and rounded once (as kSoftMax's and kUnary's references);
  //   s = p + bias (one float addition; s = p without a bias);
  //   n_groups > 1 (dividing X): a group scores the float sum of its two
  //       largest s (the larger first, -inf where it has one value); the
  //       n_groups_used best groups (ties: the lower group) keep their s,
  //       the others' become -inf;
  //   ids = kTopK(s, k): largest first, ties to the lower index, NaN last;
  //   w[u] = p[ids[u]]; kSoftmaxWeight: w = softmax(w) (double, rounded
  //       once); else with norm: w[u] = w[u] / max(float(sum of w in
  //       double), 2^-14); then w[u] *= scale (a float product).
  // The bias only picks experts; the weights are the unbiased p. Devices
  // compute p in float with their own exp and division: their ids equal the
  // reference's where no two selection values lie within that rounding,
  // their weights are held to an NMSE bound.
  kMoeRoute,
  // Flash attention (AttentionParams); see "Attention inputs" below.
  kFlashAttn,
  // Materialised scaled-dot-product attention: same inputs, outputs and
  // semantics as kFlashAttn, computed as full scores -> softmax -> V, in
  // double precision. The reference that flash attention is checked against.
  kSdpa,
  // Depthwise causal convolution (SsmConvParams). src0 x F32 [K - 1 + T,
  // channels, n_seq] (per channel: the K-1 cached taps, then the T new
  // inputs, in time order), src1 weight F32 [K, channels], optional src2 bias
  // F32 [channels]; dst F32 [channels, T, n_seq]:
  // dst[c, t, s] = act(sum_{j=0..K-1} x[t + j, c, s] * w[j, c] + bias[c]),
  // summed in ascending j, bias added last (+0.0f when absent), act = SiLU if
  // params.silu.
  kSsmConv,
  // Gated DeltaNet recurrence (GatedDeltaNetParams), plain (token by token)
  // form. src0 q F32 [S_k, H_k, T, n_seq], src1 k F32 [S_k, H_k, T, n_seq],
  // src2 v F32 [S_v, H_v, T, n_seq], src3 g F32 [H_v, T, n_seq] (log decay),
  // src4 beta F32 [H_v, T, n_seq] (update strength, already in (0,1)),
  // src5 state_in F32 [S_k, S_v, H_v, n_seq] (row v of head h holds S[v, :]).
  // dst out F32 [S_v, H_v, T, n_seq], dst2 state_out like src5 (may alias src5
  // exactly; any other overlap is an error).
  // Per value head h (key head kh = h / (H_v / H_k) or h % H_k, per
  // params.head_map), per token t: q, k optionally L2-normalised (eps, as the
  // kL2Norm op), q scaled by params.scale, then
  //   S *= exp(g[h, t]);  m[v] = sum_i S[v, i] k[i];
  //   d[v] = beta[h, t] * (v_t[v] - m[v]);  S[v, i] += d[v] * k[i];
  //   out[v, h, t] = sum_i S[v, i] q[i].
  // With params.allow_chunked a backend may evaluate long sequences (CPU: T
  // >= 64 tokens per sequence, 256 with AVX2 only) in the mathematically
  // equal chunked (WY) form: not bit-identical, NMSE <= 1e-10 against this
  // definition on both outputs (backend/cpu/drivers/gdn_chunked.h). Shorter
  // ops, or allow_chunked = false, use the token-by-token form (bit-identical
  // to the reference on the CPU backend at every tier).
  kGatedDeltaNet,
  // Mamba-2 selective scan (NoParams; ggml's ssm_scan with a scalar A per
  // head). src0 x F32 [P, H, T, n_seq], src1 dt F32 [H, T, n_seq] (the time
  // step before softplus, its bias already added), src2 A F32 with H values
  // (read flat: [1, H] in GGUF files), src3 B and src4 C F32 [N, G, T, n_seq]
  // (G groups dividing H: head h reads group h / (H / G)), src5 state_in F32
  // [N, P, H, n_seq] (row p of head h holds the N state values of channel p).
  // dst y F32 [P, H, T, n_seq], dst2 state_out like src5 (may alias src5
  // exactly; any other overlap is an error). Dim 0 of every tensor is
  // contiguous; the other strides are free (x, B, C are views of one conv
  // output). Per sequence, head h, token t, all in f32:
  //   sp = dt > 20 ? dt : logf(1 + expf(dt));  dA = expf(sp * A[h]);
  //   per row p: xdt = x[p] * sp; acc = 0; for i ascending:
  //     S[p, i] = S[p, i] * dA + B[i] * xdt;  acc += S[p, i] * C[i];
  //   y[p] = acc   (no a*b+c contraction anywhere).
  // The D skip (y + x * D) and the z gate stay outside the op, as in
  // llama.cpp's graph. Every CPU kernel is bit-identical to the reference.
  kSsmScan,
  // Scatter rows into a table, converting: src0 F32 rows [n_cols, n], src1
  // slots I32 [n]; dst table [n_cols, n_slots] of F32, F16, BF16 or Q8_0
  // (quantized per row with the reference quantizer); dst[:, slots[i]] =
  // convert(src0[:, i]); other rows untouched. How new K/V rows reach the
  // cache (the slot mapping). Slots outside [0, n_slots) are run-time errors;
  // duplicate slots: the last row wins.
  kSetRows,
  // ---- Fused decode ops on a recurrent-state pool (one token per sequence).
  // Sequence s reads its prior state from pool slot ids[s] and writes its new
  // state to slot dst_slots[s] (dst_slots omitted: = ids). Both outputs are
  // bit-identical to the unfused path on the same backend: gather the states
  // by ids (a plain copy), run the plain op with T = 1, scatter the new states
  // to dst_slots. So every sequence reads the OLD content of its source slot
  // even when another sequence writes that slot in the same op (several
  // sequences may read one slot: a fork). CPU kernels: a sequence with
  // ids[s] == dst_slots[s] reads its slot in place (each independent part of
  // its prior state loaded before it is written); a source slot that another
  // sequence writes is first copied to a disjoint scratch; a slot nobody
  // writes is read where it is (backend/cpu/drivers/state_slots.h). dst2
  // names the in-place output and must be the pool view itself (same data,
  // shape and strides); slots not written keep their bytes. Run-time errors,
  // checked before anything is written: an id or destination slot outside
  // [0, n_slots) (OutOfRange), a destination slot used twice
  // (InvalidArgument); dst overlapping the pool is invalid (validate_op).
  //
  // Conv update (SsmConvParams): src0 x F32 [channels, n_seq] (the new input
  // of each sequence), src1 weight F32 [K, channels] (K >= 2), optional src2
  // bias F32 [channels], src3 conv state pool F32 [K - 1, channels, n_slots]
  // (per channel the K-1 most recent inputs, oldest first), src4 ids I32
  // [n_seq], optional src5 dst_slots I32 [n_seq]; dst F32 [channels, n_seq],
  // dst2 = src3. With win = [taps of slot ids[s], x[:, s]] per channel:
  //   dst[c, s] = act(sum_{j=0..K-1} win[j, c] * w[j, c] + bias[c])
  // exactly as kSsmConv (ascending j from 0.0f, bias last, +0.0f when absent,
  // SiLU if params.silu), and slot dst_slots[s] receives win[1..K-1] (oldest
  // tap dropped, x appended).
  kSsmConvUpdate,
  // Gated DeltaNet update (GatedDeltaNetParams): src0..src4 q, k, v, g, beta
  // exactly as kGatedDeltaNet with T = 1 (q, k [S_k, H_k, 1, n_seq], v [S_v,
  // H_v, 1, n_seq], g, beta [H_v, 1, n_seq]), src5 state pool F32 [S_k, S_v,
  // H_v, n_slots], src6 ids I32 [n_seq], optional src7 dst_slots I32 [n_seq];
  // dst out F32 [S_v, H_v, 1, n_seq], dst2 = src5. The recurrence is
  // kGatedDeltaNet's, on the state of slot ids[s]; the final state goes to
  // slot dst_slots[s].
  kGatedDeltaNetUpdate,
  // Mamba-2 scan update (NoParams): src0..src4 x, dt, A, B, C exactly as
  // kSsmScan with T = 1 (x [P, H, 1, n_seq], dt [H, 1, n_seq], A with H
  // values, B and C [N, G, 1, n_seq]), src5 state pool F32 [N, P, H,
  // n_slots], src6 ids I32 [n_seq], optional src7 dst_slots I32 [n_seq];
  // dst y F32 [P, H, 1, n_seq], dst2 = src5. The step is kSsmScan's, on the
  // state of slot ids[s]; the new state goes to slot dst_slots[s].
  kSsmScanUpdate,
  // Strided copy: src0 and dst of one dtype, F32 or I32, same shape, any
  // strides that are multiples of 4 bytes (a transposing view included: the
  // only op whose rows need not be contiguous); dst[i] = src0[i], bit for bit.
  // src0 and dst must not overlap. How rows move between a cache's pools and
  // activations without the host touching either.
  kCpy,
  // ---- Device fusions: ops a device runs in one dispatch where the model
  // otherwise runs their unfused composition (ForwardContext helpers fall
  // back to it where no backend selects a kernel; the CPU has none). Each
  // equals its composition on the same backend bit for bit; the parity
  // harness holds each to it (run on the reference backend).
  //
  // Matrix product into a gated linear unit (GluParams): src0 W [K, 2F]
  // (2-D, any weight dtype) holds the gate rows then the up rows (swapped:
  // up first), src1 x F32 [K, M] (2-D); dst F32 [F, M] =
  // glu(mul_mat(W, x)) in kGlu's one-tensor form.
  kMulMatGlu,
  // Rotary embedding with the K/V cache write (RopeParams): src0 x F32
  // [D, H, T] (any strides: a prefill chunk's q and k are column parts of
  // one product), src1 positions and optional src2 freq factors as kRope,
  // src3 slots I32 [T], src4 v F32 [Dv, T], src5 the V table [Dv,
  // n_slots]; dst F32 [D, H, T] contiguous, dst2 the K table [D * Hk, n_slots]
  // (Hk <= H). Equals dst = rope(src0); set_rows(dst2, the last Hk heads of
  // each token of dst as [D * Hk, T], src3); set_rows(src5, src4, src3).
  // The tables take kSetRows' dtypes; src5 is written.
  kRopeSetRows,
  // Matrix product plus a residual (NoParams): src0 W [K, N] (2-D, any
  // weight dtype), src1 x F32 [K, M] (2-D), src2 r F32 [N, M]; dst F32
  // [N, M] = kAdd(mul_mat(W, x), r) (dst may be r): the residual add in
  // the product's epilogue. With src3, a gate logit per column F32 [1, M]
  // (a gated shared expert's): dst = kAdd(r, kMul(mul_mat(W, x),
  // kUnary(src3, kSigmoid))), the gate broadcast over the N rows.
  kMulMatAdd,
  // RMS norm into a matrix product (NormMulMatParams): src0 W [K, N] (2-D,
  // any weight dtype), src1 x F32 [K, M] (2-D), src2 the norm weight F32
  // [K]; dst F32 [N, M] = mul_mat(W, kRmsNorm(x, src2)), or with params.glu
  // [N / 2, M] = kGlu of that product in its one-tensor form
  // (params.glu_params): the norm in the product's prologue.
  kRmsNormMulMat,
  // Sandwich-norm block end (RmsNormParams; gemma's post norms): src0 a
  // F32 [E, n] (the residual), src1 b F32 [E, n] (a block's output), src2
  // the next norm's weight F32 [E] (optional), src3 b's post-norm weight
  // F32 [E]; dst F32 [E, n], dst2 F32 [E, n] (may alias a). Equals
  // kRmsNorm(b, src3) (into b, which the composition overwrites) then
  // kAddRmsNorm(a, that, src2): dst2 = a + rms_norm(b) * src3, dst =
  // rms_norm(dst2) [* src2], both norms with params.eps.
  kRmsNormAddRmsNorm,
  // Post-norm block end with no next norm (RmsNormParams; exaone4's post
  // norms, gemma4's FFN and per-layer-input ends): src0 a F32 [E, n] (the
  // residual), src1 b F32 [E, n] (a block's output), src2 b's post-norm
  // weight F32 [E]; dst F32 [E, n] (may alias a, not b) = a + rms_norm(b) *
  // src2. Equals kRmsNorm(b, src2) (into b, which the composition
  // overwrites) then kAdd(a, that).
  kRmsNormAdd,
  // The routed experts' weighted sum (NoParams): src0 experts F32 [E, k, n]
  // (k >= 2), src1 weights F32 [1, k, n]; dst F32 [E, n] = e0 w0 + e1 w1 +
  // ... + e(k-1) w(k-1), each product rounded, summed left to right: equals
  // kMul(src0, src1) (into src0, which the composition overwrites) then the
  // chain of kAdds over the k slices in rank order.
  kMoeSum,
  kCount,
};

const char* op_kind_name(OpKind kind);

// kSoftplus follows ggml: x > 20 ? x : log(1 + e^x).
enum class UnaryKind : int { kSilu, kGelu /* tanh approximation */, kGeluErf, kSigmoid, kSoftplus, kExp, kTanh, kRelu, kNeg };
const char* unary_kind_name(UnaryKind kind);

// kSwiGluOai (gpt-oss, ggml's swiglu_oai), with a = GluParams::alpha and
// L = GluParams::limit: g = min(gate, L), u = clamp(up, -L, L),
//   dst = g / (1 + e^(-a g)) * (u + 1).
enum class GluKind : int {
  kSwiGlu /* silu(gate) * up */,
  kGeGlu /* gelu_tanh(gate) * up */,
  kGeGluErf,
  kSwiGluOai,
};

enum class RopeMode : int {
  kNormal,  // rotate adjacent pairs (x[2i], x[2i+1])  (llama)
  kNeox,    // rotate (x[i], x[i + n_dims/2])           (qwen, gemma, neox)
  kMrope,   // multi-section, neox pairing; dims split by sections (qwen2-vl)
  kImrope,  // interleaved multi-section, neox pairing (qwen3-vl, qwen3.5)
};

struct NoParams {};

struct ScaleParams {
  float scale = 1.0f;
  float bias = 0.0f;
};

struct RmsNormParams {
  float eps = 1e-6f;
};

struct NormParams {
  float eps = 1e-12f;
};

// YaRN / linear scaling follow ggml's rope definition: for rotary pair i,
// theta_extrap = pos * freq_base^(-2i/n_dims) / freq_factor_i, then
//   theta = freq_scale * theta_extrap (+ ext_factor ramp mixing), and cos/sin
//   are scaled by mscale = attn_factor (* (1 + 0.1 ln(1/freq_scale)) when
//   ext_factor != 0). Full formulas: backend/cpu/ref/rope.cc.
struct RopeParams {
  RopeMode mode = RopeMode::kNormal;
  int n_dims = 0;               // rotated dims (<= head_dim, even)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;      // 1 / linear scaling factor
  float ext_factor = 0.0f;      // YaRN extrapolation mix (0 = off)
  float attn_factor = 1.0f;     // YaRN magnitude scale
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;           // original training context (YaRN)
  std::array<int, 4> sections{0, 0, 0, 0};  // multi-section rope: dims per section (pairs)
};

struct SoftMaxParams {
  float scale = 1.0f;
};

struct UnaryParams {
  UnaryKind kind = UnaryKind::kSilu;
};

struct GluParams {
  GluKind kind = GluKind::kSwiGlu;
  bool swapped = false;  // single-tensor form: up first, then gate
  float alpha = 1.702f;  // kSwiGluOai only: sigmoid slope
  float limit = 7.0f;    // kSwiGluOai only: clamp of gate (above) and up (both sides)
};

// kRmsNormMulMat: the norm's epsilon, and the GLU applied to the product
// when glu is set.
struct NormMulMatParams {
  float eps = 1e-6f;
  bool glu = false;
  GluParams glu_params;
};

struct TopKParams {
  int k = 1;
};

struct ArgsortParams {
  bool descending = false;
};

// kMoeRoute: how router logits become probabilities (model/config.h's
// ExpertGating), the number of experts per token, expert groups (1: none),
// renormalisation and the weights' scale.
enum class MoeGating : int { kSoftmax, kSigmoid, kSoftmaxWeight };
struct MoeRouteParams {
  MoeGating gating = MoeGating::kSoftmax;
  int k = 1;
  int n_groups = 1;
  int n_groups_used = 1;
  bool norm = false;
  float scale = 1.0f;
};

// ---------------------------------------------------------------------------
// Attention inputs (kFlashAttn, kSdpa). A batch of n_tokens query tokens from
// n_seq sequences; each token knows its sequence and position.
//   src0 q        F32 [D, n_head, n_tokens]
//   src1 k        contiguous: [D, n_kv_head, n_ctx, n_seq]
//                 paged:      [D, n_kv_head, block_size, n_blocks]
//                 dtype F32, F16, BF16 or Q8_0 (Q8_0 rows are D elements, D % 32 == 0)
//   src2 v        like k but with Dv instead of D
//   src3 seq_idx  I32 [n_tokens]: sequence of each query token (0..n_seq-1)
//   src4 pos      I32 [n_tokens]: absolute position of each query token
//   src5 kv_len   I32 [n_seq]: valid K/V positions of each sequence (0..kv_len-1)
//   src6 blocks   I32 [max_blocks, n_seq]: block table (paged only): logical
//                 block b of sequence s lives in physical block blocks[b, s];
//                 position p is row p % block_size of block blocks[p / block_size, s].
//                 Entries past ceil(kv_len[s] / block_size) are padding, never read.
//   src7 sinks    F32 [n_head] (optional): per-head sink logit joining the softmax
//   dst           F32 [Dv, n_head, n_tokens]
// Query head h uses KV head h / (n_head / n_kv_head) (GQA). Token i attends
// to key positions p < kv_len[seq] with p <= pos[i] when causal and
// pos[i] - p < window when window > 0. Scores are q.k * scale, then
// softcap * tanh(score / softcap) when softcap > 0. The sink (raw logit: not
// scaled, not capped) adds exp(sink) to the softmax denominator and has no
// value row (ggml's flash_attn_ext sinks):
//   out = sum_p exp(s_p) v_p / (sum_p exp(s_p) + exp(sink)).
// A token with no visible key outputs zeros. K/V rows at positions >= kv_len
// never influence the output (they may hold anything, NaN included). K/V
// positions are visited in ascending order: the paged and contiguous layouts
// give byte-identical results. seq_idx outside [0, n_seq), kv_len outside
// [0, capacity] (n_ctx, or max_blocks * block_size) and used block-table
// entries outside [0, n_blocks) are run-time errors, never out-of-bounds reads.
enum class KvLayout : int { kContiguous, kPaged };

struct AttentionParams {
  float scale = 1.0f;
  float softcap = 0.0f;     // 0: off
  bool causal = true;
  int window = 0;           // sliding window in tokens, 0: off
  KvLayout layout = KvLayout::kContiguous;
  int block_size = 16;      // paged only: tokens per block (k.ne[2])
};

enum class HeadMap : int {
  kDiv,  // value head h uses key head h / (H_v / H_k)   (qwen3next)
  kMod,  // value head h uses key head h % H_k           (qwen35, qwen35moe)
};

struct SsmConvParams {
  bool silu = false;
};

struct GatedDeltaNetParams {
  float scale = 1.0f;      // applied to q after optional normalisation
  bool l2_norm_qk = true;  // L2-normalise q and k per head first
  float eps = 1e-6f;       // L2 norm: x / max(sqrt(sum x^2), eps), exactly as kL2Norm
  HeadMap head_map = HeadMap::kDiv;
  bool allow_chunked = true;  // kGatedDeltaNet: long sequences may use the chunked form
};

using OpParams = std::variant<NoParams, ScaleParams, RmsNormParams, NormParams, RopeParams,
                              SoftMaxParams, UnaryParams, GluParams, TopKParams, ArgsortParams,
                              MoeRouteParams,                              AttentionParams, SsmConvParams, GatedDeltaNetParams,
                              NormMulMatParams>;

inline constexpr int kMaxSrc = 8;

struct Op {
  OpKind kind = OpKind::kCount;
  TensorView dst;                      // primary output
  TensorView dst2;                     // second output (kAddRmsNorm, kGatedDeltaNet)
  std::array<TensorView, kMaxSrc> src; // inputs; unused ones have data == nullptr
  OpParams params;

  template <typename P>
  const P& p() const { return std::get<P>(params); }
  // "mul_mat(q4_K [4096, 4096], f32 [4096, 7]) -> f32 [4096, 7]"
  std::string describe() const;
};

// Structural validation shared by every backend: shapes, dtypes, required
// inputs, index ranges that can be checked without reading data. Backends call
// it before running; invalid ops are an error, never undefined behaviour.
Status validate_op(const Op& op);

}  // namespace folio
