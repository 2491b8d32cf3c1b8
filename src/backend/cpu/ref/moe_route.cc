// moe_route reference (backend/op.h kMoeRoute): per token, probabilities in
// double rounded once (kSoftMax's and kUnary's sigmoid references, so the
// op equals soft_max / sigmoid, add, top_k and a gather of the chosen
// probabilities run on the reference kernels), the selection bias, the
// expert-group mask, top-k as kTopK orders, then the weights.
//
// logits F32 [X, n], bias F32 [X] (optional); ids I32 [k, n], weights F32
// [k, n]. Scratch per token: p, s [X] (floats), group scores [n_groups].
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {
namespace {

// a orders before b in kTopK's descending order with NaN last.
bool moe_route_before(float a, float b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a > b;
}

// p = softmax, sigmoid or the logits themselves (double, rounded once).
void moe_route_probs(MoeGating gating, const float* l, int64_t x, float* p) {
  if (gating == MoeGating::kSoftmaxWeight) {
    std::copy(l, l + x, p);
    return;
  }
  if (gating == MoeGating::kSigmoid) {
    for (int64_t j = 0; j < x; ++j) p[j] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(l[j]))));
    return;
  }
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < x; ++j) mx = std::max(mx, static_cast<double>(l[j]));
  if (mx == -std::numeric_limits<double>::infinity()) {
    std::fill(p, p + x, 0.0f);
    return;
  }
  std::vector<double> e(static_cast<size_t>(x));
  double sum = 0.0;
  for (int64_t j = 0; j < x; ++j) {
    e[j] = std::exp(static_cast<double>(l[j]) - mx);
    sum += e[j];
  }
  for (int64_t j = 0; j < x; ++j) p[j] = static_cast<float>(e[j] / sum);
}

// Keeps the n_used best groups' values of s (per values each), -inf elsewhere.
void moe_route_mask_groups(float* s, int64_t x, int n_groups, int n_used) {
  const int64_t per = x / n_groups;
  std::vector<float> score(static_cast<size_t>(n_groups));
  for (int g = 0; g < n_groups; ++g) {  // the sum of the group's two largest values
    float a = -std::numeric_limits<float>::infinity(), b = a;
    for (int64_t j = g * per; j < (g + 1) * per; ++j) {
      if (s[j] > a) {
        b = a;
        a = s[j];
      } else if (s[j] > b) {
        b = s[j];
      }
    }
    score[static_cast<size_t>(g)] = a + b;
  }
  std::vector<int> order(static_cast<size_t>(n_groups));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int l, int r) {
    return score[static_cast<size_t>(l)] > score[static_cast<size_t>(r)];
  });
  std::vector<char> keep(static_cast<size_t>(n_groups), 0);
  for (int u = 0; u < n_used; ++u) keep[static_cast<size_t>(order[static_cast<size_t>(u)])] = 1;
  for (int64_t j = 0; j < x; ++j) {
    if (!keep[static_cast<size_t>(j / per)]) s[j] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace

Status moe_route(const Op& op, const KernelContext& /*ctx*/) {
  const auto& prm = op.p<MoeRouteParams>();
  const TensorView &logits = op.src[0], &bias = op.src[1];
  const int64_t x = logits.ne[0], n = logits.ne[1];
  const int k = prm.k;
  std::vector<float> p(static_cast<size_t>(x)), s(static_cast<size_t>(x));
  std::vector<int32_t> idx(static_cast<size_t>(x));
  const float* b = bias.empty() ? nullptr : static_cast<const float*>(bias.data);  // [X]
  for (int64_t t = 0; t < n; ++t) {
    const float* l = logits.row<const float>(t);
    moe_route_probs(prm.gating, l, x, p.data());
    for (int64_t j = 0; j < x; ++j) s[j] = b == nullptr ? p[j] : p[j] + b[j];
    if (prm.n_groups > 1) moe_route_mask_groups(s.data(), x, prm.n_groups, prm.n_groups_used);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int32_t a, int32_t b) { return moe_route_before(s[a], s[b]); });
    int32_t* id = op.dst.row<int32_t>(t);
    float* w = op.dst2.row<float>(t);
    for (int u = 0; u < k; ++u) {
      id[u] = idx[static_cast<size_t>(u)];
      w[u] = p[static_cast<size_t>(id[u])];
    }
    if (prm.gating == MoeGating::kSoftmaxWeight) {
      const std::vector<float> chosen(w, w + k);
      moe_route_probs(MoeGating::kSoftmax, chosen.data(), k, w);
    } else if (prm.norm) {
      double sum = 0.0;
      for (int u = 0; u < k; ++u) sum += w[u];
      const float d = std::max(static_cast<float>(sum), 6.103515625e-5f);
      for (int u = 0; u < k; ++u) w[u] = w[u] / d;
    }
    if (prm.scale != 1.0f) {
      for (int u = 0; u < k; ++u) w[u] *= prm.scale;
    }
  }
  return Status();
}

}  // namespace folio::ref
