// kArgsort / kTopK: one workgroup per row, a bitonic sort of (key, index)
// pairs in shared memory over the row padded to N (a power of two, spec 1).
// The key is the value's bit pattern mapped to a uint whose unsigned order is
// the value order: NaN -> 0 (below every number), -0 -> +0 (equal values
// tie), then the usual sign flip. Descending sorts complement the key, so
// NaN goes last again. Ties are ordered by index, which makes the order total
// and the (unstable) bitonic network give exactly the reference's stable
// order. Padding is (0xffffffff, 0xffffffff): after every real element.
// The first `k` indices of each row are written (k = n for argsort).
// Spec 0: workgroup size B (a power of two, <= N / 2); spec 2: descending.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sort_interface.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 2;
layout(constant_id = 2) const bool DESC = false;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SORT_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { uint x_u[]; };
layout(std430, binding = 3) writeonly buffer D { int d_i[]; };

shared uint s_key[N];
shared uint s_idx[N];

uint order_key(uint bits) {
  const uint mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0u;           // NaN
  if (mag == 0u) return 0x80000000u;          // +-0
  return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}

// (ka, ia) orders after (kb, ib).
bool after(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia > ib); }

void main() {
  const uint row = group_index();
  if (row >= p.x.ne1 * p.x.ne2 * p.x.ne3) return;
  const uvec3 rx = unflatten_rows(row, p.x.ne1, p.x.ne2);
  const uvec3 rd = unflatten_rows(row, p.d.ne1, p.d.ne2);
  const uint xo = row_off(p.x, rx.x, rx.y, rx.z);
  const uint dof = row_off(p.d, rd.x, rd.y, rd.z);
  const uint n = p.x.ne0;
  const uint B = gl_WorkGroupSize.x;
  const uint t = gl_LocalInvocationID.x;

  for (uint i = t; i < N; i += B) {
    if (i < n) {
      const uint key = order_key(x_u[(xo + i * p.x.nb0) >> 2]);
      s_key[i] = DESC ? ~key : key;
      s_idx[i] = i;
    } else {
      s_key[i] = 0xffffffffu;
      s_idx[i] = 0xffffffffu;
    }
  }
  barrier();

  // Stage `size` merges bitonic runs of that length; step `stride` compares
  // elements lo and lo + stride (lo has bit `stride` clear), ascending where
  // bit `size` of lo is clear.
  for (uint size = 2u; size <= N; size <<= 1u) {
    for (uint stride = size >> 1u; stride > 0u; stride >>= 1u) {
      for (uint c = t; c < N / 2u; c += B) {
        const uint lo = 2u * c - (c & (stride - 1u));
        const uint hi = lo + stride;
        const uint klo = s_key[lo], ilo = s_idx[lo];
        const uint khi = s_key[hi], ihi = s_idx[hi];
        const bool ascending = (lo & size) == 0u;
        if (after(klo, ilo, khi, ihi) == ascending) {
          s_key[lo] = khi;
          s_idx[lo] = ihi;
          s_key[hi] = klo;
          s_idx[hi] = ilo;
        }
      }
      barrier();
    }
  }

  for (uint i = t; i < p.k; i += B) d_i[(dof + i * p.d.nb0) >> 2] = int(s_idx[i]);
}
