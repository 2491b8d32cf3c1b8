// Flat addressing over a Tensor's four dims (ggml order), for ops whose
// operands pair by flat row or flat element index rather than by shape.
// Include after common.glsl.

// Byte offset of flat row r (rows in (i1, i2, i3) order).
uint flat_row_off(Tensor t, uint r) {
  const uvec3 i = unflatten_rows(r, t.ne1, t.ne2);
  return row_off(t, i.x, i.y, i.z);
}

// Byte offset of flat element e of a plain-typed tensor (nb0: element size).
uint flat_elem_off(Tensor t, uint e) {
  return flat_row_off(t, e / t.ne0) + (e % t.ne0) * t.nb0;
}
