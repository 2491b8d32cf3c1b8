// The one summation order of every mul_mat / mul_mat_id shader, so that an
// output element has the same bits whichever shader computes it and
// whatever other columns, tokens or experts share the dispatch (decode
// alone equals decode inside a prefill batch).
//
// Output (n, m) = sum over k of w[n, k] * x[k, m], for K elements of a row:
//   - K is cut into chunks of SUM_CHUNK elements (the last one holds K %
//     SUM_CHUNK when that is not 0);
//   - a chunk's partial sum starts at 0.0 and takes acc = acc + w * x for
//     each k of the chunk below K, in ascending k;
//   - the total starts at 0.0 and takes total = total + partial for each
//     chunk, in ascending chunk order.
// The accumulators are `precise`: the product and the sum are two IEEE
// operations, each rounded, never contracted into an fma (drivers differ
// in whether and where they fuse, and glslang does not mark fma() itself
// NoContraction) nor reassociated, so every device gives the same bits in
// both shaders. Weights are dequantized by dequant8() in both shaders, so
// both see the same w.
//
// SUM_CHUNK is a multiple of the int8 block (32) and of mul_mat.comp's K
// step (16); a K-quant super-block (256) spans several chunks, each lane
// reading the super-block's scales for its own part. mul_mat_vec.comp gives each lane whole
// chunks and adds the lanes' partials in chunk order; mul_mat.comp keeps a
// chunk accumulator beside the running total of each output.

const uint SUM_CHUNK = kMatSumChunk;  // mat_interface.h
