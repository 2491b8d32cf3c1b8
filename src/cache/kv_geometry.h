// KvGeometry: what a model asks its cache to hold, layer by layer. The model
// fills it from its hyperparameters (model::ModelConfig::cache_geometry); the
// cache sizes its storage from it and never sees the model.
//
// An attention layer holds K/V rows of n_kv_head heads (cache::KvLayerShape);
// a recurrent layer (gated DeltaNet, Mamba-2, LFM2 short conv) holds, per
// sequence, its conv taps
//   F32 [conv_taps, conv_channels]
// and its recurrent state
//   F32 [head_dim, state_rows(), n_heads]
// (DeltaNet: S x S per head; Mamba-2: head_dim = d_state values for each of
// the head's value_dim channels; short conv: none, head_dim = n_heads = 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cache/kv_sizing.h"

namespace folio::cache {

// Recurrent state of one recurrent layer for one sequence.
struct RecurrentShape {
  int64_t conv_taps = 0;      // K - 1: the conv's most recent inputs kept per channel
  int64_t conv_channels = 0;  // C
  int64_t head_dim = 0;       // S (DeltaNet), d_state (Mamba-2): values per row; 0: no state
  int64_t n_heads = 0;        // H_v; 0: no state (conv taps only)
  int64_t value_dim = 0;      // rows per head; 0: head_dim (DeltaNet's square state)

  int64_t state_rows() const { return value_dim > 0 ? value_dim : head_dim; }
  bool has_state() const { return head_dim > 0 && n_heads > 0; }

  size_t conv_bytes() const {
    return static_cast<size_t>(conv_taps * conv_channels) * sizeof(float);
  }
  size_t state_bytes() const {
    return static_cast<size_t>(head_dim * state_rows() * n_heads) * sizeof(float);
  }
};

struct LayerGeometry {
  bool recurrent = false;
  KvLayerShape kv;       // attention layers (and recurrent layers with_kv)
  RecurrentShape state;  // recurrent layers
  // Neither K/V nor recurrent state: an FFN-only layer (nemotron_h). Only the
  // hybrid cache maps such layers (to nothing).
  bool stateless = false;
  // A recurrent layer that also attends (falcon-h1's parallel mixers): it
  // holds K/V rows of shape kv beside its state. Only the hybrid cache maps it.
  bool with_kv = false;
};

struct KvGeometry {
  std::string name;                   // the model's architecture; names prefix-hash keys
  std::vector<LayerGeometry> layers;  // [n_layer]

  int n_layer() const { return static_cast<int>(layers.size()); }
  // Any recurrent or stateless layer: the cache must be hybrid (it maps
  // model layers to its attention and recurrent parts).
  bool hybrid() const {
    for (const LayerGeometry& l : layers) {
      if (l.recurrent || l.stateless) return true;
    }
    return false;
  }
  // K/V shapes of the attention layers, in layer order (input of kv_sizing).
  std::vector<KvLayerShape> attention_shapes() const {
    std::vector<KvLayerShape> shapes;
    for (const LayerGeometry& l : layers) {
      if ((!l.recurrent || l.with_kv) && !l.stateless) shapes.push_back(l.kv);
    }
    return shapes;
  }
};

}  // namespace folio::cache
