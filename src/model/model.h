// Model: a loaded GGUF model (config + weights) and its forward pass.
//
// Loading (Model::load): GgufFile::open maps the file -> ModelConfig from the
// metadata -> every tensor of for_each_tensor() is looked up, checked (present
// if required, expected shape, supported dtype, F32 where an op needs F32)
// and placed through the buffer-type priority list (place_weight). A type
// that can_map_weights() gets a view into the mapping (no copy); any other
// type gets its own buffer, filled by store_weight (repacking). A progress
// bar and a buffer summary go to LoadOptions::log (nullptr: silent).
//
// A Model is immutable after loading: forwards may run concurrently from
// several ForwardContexts, each with its own KV cache.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/buffer_type.h"
#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "core/status.h"
#include "gguf/gguf_file.h"
#include "model/config.h"
#include "model/forward_context.h"
#include "model/forward_inputs.h"
#include "model/weights.h"

namespace folio::model {

struct LoadOptions {
  // Weight placement priority (first type that accepts a weight holds it);
  // empty: plain host memory (mapped).
  std::vector<const BufferType*> buffer_types;
  // Progress bar and buffer summary (stderr in the CLI); nullptr: silent.
  std::FILE* log = nullptr;
  // Touch every page of mapped weights while loading, so the progress bar
  // tracks real reading and the first forward does not page-fault.
  bool prefault = false;
  // How the file is brought into memory (mapped or read; locked or not).
  FileLoadOptions file;
  // Offload to a device (llama.cpp's -ngl): the tensors of the last
  // `offload_layers` layers are placed by `offload_type` first (then by
  // buffer_types when it declines one); offload_layers > n_layer (or -1)
  // also places the output head and the other global tensors there. Token
  // embeddings stay with buffer_types (their get_rows runs on the CPU).
  const BufferType* offload_type = nullptr;
  int offload_layers = 0;
  // Load the MTP blocks the file carries (ModelConfig::nextn) where the
  // family runs them (ArchFamily::mtp_layer): Model::has_mtp(). Off: they
  // stay in the file, unread.
  bool load_mtp = false;
};

// Where one tensor went.
struct TensorPlacement {
  std::string name;                  // model tensor name (what for_each_tensor calls it)
  std::string source;                // GGUF tensor it was loaded from (differs when tied)
  const BufferType* type = nullptr;  // holding buffer type
  bool mapped = false;               // view into the file mapping (no copy)
  DType dtype = DType::F32;
  size_t bytes = 0;
};

// The batch is well formed (sizes agree, tokens inside [0, n_vocab), at
// most 2^24 tokens); else kInvalidArgument naming what is wrong.
Status check_batch(const cache::Batch& batch, int64_t n_vocab);
// The forward's inputs (forward_inputs.h) of `batch` under the cache's
// `plan`, uploaded into ctx's arena (after ctx.begin()).
ForwardInputs upload_forward_inputs(const ModelConfig& cfg, const cache::Batch& batch,
                                    const cache::KvPlan& plan, ForwardContext& ctx);

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path,
                                             const LoadOptions& options = {});
  // From an already parsed file (tests build files in memory).
  static Result<std::unique_ptr<Model>> from_gguf(gguf::GgufFile file,
                                                  const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::GgufFile& file() const { return file_; }
  const std::vector<TensorPlacement>& placements() const { return placements_; }
  // The MTP blocks were loaded (LoadOptions::load_mtp on a file with them,
  // of a family that runs them; model/mtp_head.h runs them).
  bool has_mtp() const { return config_.nextn.loaded && !weights_.mtp.empty(); }
  // "CPU (mapped): 236 tensors, 241.39 MiB" lines, one per buffer type.
  std::vector<std::string> buffer_summary() const;

  // Runs `batch` (tokens of one or more sequences of `cache`) and returns the
  // logits F32 [n_vocab, n_outputs] of the flagged tokens in batch order
  // (no data when there are none). The view lives in ctx's arena until ctx's
  // next forward. The cache's plan is applied only on success; on error the
  // cache's sequences are unchanged.
  // Embedding models (config().is_embedding()) have no logits: kUnsupported.
  Result<TensorView> forward(const cache::Batch& batch, cache::KvCache& cache,
                             ForwardContext& ctx) const;

  // The encoder of an embedding model (bert, nomic-bert): runs `batch` like
  // forward() and returns the final hidden states F32 [n_embd, n_outputs] of
  // the flagged tokens in batch order (host memory, in ctx's arena until its
  // next forward). With non-causal attention each sequence must be fed whole
  // in one batch (a token sees the keys its sequence holds after the batch):
  // a sequence of the batch that already holds positions is
  // kInvalidArgument. Pooling and normalisation are the caller's
  // (engine/embedder.h). Generative models: kUnsupported.
  Result<TensorView> embed(const cache::Batch& batch, cache::KvCache& cache,
                           ForwardContext& ctx) const;

  // A KV cache sized for this model (cache::create_kv_cache over
  // config().cache_geometry()): contiguous or paged as options.storage says;
  // hybrid models get a HybridKvCache over such an attention part.
  Result<std::unique_ptr<cache::KvCache>> make_cache(const cache::KvCacheOptions& options) const;

 private:
  explicit Model(gguf::GgufFile file) : file_(std::move(file)) {}
  Status load_weights(const LoadOptions& options);
  // A weight copied into a buffer at load: where from and how it is used.
  struct StoredWeight {
    const BufferType* type = nullptr;
    const gguf::TensorInfo* info = nullptr;
    WeightUse use;
  };
  // Stores `parts` (weights [K, N_i] that one input multiplies) again back
  // to back in one buffer of their device buffer type and sets *joint to
  // the whole [K, sum N_i] and each part to its rows there, so one product
  // computes them all: where every part was copied (`stored`) into one
  // non-host type in the file's layout, with one dtype and K. Anything
  // else, or no room for the copy, leaves them as they are.
  Status join_weights(std::initializer_list<TensorView*> parts,
                      const std::map<const void*, StoredWeight>& stored, TensorView* joint);
  // forward() and embed(): the family's forward over `batch`; its output rows
  // are `width` wide (n_vocab or n_embd).
  Result<TensorView> run(const cache::Batch& batch, cache::KvCache& cache, ForwardContext& ctx,
                         int64_t width) const;

  gguf::GgufFile file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // weights not mapped
  std::vector<TensorPlacement> placements_;
  size_t unused_tensors_ = 0;  // file tensors no spec asked for
};

}  // namespace folio::model
