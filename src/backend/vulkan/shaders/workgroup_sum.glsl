// Sum of one float per invocation over the workgroup, by a tree in shared
// memory. The workgroup size (gl_WorkGroupSize.x) must be a power of two.
// Every invocation must call it (it holds barriers); all get the sum.
// Include after the local_size layout line.

shared float wg_sum_tree[gl_WorkGroupSize.x];

float workgroup_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  wg_sum_tree[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (t < s) wg_sum_tree[t] += wg_sum_tree[t + s];
    barrier();
  }
  const float r = wg_sum_tree[0];
  barrier();  // the tree may be reused right after
  return r;
}
