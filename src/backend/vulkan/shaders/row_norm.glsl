// Arithmetic shared by norm.comp and add_rms_norm.comp, written once and
// `precise` so that both shaders round identically: add_rms_norm then equals
// add followed by rms_norm bit for bit (the fused op's promise), given the
// same workgroup size (the host picks it from the row length alone).

// One step of an invocation's partial sum of squares.
float add_square(float acc, float v) {
  precise float r = acc + v * v;
  return r;
}

// 1 / sqrt(mean + eps) for rms_norm, 1 / max(sqrt(sum), eps) for l2_norm.
float rms_inv(float sum_sq, uint n, float eps) {
  precise float r = 1.0 / sqrt(sum_sq / float(n) + eps);
  return r;
}
float l2_inv(float sum_sq, float eps) {
  precise float r = 1.0 / max(sqrt(sum_sq), eps);
  return r;
}

// v * inv [* w]
float scale_elem(float v, float inv) {
  precise float r = v * inv;
  return r;
}
float scale_elem_w(float v, float inv, float w) {
  precise float r = (v * inv) * w;
  return r;
}
