// KV cache interface: what a forward pass needs from K/V storage, nothing
// more. The model never indexes the cache itself; per batch it asks for
//   - a plan (plan()): the slot of each new K/V row (slot mapping) and each
//     sequence's K/V length after the batch, checked against the capacity
//     before anything is written (plan first, apply after success);
//   - per layer, the storage as a table of rows [D * n_kv_head, n_slots]
//     (written with kSetRows through the slot mapping) and the same memory in
//     the flash-attention layout (k_view / v_view, read by kFlashAttn with
//     the layout's metadata: kv_len, and a block table for paged caches).
// The paged cache (cache/ layer) implements the same interface later.
//
// ContiguousKvCache: each sequence owns n_ctx positions. Per layer
//   K [Dk, n_kv_head, n_ctx, n_seq], V [Dv, n_kv_head, n_ctx, n_seq]
// in F32 (default, for parity), F16 or Q8_0; slot = seq * n_ctx + pos.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/op.h"
#include "core/status.h"
#include "model/batch.h"
#include "model/config.h"
#include "tensor/buffer.h"
#include "tensor/tensor_view.h"

namespace folio::model {

// What a batch does to the cache; filled by plan() (vectors are reused).
struct KvPlan {
  std::vector<int32_t> slots;   // [n_tokens] table row of each token's K/V
  std::vector<int32_t> kv_len;  // [n_seq] valid positions per sequence after the batch
};

class KvCache {
 public:
  virtual ~KvCache() = default;

  virtual int n_layer() const = 0;
  virtual int n_seq() const = 0;
  virtual int64_t n_ctx() const = 0;  // positions one sequence can hold
  virtual DType type() const = 0;
  virtual int64_t seq_len(int seq) const = 0;
  virtual size_t bytes() const = 0;

  // Checks `batch` against the cache and fills `plan`; mutates nothing.
  // Every token's sequence must exist and, per sequence, the batch's
  // positions must continue it (seq_len, seq_len + 1, ... in batch order);
  // a sequence that would outgrow n_ctx is kResourceExhausted.
  virtual Status plan(const Batch& batch, KvPlan& plan) const = 0;
  // Commits a plan whose forward pass succeeded (sequence lengths grow).
  virtual void apply(const KvPlan& plan) = 0;

  // Layer storage as rows: [D * n_kv_head, n_slots] (kSetRows destination).
  virtual TensorView k_table(int layer) const = 0;
  virtual TensorView v_table(int layer) const = 0;
  // The same memory in the flash-attention layout of layout().
  virtual TensorView k_view(int layer) const = 0;
  virtual TensorView v_view(int layer) const = 0;
  virtual KvLayout layout() const = 0;
  virtual int block_size() const { return 16; }
  // Paged layouts: the block table I32 [max_blocks, n_seq]; empty otherwise.
  virtual TensorView block_table() const { return {}; }

  // Forgets every sequence.
  virtual void clear() = 0;
  // Drops positions >= len of one sequence (len <= seq_len).
  virtual Status truncate(int seq, int64_t len) = 0;
};

struct KvCacheOptions {
  int64_t n_ctx = 4096;     // positions per sequence
  int n_seq = 1;            // sequences
  DType type = DType::F32;  // F32, F16 or Q8_0 (head dims must be multiples of 32)
};

class ContiguousKvCache final : public KvCache {
 public:
  // Allocates K/V for every layer of `cfg` (host memory, zeroed).
  static Result<std::unique_ptr<ContiguousKvCache>> create(const ModelConfig& cfg,
                                                           const KvCacheOptions& options);

  int n_layer() const override { return static_cast<int>(layers_.size()); }
  int n_seq() const override { return n_seq_; }
  int64_t n_ctx() const override { return n_ctx_; }
  DType type() const override { return type_; }
  int64_t seq_len(int seq) const override { return len_[static_cast<size_t>(seq)]; }
  size_t bytes() const override { return buffer_ == nullptr ? 0 : buffer_->size(); }

  Status plan(const Batch& batch, KvPlan& plan) const override;
  void apply(const KvPlan& plan) override;

  TensorView k_table(int layer) const override;
  TensorView v_table(int layer) const override;
  TensorView k_view(int layer) const override { return layers_[static_cast<size_t>(layer)].k; }
  TensorView v_view(int layer) const override { return layers_[static_cast<size_t>(layer)].v; }
  KvLayout layout() const override { return KvLayout::kContiguous; }

  void clear() override;
  Status truncate(int seq, int64_t len) override;

 private:
  struct Layer {
    TensorView k;  // [Dk, n_kv_head, n_ctx, n_seq]
    TensorView v;  // [Dv, n_kv_head, n_ctx, n_seq]
  };
  ContiguousKvCache() = default;

  int n_seq_ = 0;
  int64_t n_ctx_ = 0;
  DType type_ = DType::F32;
  std::unique_ptr<Buffer> buffer_;
  std::vector<Layer> layers_;
  std::vector<int64_t> len_;  // [n_seq] positions held
};

}  // namespace folio::model
