// kGetRows: dst[:, i] = dequant(table[:, ids[i]]) for a table of any weight
// dtype (TYPE: the DType id, see dequant.glsl). One thread per 8-element
// chunk of an output row; ids are read in flat order through their strides.
// An id outside [0, table rows) is reported (kErrIdRange) and its output
// row is written as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_GET_ROWS_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer Ids { int ids_i[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

#include "dequant.glsl"

void main() {
  const uint nc = (p.t.ne0 + 7u) / 8u;  // chunks per row
  const uint n = p.ids.ne0 * p.ids.ne1 * p.ids.ne2 * p.ids.ne3;
  const uint gid = group_index() * 256u + gl_LocalInvocationID.x;
  if (gid >= n * nc) return;
  const uint i = gid / nc;
  const uint c = gid % nc;
  const uvec3 ir = unflatten_rows(i / p.ids.ne0, p.ids.ne1, p.ids.ne2);
  const int id = ids_i[elem_off(p.ids, i % p.ids.ne0, ir.x, ir.y, ir.z) >> 2];
  const uvec3 dr = unflatten_rows(i, p.d.ne1, p.d.ne2);
  const uint dbase = row_off(p.d, dr.x, dr.y, dr.z) >> 2;
  vec4 lo = vec4(0.0), hi = vec4(0.0);
  if (id < 0 || id >= int(p.t.ne1)) {
    report_error(kErrIdRange, uint(id));
  } else {
    dequant8(TYPE, p.t.off + uint(id) * p.t.nb1, c, p.t.ne0, lo, hi);
  }
  const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
  for (uint e = 0u; e < 8u; ++e) {
    const uint k = 8u * c + e;
    if (k < p.t.ne0) d_f[dbase + k] = v[e];
  }
}
