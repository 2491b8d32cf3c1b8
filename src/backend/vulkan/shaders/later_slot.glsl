// set_rows' rule "with duplicate slots the last row wins" (set_rows.comp,
// rope_set_rows.comp): each row first asks whether a later row names its
// slot, and writes nothing if one does, so every destination row has one
// writer and the result does not depend on scheduling.
// Include after the local_size layout line and a function
// int slot_at(uint i), the slot of row i.

shared uint later_dup;

// Whether one of rows t + 1 .. n - 1 names slot s. Every invocation of the
// workgroup calls it with the same t and s; they share the scan. A second
// call must come after a barrier that follows this one's return (the flag
// is reset at the start).
bool slot_named_later(uint t, uint n, int s) {
  const uint tid = gl_LocalInvocationID.x;
  if (tid == 0u) later_dup = 0u;
  barrier();
  for (uint j = t + 1u + tid; j < n; j += gl_WorkGroupSize.x) {
    if (slot_at(j) == s) later_dup = 1u;
  }
  barrier();
  return later_dup != 0u;
}
