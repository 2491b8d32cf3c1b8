// Flags shared by the model-running commands (run, chat, ...), declared once
// and named like llama.cpp's, and the loading sequence they share.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "cache/kv_cache.h"
#include "core/status.h"
#include "engine/sampling_params.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace folio::tools {

struct ModelFlags {
  std::string model;             // -m
  int threads = 0;               // -t (0: all cores)
  int64_t ctx_size = 4096;       // -c (capped by the model's training context)
  std::string kv_type = "f16";   // --kv-type f32|f16|q8_0
  int64_t batch_size = 512;      // -b prefill chunk
  int kv_block_size = 16;        // --kv-block-size: paged KV block, 8..128, a power of two
  int32_t kv_blocks = 0;         // --kv-blocks: pool size in blocks (0: sized for the context)
  int64_t kv_memory_mib = 0;     // --kv-memory: pool size in MiB (excludes --kv-blocks)
  bool no_repack = false;        // --no-repack: weights stay in their GGUF layout (mapped)
};

void add_model_flags(CLI::App* cmd, ModelFlags* flags);

// Weight placement for the CPU: AMX -> CPU_REPACK -> CPU (packed layouts
// where kernels of the active ISA read them, backend/cpu/cpu_buffer_types.h),
// or plain CPU only with no_repack. Writes one line on the choice to `log`
// (nullptr: silent).
std::vector<const BufferType*> weight_buffer_types(bool no_repack, std::FILE* log);

// Sampling flags (--temp, --top-k, --top-p, --min-p, --seed, penalties, ...).
struct SamplingFlags {
  SamplingParams params;
  int64_t seed = -1;  // -1: random
};
void add_sampling_flags(CLI::App* cmd, SamplingFlags* flags);
// Copies flags into the params (seed) and validates them.
Result<SamplingParams> sampling_params(const SamplingFlags& flags, int32_t n_vocab);

// Everything a generating command needs, loaded from the flags.
struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<model::ForwardContext> ctx;
  std::unique_ptr<cache::KvCache> cache;
};

// Loads the model (progress and buffers on stderr), its tokenizer, a CPU
// forward context and a paged KV cache holding sequence 0.
Result<LoadedModel> load_for_generation(const ModelFlags& flags);
// The same with a paged KV cache (cache::PagedKvCache) holding no sequence,
// its pool sized for n_parallel contexts unless --kv-blocks / --kv-memory say.
Result<LoadedModel> load_for_batch(const ModelFlags& flags, int n_parallel);

// The chat template for a loaded model: its tokenizer.chat_template; a Gemma
// model without one gets folio's Gemma turn format; otherwise the ChatML
// fallback (ChatTemplate::from_gguf). Used by `serve`.
tokenizer::ChatTemplate pick_chat_template(const LoadedModel& lm);

}  // namespace folio::tools
