// Reference materialised attention (kSdpa, tier kRef): the tolerance
// reference for flash attention. Same inputs and semantics as kFlashAttn
// (see flash_attn.cc and op.h), but computed the textbook way in double:
// all visible scores of a (token, head) first, then a max-subtracted softmax
// whose denominator includes exp(sink - max) when sinks are given, then the
// weighted sum of V rows. Only the final division result is rounded to f32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/ref/attn_util.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::attn_ref {

Status sdpa_ref(const Op& op, const KernelContext& /*ctx*/) {
  FOLIO_RETURN_IF_ERROR(check_attention_data(op));
  QueryHeads heads(op);
  const int64_t d = heads.d, dv = heads.dv;
  const AttentionParams& p = heads.params;

  std::vector<float> row(static_cast<size_t>(std::max(d, dv)));
  std::vector<double> scores, acc(static_cast<size_t>(dv));
  QueryHead qh;
  while (heads.next(&qh)) {
    const KeyRange keys = qh.keys;
    scores.clear();
    for (int64_t pk = keys.begin; pk < keys.end; ++pk) {
      heads.k_rows.read(qh.seq, qh.kv_head, pk, row.data());
      double dot = 0.0;
      for (int64_t c = 0; c < d; ++c)
        dot += static_cast<double>(qh.q[c]) * row[static_cast<size_t>(c)];
      double score = dot * p.scale;
      if (p.softcap > 0.0f) score = p.softcap * std::tanh(score / p.softcap);
      scores.push_back(score);
    }
    double max = *std::max_element(scores.begin(), scores.end());
    const bool has_sink = !heads.sinks.empty();
    const double sink = has_sink ? flat_at<float>(heads.sinks, qh.head) : 0.0;
    if (has_sink) max = std::max(max, sink);
    double denom = has_sink ? std::exp(sink - max) : 0.0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t pk = keys.begin; pk < keys.end; ++pk) {
      const double w = std::exp(scores[static_cast<size_t>(pk - keys.begin)] - max);
      denom += w;
      heads.v_rows.read(qh.seq, qh.kv_head, pk, row.data());
      for (int64_t c = 0; c < dv; ++c)
        acc[static_cast<size_t>(c)] += w * row[static_cast<size_t>(c)];
    }
    for (int64_t c = 0; c < dv; ++c)
      qh.out[c] = static_cast<float>(acc[static_cast<size_t>(c)] / denom);
  }
  return Status();
}

}  // namespace folio::attn_ref
