#!/usr/bin/env python3
"""Writes the GGUF fuzz seed corpus (tests/fuzz/corpus/gguf/) with gguf-py,
an implementation independent of folio's writer. Deterministic; the files are
committed, so run this only to change the corpus:

    python3 tests/fuzz/make_gguf_corpus.py   # needs `pip install gguf numpy`
"""
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from gguf import GGUFWriter
from gguf.constants import GGML_QUANT_SIZES

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "gguf")
rng = np.random.default_rng(1234)


def write(name, fill):
    path = os.path.join(OUT, name)
    w = GGUFWriter(path, "llama")
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def minimal(w):
    pass


def all_types(w):
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.string", "h\u00e9llo \"world\"\n")
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 0.125)
    for vt in (V.UINT8, V.INT8, V.UINT16, V.INT16, V.UINT32, V.INT32, V.FLOAT32, V.UINT64,
               V.INT64, V.FLOAT64):
        w.add_key_value(f"a.{vt.name.lower()}", [1, 2, 3], V.ARRAY, sub_type=vt)
    w.add_key_value("a.bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("a.string", ["<unk>", "<s>", "</s>", ""])
    w.add_key_value("a.nested", [[1, 2], [3]], V.ARRAY, sub_type=V.ARRAY)
    w.add_key_value("a.nested3", [[["x", "y"]], [["z"]]], V.ARRAY, sub_type=V.ARRAY)
    w.add_tensor("t.weight", rng.standard_normal((3, 4)).astype(np.float32))


def quant_tensor(w, name, qtype, rows, cols):
    block, type_size = GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, size=(rows, cols // block * type_size), dtype=np.uint8)
    if qtype in (Q.F16,):
        data = rng.standard_normal((rows, cols)).astype(np.float16)
        w.add_tensor(name, data)
        return
    w.add_tensor(name, data, raw_dtype=qtype)


def tensors(w):
    w.add_custom_alignment(64)  # sets general.alignment and the padding
    w.add_uint32("llama.block_count", 1)
    w.add_tensor("token_embd.weight", rng.standard_normal((8, 32)).astype(np.float32))
    quant_tensor(w, "blk.0.attn_q.weight", Q.F16, 2, 32)
    quant_tensor(w, "blk.0.attn_k.weight", Q.Q4_0, 2, 64)
    quant_tensor(w, "blk.0.attn_v.weight", Q.Q8_0, 1, 32)
    quant_tensor(w, "blk.0.ffn_up.weight", Q.Q4_K, 2, 256)
    quant_tensor(w, "blk.0.ffn_down.weight", Q.Q6_K, 1, 256)
    quant_tensor(w, "blk.0.ffn_gate.weight", Q.IQ4_NL, 1, 32)
    quant_tensor(w, "blk.0.exotic.weight", Q.IQ2_XXS, 1, 256)
    w.add_tensor("blk.0.norm", rng.standard_normal((2, 2, 2, 2)).astype(np.float32))


def vocab(w):
    toks = [f"tok{i}" for i in range(200)] + ["\u0120the", "<|im_start|>", "<|im_end|>"]
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen2")
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_key_value("tokenizer.ggml.token_type", [1] * (len(toks) - 2) + [3, 3], V.ARRAY,
                    sub_type=V.INT32)
    w.add_key_value("tokenizer.ggml.scores", [-float(i) for i in range(len(toks))], V.ARRAY,
                    sub_type=V.FLOAT32)
    w.add_array("tokenizer.ggml.merges", ["t o", "to k", "\u0120 t"])
    w.add_uint32("tokenizer.ggml.bos_token_id", 201)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_string("tokenizer.chat_template", "{% for m in messages %}{{ m['content'] }}{% endfor %}")


def main():
    os.makedirs(OUT, exist_ok=True)
    write("minimal.gguf", minimal)
    p = write("all_types.gguf", all_types)
    write("tensors.gguf", tensors)
    write("vocab.gguf", vocab)
    # Version 2 shares v3's layout.
    data = bytearray(open(p, "rb").read())
    struct.pack_into("<I", data, 4, 2)
    open(os.path.join(OUT, "all_types_v2.gguf"), "wb").write(bytes(data))


if __name__ == "__main__":
    main()
