#include "backend/cpu/drivers/ssm_conv_channel.h"

#include <cmath>

#include "backend/cpu/drivers/parallel.h"

#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {

namespace {
constexpr int kMaxWidth = 64;
}  // namespace

bool ssm_conv_parallel(int64_t outputs, int k, bool act) {
  return outputs * (k + (act ? 16 : 0)) >= kMinParallelElements;
}

float ssm_conv_exp(float x) {
  return std::exp(x);
}

float ssm_conv_silu(float x) {
  return x / (1.0f + ssm_conv_exp(-x));
}

float ssm_conv_channel(const float* win, const float* w, int k, float bias, bool act) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += win[j] * w[j];
  sum += bias;
  return act ? ssm_conv_silu(sum) : sum;
}

float ssm_conv_update_channel(const float* from, float x, const float* w, int k, float bias,
                              bool act, float* to) {
  float win[kMaxWidth];
  for (int j = 0; j + 1 < k; ++j) win[j] = from[j];
  win[k - 1] = x;
  const float out = ssm_conv_channel(win, w, k, bias, act);
  for (int j = 0; j + 1 < k; ++j) to[j] = win[j + 1];
  return out;
}

}  // namespace folio::cpu
