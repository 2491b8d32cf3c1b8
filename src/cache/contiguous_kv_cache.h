// ContiguousKvCache: each sequence owns n_ctx positions. Per layer
//   K [Dk, n_kv_head, n_ctx, n_seq], V [Dv, n_kv_head, n_ctx, n_seq]
// in F32 (default, for parity), F16, BF16 or Q8_0; slot = seq * n_ctx + pos.
// Its n_seq slots always exist (ids 0..n_seq-1 are usable directly);
// add_sequence hands out an empty slot it has not handed out yet.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache/kv_cache.h"
#include "tensor/buffer.h"

namespace folio::cache {

class ContiguousKvCache final : public KvCache {
 public:
  // Allocates K/V for every layer of `geometry` (attention layers only;
  // options.n_ctx, n_seq and type), zeroed.
  static Result<std::unique_ptr<ContiguousKvCache>> create(const KvGeometry& geometry,
                                                           const KvCacheOptions& options);

  int n_layer() const override { return static_cast<int>(layers_.size()); }
  int n_seq() const { return n_seq_; }
  int64_t n_ctx() const override { return n_ctx_; }
  DType type() const override { return type_; }
  size_t bytes() const override { return buffer_ == nullptr ? 0 : buffer_->size(); }
  std::string summary() const override;

  bool has_sequence(int seq) const override { return seq >= 0 && seq < n_seq_; }
  int64_t seq_len(int seq) const override;
  Result<int> add_sequence() override;
  Result<int> fork_sequence(int parent) override;
  Status remove_sequence(int seq) override;
  Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> prompt) override;
  Status truncate(int seq, int64_t len) override;
  void clear() override;

  Status plan(const Batch& batch, KvPlan& plan) const override;
  void apply(const KvPlan& plan) override;

  TensorView k_table(int layer) const override;
  TensorView v_table(int layer) const override;
  TensorView k_view(int layer) const override { return layers_[static_cast<size_t>(layer)].k; }
  TensorView v_view(int layer) const override { return layers_[static_cast<size_t>(layer)].v; }
  bool paged() const override { return false; }

 private:
  struct Layer {
    TensorView k;  // [Dk, n_kv_head, n_ctx, n_seq]
    TensorView v;  // [Dv, n_kv_head, n_ctx, n_seq]; v_in_k: a view of k's rows
    bool v_in_k = false;
  };
  ContiguousKvCache() = default;

  int n_seq_ = 0;
  int64_t n_ctx_ = 0;
  DType type_ = DType::F32;
  std::unique_ptr<Buffer> buffer_;
  std::vector<Layer> layers_;
  std::vector<int64_t> len_;      // [n_seq] positions held
  std::vector<uint8_t> claimed_;  // [n_seq] 1: handed out by add/fork_sequence
};

}  // namespace folio::cache
