// Activation functions in float, for unary.comp and glu.comp. Each follows
// the scalar reference's formula (backend/cpu/ref/unary.cc) rewritten where
// the direct float form would lose accuracy:
//   gelu (tanh)  0.5 x (1 + tanh(z)) == x * sigmoid(2 z): no cancellation of
//                1 + tanh(z) near -1 for negative x.
//   gelu_erf     0.5 x (1 + erf(x / sqrt 2)) == 0.5 x erfc(-x / sqrt 2), erfc
//                by a Chebyshev fit with relative error < 1.2e-7 everywhere
//                (Numerical Recipes' erfcc coefficients).
//   softplus     x > 20 ? x : log1p(e^x), log1p by a series for e^x <= 1.
//   tanh         a series near 0, saturating at |x| > 10 (no inf / inf).
// Include after common.glsl. The codes (kAct*) are elementwise_interface.h's.

#include "elementwise_interface.h"

// log(1 + u) for u >= 0, accurate for small u: 2 atanh(s) with
// s = u / (2 + u) <= 1/3 by its odd series while u <= 1 (truncation error
// < 3e-10; GPUs' log has only absolute accuracy near 1), the
// plain log beyond.
float log1p_acc(float u) {
  if (u > 1.0) return log(1.0 + u);
  const float s = u / (2.0 + u);
  const float z = s * s;
  return 2.0 * s *
         (1.0 + z * (1.0 / 3.0 +
                     z * (1.0 / 5.0 +
                          z * (1.0 / 7.0 +
                               z * (1.0 / 9.0 +
                                    z * (1.0 / 11.0 +
                                         z * (1.0 / 13.0 + z * (1.0 / 15.0 + z / 17.0))))))));
}

// tanh: the odd Taylor series below |x| = 0.5 (8 terms: relative error
// ~1e-7, where 1 - e^-2|x| in (1 - e^-2|x|) / (1 + e^-2|x|) would lose
// digits to cancellation), that form above, saturating at |x| > 10 (tanh(10)
// rounds to 1 in float).
float act_tanh(float x) {
  const float ax = abs(x);
  float t;
  if (ax < 0.5) {
    const float z = ax * ax;
    t = ax * (1.0 + z * (-0.3333333333333333 +
                         z * (0.13333333333333333 +
                              z * (-0.05396825396825397 +
                                   z * (0.021869488536155203 +
                                        z * (-0.008863235529902197 +
                                             z * (0.003592128036572481 +
                                                  z * -0.0014558343870513183)))))));
  } else if (ax > 10.0) {
    t = 1.0;
  } else {
    const float e = exp(-2.0 * ax);
    t = (1.0 - e) / (1.0 + e);
  }
  // t >= 0 (or NaN): give it x's sign, -0 included.
  return uintBitsToFloat(floatBitsToUint(t) | (floatBitsToUint(x) & 0x80000000u));
}

float act_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

float act_silu(float x) { return x / (1.0 + exp(-x)); }

float act_gelu(float x) {
  const float k = 0.7978845608028654;  // sqrt(2 / pi)
  const float z = k * x * (1.0 + 0.044715 * x * x);
  return x / (1.0 + exp(-2.0 * z));
}

// erfc(y) for any y, relative error < 1.2e-7.
float erfc_acc(float y) {
  const float z = abs(y);
  const float t = 1.0 / (1.0 + 0.5 * z);
  const float poly =
      -1.26551223 +
      t * (1.00002368 +
           t * (0.37409196 +
                t * (0.09678418 +
                     t * (-0.18628806 +
                          t * (0.27886807 +
                               t * (-1.13520398 +
                                    t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const float r = t * exp(-z * z + poly);
  return y >= 0.0 ? r : 2.0 - r;
}

float act_gelu_erf(float x) { return 0.5 * x * erfc_acc(-0.7071067811865476 * x); }

float act_softplus(float x) { return x > 20.0 ? x : log1p_acc(exp(x)); }

float activation(uint kind, float x) {
  switch (kind) {
    case kActSilu: return act_silu(x);
    case kActGelu: return act_gelu(x);
    case kActGeluErf: return act_gelu_erf(x);
    case kActSigmoid: return act_sigmoid(x);
    case kActSoftplus: return act_softplus(x);
    case kActExp: return exp(x);
    case kActTanh: return act_tanh(x);
    case kActRelu: return x > 0.0 ? x : 0.0;
    case kActNeg: return -x;
  }
  return x;
}
