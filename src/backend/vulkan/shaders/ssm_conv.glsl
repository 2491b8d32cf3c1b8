// Arithmetic of the depthwise causal convolution, shared by ssm_conv.comp and
// ssm_conv_update.comp so that the fused update rounds exactly as the plain
// op (its promise: bit-identical to gather, ssm_conv, scatter on one
// device). As the reference (backend/cpu/ref/ssm_conv.cc): taps summed in
// ascending j from 0.0, the bias added last (+0.0 when absent), then
// SiLU(x) = x / (1 + exp(-x)). `precise`: no a*b+c contracted to an fma in
// one shader only.

// acc + x * w, two roundings.
float conv_tap(float acc, float x, float w) {
  precise float r = acc + x * w;
  return r;
}

// act(acc + bias).
float conv_finish(float acc, float bias, bool silu) {
  precise float r = acc + bias;
  if (silu) {
    precise float e = 1.0 + exp(-r);
    precise float s = r / e;
    r = s;
  }
  return r;
}
