// Q8_0 quantization as the scalar reference does it (src/quant/quant_legacy.cc,
// quantize_q8_0), bit for bit whatever the driver's division precision and
// denormal mode:
//   amax = max |x_j| (NaN ignored, as fmax does)
//   d    = amax / 127          (f32, correctly rounded)
//   id   = d != 0 ? 1 / d : 0  (f32, correctly rounded)
//   q_j  = roundf(x_j * id)    (half away from zero), clamped to [-128, 127], NaN -> 0
// and d stored as f16. GLSL's `/` may be off by 2.5 ulp, so both divisions
// correct a float estimate of the quotient's mantissa with its exact integer
// remainder (q8_div); the product x * id is a plain f32 multiply
// (correctly rounded in Vulkan), with denormal x rescaled first so a driver
// that flushes denormal inputs gives the same product.
// Include after common.glsl.

// Magnitude bits of x for the block maximum: |x| as bits, 0 for NaN (fmax
// keeps the other operand). Non-negative floats order like their bits.
uint q8_abs_bits(uint x) {
  const uint a = x & 0x7fffffffu;
  return a > 0x7f800000u ? 0u : a;
}

// Finite positive x (bits, denormals included): x = m * 2^(e - 23) with m in [2^23, 2^24).
void q8_unpack(uint x, out uint m, out int e) {
  const uint ex = x >> 23;
  const uint mt = x & 0x7fffffu;
  if (ex != 0u) {
    m = mt | 0x800000u;
    e = int(ex) - 127;
    return;
  }
  const int sh = 23 - findMSB(mt);
  m = mt << uint(sh);
  e = -126 - sh;
}

// a / b rounded to nearest even, as bits; a >= 0 finite or +inf, b > 0
// finite or +inf (the cases the quantizer has).
uint q8_div(uint a, uint b) {
  if (a == 0x7f800000u) return b == 0x7f800000u ? 0x7fc00000u : 0x7f800000u;
  if (b == 0x7f800000u || a == 0u) return 0u;
  uint ma, mb;
  int ea, eb;
  q8_unpack(a, ma, ea);
  q8_unpack(b, mb, eb);
  int e = ea - eb;
  if (ma < mb) {
    ma <<= 1;
    e -= 1;
  }
  // 26 quotient bits, q = floor(ma * 2^25 / mb) in [2^25, 2^26), and the
  // remainder r = ma * 2^25 - q * mb. ma and mb are exact in f32, so a
  // division within 2^-21 of the quotient (Vulkan allows 2.5 ulp) gives q
  // within 33; 64 less is below q on every device, its remainder positive
  // and under 98 * mb < 2^31, exact in 32 bits; one integer division by mb
  // then lands on q (a correction every device takes alike, whatever its
  // division's rounding).
  uint q = uint((float(ma) / float(mb)) * 33554432.0) - 64u;  // 2^25
  uint r = (ma << 25) - q * mb;
  const uint dq = r / mb;
  q += dq;
  r -= dq * mb;
  if (e > 127) return 0x7f800000u;
  // Bits below the result's last place: 2 for a normal result, more for a denormal one.
  const int s = e >= -126 ? 2 : -(e + 124);
  if (s > 27) return 0u;
  const uint mant = q >> uint(s);
  const uint guard = (q >> uint(s - 1)) & 1u;
  const bool rest = (q & ((1u << uint(s - 1)) - 1u)) != 0u || r != 0u;
  // A normal result's implicit bit lands in the exponent field (hence e + 126);
  // a rounding carry moves on into the exponent as it should.
  uint bits = (e >= -126 ? uint(e + 126) << 23 : 0u) + mant;
  if (guard != 0u && (rest || (mant & 1u) != 0u)) bits += 1u;
  return min(bits, 0x7f800000u);
}

// d (bits) of a block whose largest magnitude has bits amax.
uint q8_scale(uint amax) { return q8_div(amax, 0x42fe0000u); }  // 127.0

// 1 / d or 0 (bits).
uint q8_inverse(uint d) { return d == 0u ? 0u : q8_div(0x3f800000u, d); }

// roundf(x * id) into [-128, 127], NaN -> 0; x and id as bits (id >= 0).
int q8_code(uint x, uint id) {
  const uint ax = x & 0x7fffffffu;
  const bool neg = (x >> 31) != 0u;
  // Denormal x (or zero): x * id = (x * 2^149) * (id * 2^-149), both
  // factors exact (below id = 2^24 the product is under 2^-102 and rounds
  // to 0, flushed or not). No branch: every lane takes the same path.
  const bool den = ax < 0x00800000u;
  const float xf = den ? (neg ? -float(ax) : float(ax)) : uintBitsToFloat(x);
  const float idf = den ? uintBitsToFloat(id) * uintBitsToFloat(0x1a000000u) *
                              uintBitsToFloat(0x1a800000u)  // 2^-75 * 2^-74
                        : uintBitsToFloat(id);
  precise const float p = xf * idf;
  const float a = abs(p);
  precise float t = trunc(a);
  t = a - t >= 0.5 ? t + 1.0 : t;
  // NaN x and x * 0 (zero x or id: 0 or NaN) give 0; x * inf and inf * id
  // saturate with everything at or past 128.
  t = (ax > 0x7f800000u || ax == 0u || id == 0u) ? 0.0 : min(t, 128.0);
  const int r = int(t);
  return neg ? -r : min(r, 127);
}
