// Slot checks of the fused recurrent-state decode ops (kSsmConvUpdate,
// kGatedDeltaNetUpdate; op.h "Fused decode ops"), one workgroup dispatched
// before the op's main dispatch, which returns at once when the error word is
// set: so nothing is written when
//   an id or a destination slot is outside [0, n_slots)   kErrIdRange
//   a destination slot is used twice                      kErrDupSlot
// (ranges first, as the CPU kernels check them). Destinations are dst_slots,
// or the ids when dst_slots is absent. Duplicates are found with a bitmap of
// slots in shared memory, 64 Ki slots per pass.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "recurrent_interface.h"
#include "flat_index.glsl"

layout(local_size_x = 256) in;

const uint MAP_WORDS = 2048u;  // 65536 slots per pass

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SLOT_CHECK_PARAMS } p;
layout(std430, binding = 2) readonly buffer Ids { int ids_i[]; };
layout(std430, binding = 3) readonly buffer DstSlots { int dst_i[]; };

shared uint seen[MAP_WORDS];
shared uint bad;

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint n = p.n_seq, n_slots = p.n_slots;
  const bool has_dst = p.has_dst != 0u;
  const Tensor ids = p.ids, dsts = p.dst_slots;
  if (tid == 0u) bad = 0u;
  barrier();
  for (uint s = tid; s < n; s += 256u) {
    const int id = ids_i[flat_elem_off(ids, s) >> 2];
    if (id < 0 || uint(id) >= n_slots) {
      report_error(kErrIdRange, uint(id));
      bad = 1u;
    }
    if (has_dst) {
      const int d = dst_i[flat_elem_off(dsts, s) >> 2];
      if (d < 0 || uint(d) >= n_slots) {
        report_error(kErrIdRange, uint(d));
        bad = 1u;
      }
    }
  }
  barrier();
  if (bad != 0u) return;
  for (uint base = 0u; base < n_slots; base += MAP_WORDS * 32u) {
    for (uint i = tid; i < MAP_WORDS; i += 256u) seen[i] = 0u;
    barrier();
    for (uint s = tid; s < n; s += 256u) {
      const uint d = uint(has_dst ? dst_i[flat_elem_off(dsts, s) >> 2]
                                  : ids_i[flat_elem_off(ids, s) >> 2]);
      if (d < base || d - base >= MAP_WORDS * 32u) continue;
      const uint bit = 1u << ((d - base) & 31u);
      if ((atomicOr(seen[(d - base) >> 5], bit) & bit) != 0u) report_error(kErrDupSlot, d);
    }
    barrier();
  }
}
