// Flags shared by the model-running commands (run, chat, batch, serve),
// declared once, named like llama.cpp's and validated while the command line
// is parsed (before any model loads; errors name the flag), and the loading
// sequence they share.
//
// One set of defaults for every command (README "Defaults"): context 4096,
// -b 2048 tokens per step, -ub 512 tokens per prefill chunk, f16 KV in
// 16-token blocks, all cores; sampling as llama.cpp's (temperature 0.8,
// top-k 40, top-p 0.95, min-p 0.05, no penalties); -n -1 (until the end of
// generation or a full context). `serve` takes the model and cache flags;
// its requests follow the OpenAI API's own defaults.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cache/kv_cache.h"
#include "core/status.h"
#include "engine/sampling_params.h"
#include "engine/speculative_options.h"
#include "model/forward_context.h"
#include "model/hidden_states.h"
#include "model/model.h"
#include "model/mtp_head.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace folio::tools {

struct ModelFlags {
  std::string model;             // -m
  int threads = 0;               // -t (0: all cores)
  int threads_batch = 0;         // -tb (0: -t); folio uses one thread count for both
  int64_t ctx_size = 4096;       // -c (0: the model's training context; capped by it)
  int64_t batch_size = 2048;     // -b: tokens one step takes, all sequences together
  int64_t ubatch_size = 512;     // -ub: largest prefill chunk of one sequence per step
  std::string kv_type = "f16";   // --kv-type f32|f16|bf16|q8_0
  int kv_block_size = 16;        // --kv-block-size: paged KV block, 8..128, a power of two
  int32_t kv_blocks = 0;         // --kv-blocks: pool size in blocks (0: sized for the context)
  int64_t kv_memory_mib = 0;     // --kv-memory: pool size in MiB (excludes --kv-blocks)
                                 // Either must hold one full context (checked at load).
  bool no_repack = false;        // --no-repack: weights stay in their GGUF layout (mapped)
  bool no_mmap = false;          // --no-mmap: read the file into memory instead of mapping it
  bool mlock = false;            // --mlock: keep the weights in RAM (no swapping out)
  std::string flash_attn = "auto";  // -fa on|off|auto: folio's attention is always flash
  std::string device = "auto";   // --device auto|cpu|none|vulkan|vulkan:N
  int n_gpu_layers = -1;         // -ngl: layers on the device (-1: all when a device is used)
};

void add_model_flags(CLI::App* cmd, ModelFlags* flags);
// --device (also -dev) and --n-gpu-layers (also -ngl); add_model_flags
// declares them, commands with flags of their own (logits, bench) too.
void add_device_flags(CLI::App* cmd, std::string* device, int* n_gpu_layers);
// Notices about flags that are accepted but change nothing here (-fa off,
// -tb) and -t beyond this machine's CPUs; written to stderr at warn level
// before the model loads.
void warn_about_model_flags(const ModelFlags& flags);
// Tokens one sequence feeds per forward while filling its prompt.
int64_t prefill_chunk(const ModelFlags& flags);

// -n / --n-predict with the shared default (-1: until the end of generation
// or a full context); values below -1 are refused while parsing.
void add_n_predict_flag(CLI::App* cmd, int64_t* n_predict, const std::string& what);

// Weight placement for the CPU: AMX or CPU_REPACK, then CPU (packed layouts
// where kernels of the active ISA read them, backend/cpu/cpu_buffer_types.h),
// or plain CPU only with no_repack.
std::vector<const BufferType*> weight_buffer_types(bool no_repack);
// One line on that choice to `log` (nullptr: silent); written after the
// model loaded, so it never precedes a load error.
void log_weight_buffer_types(bool no_repack, std::FILE* log);

// Where informational lines (loading progress, configuration, speeds) go:
// stderr at --log-level info or lower, nullptr (silent) above.
std::FILE* info_log();

// Sampling flags (--temp, --top-k, --top-p, --min-p, --seed, penalties, ...).
struct SamplingFlags {
  SamplingParams params;
  int64_t seed = -1;  // -1: random
};
void add_sampling_flags(CLI::App* cmd, SamplingFlags* flags);
// Copies flags into the params (seed) and validates them against the
// vocabulary (the flags' own ranges were checked while parsing).
Result<SamplingParams> sampling_params(const SamplingFlags& flags, int32_t n_vocab);

