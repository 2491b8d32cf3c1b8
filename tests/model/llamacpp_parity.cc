#include "llamacpp_parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "test_util.h"

namespace folio::model::testing {

void expect_llamacpp_parity(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                            const std::string& base, ParityTolerance tol,
                            const std::string& label) {
  Result<std::vector<int32_t>> prompt = read_ids(base + ".prompt_tokens.txt");
  Result<std::vector<int32_t>> gen = read_ids(base + ".gen_tokens.txt");
  Result<NpyF32> ref_prefill = read_npy(base + ".prefill.npy");
  Result<NpyF32> ref_decode = read_npy(base + ".decode.npy");
  ASSERT_TRUE(prompt.ok() && gen.ok() && ref_prefill.ok() && ref_decode.ok()) << base;
  const int64_t n_vocab = m.config().n_vocab;
  ASSERT_EQ(ref_prefill->rows(), static_cast<int64_t>(prompt->size()));
  ASSERT_EQ(ref_prefill->cols(), n_vocab);
  ASSERT_EQ(ref_decode->rows(), static_cast<int64_t>(gen->size()));

  Result<std::vector<float>> prefill = eval_all(m, cache, ctx, *prompt);
  ASSERT_TRUE(prefill.ok()) << prefill.status().to_string();
  float worst_prefill = 0.0f;
  for (int64_t r = 0; r < ref_prefill->rows(); ++r) {
    const float d = max_abs_diff(prefill->data() + r * n_vocab, ref_prefill->row(r), n_vocab);
    EXPECT_LE(d, tol.prefill) << "prefill row " << r;
    worst_prefill = std::max(worst_prefill, d);
  }

  float worst_decode = 0.0f;
  int32_t predicted =
      argmax(prefill->data() + (prefill->size() - static_cast<size_t>(n_vocab)), n_vocab);
  int matched = 0;
  for (size_t i = 0; i < gen->size(); ++i) {
    EXPECT_EQ(predicted, (*gen)[i]) << "greedy token " << i;
    matched += predicted == (*gen)[i];
    Result<std::vector<float>> row = eval_one(m, cache, ctx, (*gen)[i]);
    ASSERT_TRUE(row.ok()) << row.status().to_string();
    const float d = max_abs_diff(row->data(), ref_decode->row(static_cast<int64_t>(i)), n_vocab);
    EXPECT_LE(d, tol.decode) << "decode row " << i;
    worst_decode = std::max(worst_decode, d);
    predicted = argmax(row->data(), n_vocab);
  }
  std::printf("[ parity ] %s: prefill max|d| %.3g, decode max|d| %.3g, greedy %d/%zu\n",
              label.c_str(), worst_prefill, worst_decode, matched, gen->size());
}

}  // namespace folio::model::testing
