// Helpers of the hybrid-model tests: the refdata hybrid models, hybrid
// caches, forward contexts whose backends refuse chosen ops (to force the
// unfused recurrent path, or the token-by-token DeltaNet reference), and a
// small multi-sequence driver that records each sequence's logits.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "cache/hybrid_kv_cache.h"
#include "core/thread_pool.h"
#include "test_util.h"

namespace folio::model::testing {

// A backend that delegates to `inner` but refuses the op kinds in `refused`
// (routing then falls through to the next backend of the context, or to the
// model's unfused path where it uses ForwardContext::run_if_supported).
class RefusingBackend final : public Backend {
 public:
  RefusingBackend(Backend* inner, std::vector<OpKind> refused)
      : inner_(inner), refused_(std::move(refused)) {}
  std::string name() const override { return "refusing(" + inner_->name() + ")"; }
  KernelHandle select_kernel(const Op& op) const override {
    if (std::find(refused_.begin(), refused_.end(), op.kind) != refused_.end()) return nullptr;
    return inner_->select_kernel(op);
  }
  Status run_kernel(KernelHandle kernel, const Op& op) override {
    return inner_->run_kernel(kernel, op);
  }
  std::string kernel_name_of(KernelHandle kernel) const override {
    return inner_->kernel_name_of(kernel);
  }
  const BufferType& default_buffer_type() const override { return inner_->default_buffer_type(); }

 private:
  Backend* inner_;
  std::vector<OpKind> refused_;
};

// Forward contexts over the best CPU kernels, with some ops refused.
class TestContexts {
 public:
  TestContexts() : pool_(2) {
    CpuBackendOptions fast;
    fast.pool = &pool_;
    cpu_ = std::make_unique<CpuBackend>(fast);
    CpuBackendOptions ref;
    ref.reference_only = true;
    ref_ = std::make_unique<CpuBackend>(ref);
  }
  // Best kernels, fused decode ops.
  std::unique_ptr<ForwardContext> fused() { return make({}, false); }
  // The fused decode ops refused: gather -> plain op -> scatter.
  std::unique_ptr<ForwardContext> unfused() {
    return make({OpKind::kSsmConvUpdate, OpKind::kGatedDeltaNetUpdate, OpKind::kSsmScanUpdate},
                false);
  }
  // Plain kGatedDeltaNet on the reference kernel (always token by token), so
  // results do not depend on how a prompt is split into ops; everything
  // else on the best kernels.
  std::unique_ptr<ForwardContext> token_by_token() { return make({OpKind::kGatedDeltaNet}, true); }
  // A context whose backends refuse `op` altogether: forwards that need it fail.
  std::unique_ptr<ForwardContext> failing(OpKind op) { return make({op}, false); }

 private:
  std::unique_ptr<ForwardContext> make(std::vector<OpKind> refused, bool ref_fallback) {
    wrappers_.push_back(std::make_unique<RefusingBackend>(cpu_.get(), std::move(refused)));
    std::vector<Backend*> b{wrappers_.back().get()};
    if (ref_fallback) b.push_back(ref_.get());
    return std::make_unique<ForwardContext>(b);
  }

  ThreadPool pool_;
  std::unique_ptr<CpuBackend> cpu_;
  std::unique_ptr<CpuBackend> ref_;
  std::vector<std::unique_ptr<RefusingBackend>> wrappers_;
};

// The refdata hybrid models every hybrid cache test runs on.
inline const std::vector<std::string> kRefdataHybridModels = {
    "tiny-qwen3next",         "tiny-qwen35", "tiny-qwen35moe", "tiny-granitehybrid",
    "tiny-granitehybrid-moe", "tiny-lfm2",   "tiny-lfm2moe",   "tiny-nemotron-h",
    "tiny-nemotron-h-moe",    "llama-archs/falcon-h1-dense"};

// The refdata hybrid models: tiny-qwen3next and tiny-qwen35 (shared
// refdata), tiny-qwen35moe (this suite's refdata); "llama-archs/NAME": a
// file of llama.cpp's saver (llama-archs/NAME.gguf, llama_archs_test.cc).
inline std::string hybrid_model_path(const std::string& name) {
  if (name.rfind("llama-archs/", 0) == 0) return local_refdata_dir() + "/" + name + ".gguf";
  const std::string shared = shared_models_dir() + "/" + name + "-f32.gguf";
  return file_exists(shared) ? shared : local_refdata_dir() + "/" + name + "-f32.gguf";
}

inline std::unique_ptr<Model> load_hybrid(const std::string& name) {
  const std::string path = hybrid_model_path(name);
  if (!file_exists(path)) return nullptr;
  Result<std::unique_ptr<Model>> m = Model::load(path);
  FOLIO_CHECK_MSG(m.ok(), "{}", m.status().to_string());
  return std::move(m).value();
}

// n deterministic token ids below n_vocab, varied by `salt`.
inline std::vector<int32_t> test_tokens(int n, int salt, int64_t n_vocab) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) {
    v.push_back(static_cast<int32_t>((i * 37 + salt * 101 + 11) % n_vocab));
  }
  return v;
}

// A hybrid cache for tests: paged (blocks of 16, pool for n_seq * 512
// positions) or contiguous (n_seq * 512), F32 K/V by default.
inline std::unique_ptr<cache::HybridKvCache> test_cache(const Model& m, bool paged, int n_seq,
                                                        int max_checkpoints = 0,
                                                        int checkpoint_interval = 0,
                                                        DType kv = DType::F32) {
  cache::KvCacheOptions o;
  o.storage = paged ? cache::KvStorage::kPaged : cache::KvStorage::kContiguous;
  o.type = kv;
  o.n_ctx = 512;
  o.n_blocks = n_seq * 32 + 1 + 64;
  o.n_seq = paged ? 0 : n_seq;
  o.max_seqs = n_seq;
  o.max_checkpoints = max_checkpoints;
  o.checkpoint_interval = checkpoint_interval;
  Result<std::unique_ptr<cache::HybridKvCache>> c =
      cache::HybridKvCache::create(m.config().cache_geometry(), o);
  FOLIO_CHECK_MSG(c.ok(), "{}", c.status().to_string());
  return std::move(c).value();
}

// One sequence of a multi-sequence run: its prompt, then greedy decoding.
struct Stream {
  std::vector<int32_t> prompt;
  int n_gen = 0;
  int seq = -1;
  size_t fed = 0;                        // prompt tokens fed
  std::vector<int32_t> generated;        // greedy tokens
  std::vector<std::vector<float>> rows;  // logits: last prompt token, then each generated token
  bool done() const { return static_cast<int>(generated.size()) >= n_gen; }
};

}  // namespace folio::model::testing
