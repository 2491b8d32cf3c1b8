// RecurrentLayer: what the recurrent layers of the hybrid models share (the
// gated DeltaNet layer, gated_delta_net.cc; the Mamba-2 layer, mamba2.cc;
// LFM2's short conv, short_conv.cc): a causal depthwise conv (+ optional
// bias, optional SiLU) over C channels of the projected input, continuing
// each sequence's cached taps, then a scan that carries each sequence's
// state, both in the cache's state pools (the slots of the batch's recurrent
// plan), with the plan's prefix checkpoints saved on the way. A mixer
// supplies the projections, the scan and the output. A layer without a state
// pool (the cache's ssm_state view is empty: short conv) has no scan; only
// its taps are carried and checkpointed.
//
// Recurrent order: the plan's steps (one per sequence, in order of first
// appearance) each own consecutive rows. When the batch interleaves a
// sequence's tokens with another's, x is gathered into that order (get_rows)
// and the output gathered back; usually the order is the identity.
//
// Per step, reading and writing the sequence's slot of the pools in place:
//   - consecutive single-token steps (decode) form one run: where a backend
//     selects a kernel for them (run_if_supported), one kSsmConvUpdate over
//     the run by slot ids, in place, and the mixer's fused scan update (if
//     it has one); otherwise the unfused path: gather (conv window by strided
//     copies; state with kGetRows), the plain conv / scan with T = 1,
//     scatter (taps by strided copies; state with kSetRows). Both paths are
//     bit-identical (the fused ops are defined that way).
//   - a multi-token step (prefill chunk): one plain kSsmConv over its window,
//     then the plain scan on the slot's state view itself (state_out aliases
//     state_in), split into segments at the plan's checkpoints (prefix
//     checkpoints and draft snapshots, cache/hybrid_kv_cache.h): after each
//     segment the slot's state (and the taps at that point, from the window)
//     are copied into the checkpoint's slot. Splitting changes no value: the
//     plain scans carry the state token by token in f32.
// The conv window is assembled, and the new taps and checkpoints written,
// with strided copies (kCpy) on whichever backend holds the pools.
#pragma once

#include <array>
#include <span>

#include "model/blocks/hybrid.h"

namespace folio::model {

// A view of `t`'s memory at byte offset `off` with shape ne and strides nb.
TensorView view_of(const TensorView& t, size_t off, std::array<int64_t, kMaxDims> ne,
                   std::array<size_t, kMaxDims> nb);

class RecurrentLayer {
 public:
  // conv_silu: SiLU after the conv (DeltaNet, Mamba-2; not short conv).
  RecurrentLayer(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                 const RecurrentInputs& ri, cache::KvCache& cache, bool conv_silu = true);
  virtual ~RecurrentLayer() = default;

  // x: the normalised input [E, T] (batch order) -> [E, T] (batch order).
  // `rf`: see ResidualFusion (blocks.h): the input norm in the input
  // projections, the residual add in the output projection (batch order
  // only: no gather back).
  TensorView run(const TensorView& x, ResidualFusion* rf);

 protected:
  // Projects xs [E, T] (recurrent order) through xs.mul_mat: sets conv_in_
  // [C, T] and whatever the mixer needs later.
  virtual void project(BlockInput& xs) = 0;
  // The plain scan over rows r0 .. r0 + t * n of conv_out_ (n sequences of t
  // tokens each) on `state` [pool ne0, ne1, ne2, n], updated in place.
  virtual void scan_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state) = 0;
  // The fused single-token scan of n sequences from row r0 on the pool by
  // slot ids; false when no backend runs it (the caller takes the unfused
  // path).
  virtual bool scan_fused(int64_t r0, int64_t n, const TensorView& ids) = 0;
  // The layer output [E, T] in recurrent order, after every step ran; its
  // last product through output_product(w, y).
  virtual TensorView output() = 0;
  // w y, or x += w y where the ResidualFusion asks for it (see run).
  TensorView output_product(const TensorView& w, const TensorView& y);

  static constexpr size_t kF = sizeof(float);

  ForwardContext& ctx_;
  const ModelConfig& cfg_;
  const LayerWeights& l_;
  const RecurrentInputs& ri_;
  const cache::RecurrentPlan& rp_;
  TensorView conv_pool_;  // [K - 1, C, n_slots]
  TensorView ssm_pool_;   // [S0, S1, H, n_slots] (the mixer's state shape); empty: no state
  const int64_t c_, taps_;
  const bool conv_silu_;
  TensorView conv_in_;   // [C, T] conv input, recurrent order
  TensorView conv_out_;  // [C, T] conv output (SiLU applied when conv_silu_)
  ResidualFusion* out_rf_ = nullptr;  // run's rf where the output is in batch order

 private:
  void decode_run(size_t a, size_t b);
  void prefill_step(size_t i);
  // Unfused conv of `n` sequences of `t` tokens each from recurrent row r0
  // (slots: theirs, in order): host window, kSsmConv, taps written back.
  // Returns the window [K - 1 + t, C, n] for checkpoint taps.
  TensorView conv_plain(int64_t r0, int64_t t, std::span<const int32_t> slots);
  // Slot views of the pools: state [S0, S1, H, 1], taps [K - 1, C, 1, 1].
  TensorView state_of(int32_t slot) const;
  TensorView taps_of(int32_t slot) const;
  // The K - 1 window entries of sequence s from time index `at`: [K - 1, C, 1, 1].
  TensorView window_taps(const TensorView& win, int64_t s, int64_t at) const;
  // Copies this layer's state (taps) of slot `src` into slot `dst`.
  void copy_state(int32_t src, int32_t dst);
  void copy_taps(int32_t src, int32_t dst);
};

}  // namespace folio::model
