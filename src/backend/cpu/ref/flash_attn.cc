// Reference flash attention (kFlashAttn, tier kRef): the plain definition
// that every optimised flash kernel is checked against.
//
// For each query token i and head h (KV head h / (n_head / n_kv_head)), the
// visible key positions p are visited one at a time in ascending order with
// an online softmax in f32:
//   s   = (sum_d q[d] * k_p[d], f32, ascending d) * scale
//   s   = softcap * tanh(s / softcap)                      (softcap > 0)
//   s > m:  acc = acc * exp(m - s) + v_p;  l = l * exp(m - s) + 1;  m = s
//   else:   acc = acc + exp(s - m) * v_p;  l = l + exp(s - m)
// then the sink logit (if any) joins the denominator with no value vector:
//   sink > m:  acc *= exp(m - sink);  l = l * exp(m - sink) + 1
//   else:      l += exp(sink - m)
// and out = acc / l. A token with no visible key writes zeros. The sink is
// the raw per-head logit: neither scaled nor soft-capped (as ggml's
// flash_attn_ext applies it).
//
// K/V rows are dequantized to f32 (KvRows) whatever the layout: since the
// visiting order and the arithmetic do not depend on where a row lives, the
// paged and contiguous layouts give byte-identical outputs.
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/ref/attn_util.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::attn_ref {

Status flash_attn_ref(const Op& op, const KernelContext& /*ctx*/) {
  FOLIO_RETURN_IF_ERROR(check_attention_data(op));
  QueryHeads heads(op);
  const AttentionParams& p = heads.params;
  const int64_t d = heads.d, dv = heads.dv;

  std::vector<float> k(static_cast<size_t>(d)), v(static_cast<size_t>(dv)),
      acc(static_cast<size_t>(dv));
  QueryHead qh;
  while (heads.next(&qh)) {
    float m = -std::numeric_limits<float>::infinity();
    float l = 0.0f;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t pk = qh.keys.begin; pk < qh.keys.end; ++pk) {
      heads.k_rows.read(qh.seq, qh.kv_head, pk, k.data());
      float dot = 0.0f;
      for (int64_t c = 0; c < d; ++c) dot += qh.q[c] * k[static_cast<size_t>(c)];
      float score = dot * p.scale;
      if (p.softcap > 0.0f) score = p.softcap * std::tanh(score / p.softcap);
      heads.v_rows.read(qh.seq, qh.kv_head, pk, v.data());
      float ms = 1.0f;  // rescale of what is accumulated so far
      float vs = 1.0f;  // weight of this value row
      if (score > m) {
        ms = std::exp(m - score);  // 0 for the first key (m = -inf)
        m = score;
        for (float& a : acc) a *= ms;
      } else {
        vs = std::exp(score - m);
      }
      for (int64_t c = 0; c < dv; ++c)
        acc[static_cast<size_t>(c)] += vs * v[static_cast<size_t>(c)];
      l = l * ms + vs;
    }
    if (!heads.sinks.empty()) {
      const float sink = flat_at<float>(heads.sinks, qh.head);
      if (sink > m) {
        const float ms = std::exp(m - sink);
        for (float& a : acc) a *= ms;
        l = l * ms + 1.0f;
      } else {
        l += std::exp(sink - m);
      }
    }
    for (int64_t c = 0; c < dv; ++c) qh.out[c] = acc[static_cast<size_t>(c)] / l;
  }
  return Status();
}

}  // namespace folio::attn_ref
