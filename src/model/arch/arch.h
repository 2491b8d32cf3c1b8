// Architecture registry: the one place that maps a GGUF `general.architecture`
// name to the functions of its family. Each family file (llama.cc, qwen.cc,
// gemma3.cc, qwen3next.cc, gpt_oss.cc, bert.cc) defines its entries; nothing else branches
// on the architecture.
//
//   configure  reads the family's own keys and sets its traits on the config
//              (rope mode, biases, q/k norm, post norms, sliding-window
//              layout, scales), after the common keys were read;
//   forward    runs the family's decoder over one batch, built from the shared
//              blocks (model/blocks/), and writes the logits of the flagged
//              tokens.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "tensor/tensor_view.h"

namespace folio::cache {
class KvCache;
}  // namespace folio::cache

namespace folio::model {

struct ModelConfig;
struct ModelWeights;
struct ForwardInputs;
class ForwardContext;

struct ArchFamily {
  const char* name;  // "llama", "qwen3moe", ...
  Status (*configure)(const gguf::GgufFile& file, ModelConfig& cfg);
  // Returns the logits F32 [n_vocab, n_out] (empty when n_out == 0); errors
  // are recorded in ctx (sticky) and returned by the caller.
  // Encoder families (bert, nomic-bert) return the final hidden states F32
  // [n_embd, n_out] instead.
  TensorView (*forward)(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                        cache::KvCache& cache, ForwardContext& ctx);
  // An encoder (embedding model): LayerNorm epsilon key
  // (attention.layer_norm_epsilon), no LM head, forward as above.
  bool encoder = false;
  // The norm epsilon's key when it is neither of those (nemotron_h:
  // attention.layer_norm_epsilon for its RMS norms); nullptr: as above.
  const char* norm_eps_key = nullptr;
  // One MTP block's decoder layer (model/mtp_head.h): cfg and w describe
  // the block as a one-layer model (ModelConfig::mtp_block_config; its
  // layer is w.layers[0], its K/V cache layer 0); x [E, T], the residual
  // stream after the block's input projection, -> x after the layer.
  // nullptr: the family does not run its MTP blocks.
  TensorView (*mtp_layer)(const ModelConfig& cfg, const ModelWeights& w, const TensorView& x,
                          const ForwardInputs& in, cache::KvCache& cache,
                          ForwardContext& ctx) = nullptr;
};

// The family of `arch`, or nullptr.
const ArchFamily* find_arch(std::string_view arch);
// "gemma3, llama, qwen2, qwen3, qwen3moe" (for error messages).
std::string known_archs();

// Each family file's entries (defined there).
std::span<const ArchFamily> llama_archs();
std::span<const ArchFamily> qwen_archs();
std::span<const ArchFamily> gemma3_archs();
std::span<const ArchFamily> qwen3next_archs();  // qwen3next, qwen35, qwen35moe (hybrid)
std::span<const ArchFamily> gpt_oss_archs();    // gpt-oss
std::span<const ArchFamily> bert_archs();       // bert, nomic-bert (encoders: embeddings)
std::span<const ArchFamily> granite_hybrid_archs();
std::span<const ArchFamily> phi3_archs();
std::span<const ArchFamily> mistral3_archs();  // mistral3 (Mistral Small 3, Ministral 3)
std::span<const ArchFamily> glm4moe_archs();   // glm4moe (GLM-4.5 / 4.6 / 4.7)
std::span<const ArchFamily> gemma4_archs();  // gemma4 (dense; per-layer inputs, shared KV)
std::span<const ArchFamily> lfm2_archs();      // lfm2, lfm2moe (Liquid LFM2: short-conv hybrids)
std::span<const ArchFamily> nemotron_h_archs();  // nemotron_h, nemotron_h_moe (Mamba-2 hybrids)
std::span<const ArchFamily> exaone4_archs();     // exaone4 (post-norm-only layers)
std::span<const ArchFamily> deepseek2_archs();   // deepseek2 (multi-head latent attention)
std::span<const ArchFamily> hunyuan_archs();     // hunyuan-dense (q/k norms after the rope)
std::span<const ArchFamily> ernie4_5_archs();    // ernie4_5, ernie4_5-moe
std::span<const ArchFamily> minimax_m2_archs();  // minimax-m2 (q/k norms across heads)
std::span<const ArchFamily> falcon_h1_archs();   // falcon-h1 (Mamba-2 beside attention per layer)

}  // namespace folio::model