// Speculative decoding flags (README "Speculative decoding"), llama.cpp's
// spellings where it has the concept: --spec-type none|ngram|draft (also
// --spec), --spec-ngram-n-min / --spec-ngram-n-max, --spec-draft-n-max
// (--draft-max, --draft, --draft-n), --spec-draft-n-min (--draft-min,
// --draft-n-min), -md / --model-draft FILE (implies --spec-type draft),
// --draft-p-min (--spec-draft-p-min), --device-draft (-devd,
// --spec-draft-device), --n-gpu-layers-draft (-ngld, --spec-draft-ngl,
// --gpu-layers-draft); folio's own: --spec-max-batch,
// --spec-min-accept. Each range is checked while parsing; spec_options()
// checks them together.
struct SpecFlags {
  std::string type = "none";
  std::string draft_model;  // -md
  // The draft model's device, as --device / -ngl are the target's
  // (cli_device.h): --device-draft (-devd), --n-gpu-layers-draft (-ngld).
  std::string draft_device = "auto";
  int draft_n_gpu_layers = -1;
  SpeculativeOptions options;
};
void add_spec_flags(CLI::App* cmd, SpecFlags* flags);
Result<SpeculativeOptions> spec_options(const SpecFlags& flags);

// Model::load, then checks the model can use `device` (nullptr: CPU only)
// and logs what was offloaded.
Result<std::unique_ptr<model::Model>> load_on_device(const std::string& path,
                                                    const model::LoadOptions& lo, Backend* device);

// The draft model of --spec-type draft, loaded beside the target; or the
// target's MTP head of --spec-type mtp (mtp, hidden; no model or device
// of its own).
struct LoadedDraft {
  std::unique_ptr<Backend> device;  // first member: destroyed last (nullptr: the CPU)
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::MtpHead> mtp;
  std::unique_ptr<model::HiddenStates> hidden;  // the target context's hidden sink
  std::unique_ptr<model::ForwardContext> ctx;
  std::unique_ptr<cache::KvCache> cache;
};

// Everything a generating command needs, loaded from the flags.
struct LoadedModel {
  std::unique_ptr<Backend> device;  // first member: destroyed last (the rest uses its memory)
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<model::ForwardContext> ctx;
  std::unique_ptr<cache::KvCache> cache;
  std::unique_ptr<LoadedDraft> draft;  // --spec-type draft (load_draft)
};

// Loads the model (progress and buffers on info_log()), its tokenizer, a
// forward context (the --device, then the CPU) and a paged KV cache holding
// sequence 0 (in the device's memory when layers are offloaded). A KV pool
// (--kv-blocks / --kv-memory) that cannot hold one full context of one
// sequence is an error (kInvalidArgument) naming what it holds and the -c,
// --kv-blocks and --kv-memory values that would do. With speculation
// (`spec` enabled) a hybrid model's cache keeps draft_max recurrent-state
// slots for its draft snapshots (KvCacheOptions::draft_slots).
Result<LoadedModel> load_for_generation(const ModelFlags& flags,
                                        const SpeculativeOptions& spec = {});
// The same with a paged KV cache (cache::PagedKvCache) holding no sequence,
// its pool sized for n_parallel contexts unless --kv-blocks / --kv-memory say;
// draft snapshot slots for min(spec.max_batch, n_parallel) sequences.
Result<LoadedModel> load_for_batch(const ModelFlags& flags, int n_parallel,
                                   const SpeculativeOptions& spec = {});

// With spec->type == kDraft: loads flags.draft_model on its own device
// (-devd / -ngld chosen as --device / -ngl are for the target: the CPU
// unless they ask for a device; its KV cache in the device's memory when
// layers are offloaded) with the target's -t, --kv-type, --kv-block-size
// and -c, checks its vocabulary against the target's
// (check_draft_vocabulary), makes its paged cache for n_parallel sequences
// with full contexts plus a proposal fork for each of min(--spec-max-batch,
// n_parallel) of them, and points spec->draft at it. Errors name the file.
// With --spec-type mtp: the target's MTP head (the target was loaded with
// its MTP blocks: load_for_generation / load_for_batch with that spec), a
// paged cache of the head's one layer for n_parallel full contexts, its
// own forward context on the target's device, the target context's hidden
// sink, all in spec->mtp; a model without MTP blocks (or of a family whose
// blocks folio does not run) is kInvalidArgument naming the file.
// Other types: nothing.
Status load_draft(const ModelFlags& target_flags, const SpecFlags& flags, int n_parallel,
                  LoadedModel* lm, SpeculativeOptions* spec);

// The chat template for a loaded model: its tokenizer.chat_template; a Gemma
// model without one gets folio's Gemma turn format; otherwise the ChatML
// fallback (ChatTemplate::from_gguf). Used by `chat` and `serve`.
chat::ChatTemplate pick_chat_template(const LoadedModel& lm);

// Prints "folio: MESSAGE" on stderr and returns exit code 1.
int fail(const Status& status);

}  // namespace folio::tools
