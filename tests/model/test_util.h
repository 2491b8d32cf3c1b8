// Helpers of the model tests: a tiny .npy reader (float32, C order), the
// reference-data files (comma-separated token ids), locating models, and the
// greedy / teacher-forced decode loop shared by the parity tests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/forward_context.h"
#include "model/model.h"

namespace folio::model::testing {

struct NpyF32 {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
  const float* row(int64_t r) const { return data.data() + r * cols(); }
};

// Reads a version 1/2/3 .npy file of little-endian float32 in C order.
Result<NpyF32> read_npy(const std::string& path);

// The first line of `path` as comma-separated integers.
Result<std::vector<int32_t>> read_ids(const std::string& path);

bool file_exists(const std::string& path);

// `s` with every character but letters and digits turned into '_': a name
// gtest accepts for a test parameter.
std::string test_name(std::string s);

// Shared refdata (read-only) and this suite's own refdata directory.
std::string shared_models_dir();
std::string local_refdata_dir();

// Index of the largest value (the first one on ties, like numpy.argmax).
int32_t argmax(const float* v, int64_t n);
float max_abs_diff(const float* a, const float* b, int64_t n);

// Evaluates `tokens` as sequence `seq` from the cache's current length, one
// batch, logits of every token: [n][n_vocab] row-major.
Result<std::vector<float>> eval_all(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                                    const std::vector<int32_t>& tokens, int seq = 0);
// Feeds one token at the next position of `seq` and returns its logits.
Result<std::vector<float>> eval_one(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                                    int32_t token, int seq = 0);

// A fixed 20-token prompt over the vocabulary, for weight-layout tests.
std::vector<int32_t> layout_test_prompt(int64_t n_vocab);
// Logits of `prompt` (one batch, a fresh contiguous F32 cache) and of four
// teacher-forced decode steps after it; failures are test failures.
// With `device`, the cache lives in its memory.
std::vector<std::vector<float>> prompt_and_decode_logits(const Model& m, ForwardContext& ctx,
                                                         const std::vector<int32_t>& prompt,
                                                         Backend* device = nullptr);
// The largest max_abs_diff over paired rows.
float worst_row_diff(const std::vector<std::vector<float>>& a,
                     const std::vector<std::vector<float>>& b);

// Adds f's metadata to w (but general.alignment: the writer sets its own),
// for tests that rewrite a file's tensors in memory.
Status copy_metadata(const gguf::GgufFile& f, gguf::GgufWriter& w);

// `path` (F32 weights) with its FFN matrices (ffn_gate / ffn_up / ffn_down
// and the *_exps expert stacks) quantized to `to` by the reference
// quantizer, as an in-memory GGUF; dequantize_back: stored as the F32
// values of those quantized rows instead.
Result<gguf::GgufFile> quantized_ffn_copy(const std::string& path, DType to, bool dequantize_back);

// `path` loaded with every layer and the output head on `device`.
Result<std::unique_ptr<Model>> load_offloaded(const std::string& path, Backend* device);
// Options of a cache of `n_seq` sequences of `n_ctx` positions with `type`
// entries, paged or contiguous, without prefix checkpoints, in `device`'s
// memory (nullptr: host memory).
cache::KvCacheOptions cache_options(DType type, int64_t n_ctx, int n_seq, bool paged,
                                    Backend* device);

}  // namespace folio::model::testing
