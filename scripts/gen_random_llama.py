#!/usr/bin/env python3
"""Writes a ~1.1B-parameter llama-architecture GGUF with random weights, for
benchmarks (bench/compare_llamacpp.py, `folio bench`): F16, then Q8_0, Q4_0
and Q4_K_M quantized from it.

Shape (Llama 3.2 1B's body, Llama 2's vocabulary): n_embd 2048, 16 layers,
n_ff 8192, 32 query / 8 KV heads (head_dim 64), vocabulary 32000, untied
output matrix -> 1.10e9 parameters. Weights are N(0, 0.02) (norm weights 1),
drawn from numpy's PCG64 with a fixed seed, so the F16 file is the same on
every run; the quantized files come from the F16 file through llama.cpp's own
quantizer (llama-cpp-python's llama_model_quantize), i.e. llama.cpp's usual
type mixes (Q4_0 and Q4_K_M keep output.weight in Q6_K, Q4_K_M puts some
attn_v / ffn_down in Q6_K). Without llama-cpp-python, Q8_0 and Q4_0 are
written "pure" with gguf.quants (every matrix in that type) and Q4_K_M is
skipped.

The tokenizer is the Llama 2 SentencePiece vocabulary (32000 tokens, scores,
token types, BOS 1 / EOS 2) copied from refdata's ggml-vocab-llama-spm.gguf,
so folio and llama.cpp both load and tokenize with it.

  /tmp/venvtest/bin/python scripts/gen_random_llama.py            # all four into models/
  /tmp/venvtest/bin/python scripts/gen_random_llama.py --types f16,q4_0 --force

Files: models/random-llama-1b-{f16,q8_0,q4_0,q4_k_m}.gguf (models/ is
gitignored: never commit them). Existing files are kept unless --force.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import gguf

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VOCAB = REPO / "tests" / "data" / "tokenizer" / "ggml-vocab-llama-spm.gguf"

# llama.cpp's llama_ftype ids (format facts) and the file-name suffixes.
FTYPES = {"f16": 1, "q8_0": 7, "q4_0": 2, "q4_k_m": 15}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def read_vocab(path):
    """tokens, scores, token types and special ids of a vocabulary-only GGUF."""
    r = gguf.GGUFReader(path)

    def field(key):
        f = r.fields.get(key)
        if f is None:
            return None
        return f.contents()

    vocab = {
        "model": field("tokenizer.ggml.model"),
        "pre": field("tokenizer.ggml.pre"),
        "tokens": field("tokenizer.ggml.tokens"),
        "scores": field("tokenizer.ggml.scores"),
        "token_type": field("tokenizer.ggml.token_type"),
        "bos": field("tokenizer.ggml.bos_token_id"),
        "eos": field("tokenizer.ggml.eos_token_id"),
        "unk": field("tokenizer.ggml.unknown_token_id"),
        "add_bos": field("tokenizer.ggml.add_bos_token"),
        "add_eos": field("tokenizer.ggml.add_eos_token"),
    }
    if vocab["model"] != "llama" or not vocab["tokens"]:
        sys.exit(f"{path}: expected a SentencePiece ('llama') vocabulary")
    return vocab


def tensor_list(a):
    """(name, numpy shape, kind) in file order; numpy shape = reversed ggml ne."""
    e, f, v = a.n_embd, a.n_ff, a.n_vocab
    hd = e // a.n_head
    kv = hd * a.n_head_kv
    out = [("token_embd.weight", (v, e), "w")]
    for i in range(a.n_layer):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", (e,), "norm"),
            (p + "attn_q.weight", (e, e), "w"),
            (p + "attn_k.weight", (kv, e), "w"),
            (p + "attn_v.weight", (kv, e), "w"),
            (p + "attn_output.weight", (e, e), "w"),
            (p + "ffn_norm.weight", (e,), "norm"),
            (p + "ffn_gate.weight", (f, e), "w"),
            (p + "ffn_up.weight", (f, e), "w"),
            (p + "ffn_down.weight", (e, f), "w"),
        ]
    out += [("output_norm.weight", (e,), "norm"), ("output.weight", (v, e), "w")]
    return out


def add_metadata(w, a, vocab, file_type, name):
    arch = "llama"
    w.add_name(name)
    w.add_file_type(file_type)
    w.add_uint32(f"{arch}.context_length", a.n_ctx)
    w.add_uint32(f"{arch}.embedding_length", a.n_embd)
    w.add_uint32(f"{arch}.block_count", a.n_layer)
    w.add_uint32(f"{arch}.feed_forward_length", a.n_ff)
    w.add_uint32(f"{arch}.attention.head_count", a.n_head)
    w.add_uint32(f"{arch}.attention.head_count_kv", a.n_head_kv)
    w.add_uint32(f"{arch}.rope.dimension_count", a.n_embd // a.n_head)
    w.add_float32(f"{arch}.rope.freq_base", 10000.0)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32(f"{arch}.vocab_size", a.n_vocab)
    w.add_string("tokenizer.ggml.model", vocab["model"])
    w.add_string("tokenizer.ggml.pre", vocab["pre"] or "default")
    w.add_array("tokenizer.ggml.tokens", vocab["tokens"])
    w.add_array("tokenizer.ggml.scores", [float(s) for s in vocab["scores"]])
    w.add_array("tokenizer.ggml.token_type", [int(t) for t in vocab["token_type"]])
    for key, val in (("bos_token_id", vocab["bos"]), ("eos_token_id", vocab["eos"]),
                     ("unknown_token_id", vocab["unk"])):
        if val is not None:
            w.add_uint32(f"tokenizer.ggml.{key}", int(val))
    w.add_bool("tokenizer.ggml.add_bos_token", bool(vocab["add_bos"]) if vocab["add_bos"] is not None else True)
    w.add_bool("tokenizer.ggml.add_eos_token", bool(vocab["add_eos"]) if vocab["add_eos"] is not None else False)


def random_tensor(rng, shape, kind, std):
    if kind == "norm":
        return np.ones(shape, dtype=np.float32)
    x = rng.standard_normal(size=shape, dtype=np.float32)
    x *= std
    return x


def write_gguf(path, a, vocab, tensors, file_type, make, label):
    """Streams tensors into path: make(name, shape, kind) -> (array, raw_dtype or None)."""
    tmp = path.with_name(path.stem + ".part.gguf")  # ignored like *.gguf
    w = gguf.GGUFWriter(tmp, "llama")
    add_metadata(w, a, vocab, file_type, f"random-llama-1b-{label}")
    infos = []
    for name, shape, kind in tensors:
        infos.append((name, shape, kind) + make.info(name, shape, kind))
    for name, shape, kind, np_dtype, nbytes, raw_dtype, raw_shape in infos:
        w.add_tensor_info(name, raw_shape, np_dtype, nbytes, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    total = sum(i[4] for i in infos)
    done = 0
    t0 = time.time()
    for k, (name, shape, kind, _, nbytes, _, _) in enumerate(infos):
        arr = make.data(name, shape, kind)
        assert arr.nbytes == nbytes, (name, arr.nbytes, nbytes)
        w.write_tensor_data(arr)
        done += nbytes
        if k % 10 == 0 or k == len(infos) - 1:
            el = time.time() - t0
            log(f"  {label}: {k + 1}/{len(infos)} tensors, {done / 2**30:.2f}/{total / 2**30:.2f} GiB, "
                f"{el:.0f} s")
    w.close()
    os.replace(tmp, path)


class F16Maker:
    """Random F16 matrices (F32 norms), from one generator in file order."""

    def __init__(self, seed, std):
        self.rng = np.random.default_rng(seed)
        self.std = std

    def info(self, name, shape, kind):
        n = int(np.prod(shape))
        if kind == "norm":
            return (np.float32, 4 * n, None, shape)
        return (np.float16, 2 * n, None, shape)

    def data(self, name, shape, kind):
        x = random_tensor(self.rng, shape, kind, self.std)
        return x if kind == "norm" else x.astype(np.float16)


class PureQuantMaker:
    """Every matrix of the F16 file quantized to one type with gguf.quants."""

    def __init__(self, f16_path, qtype):
        self.reader = gguf.GGUFReader(f16_path)
        self.by_name = {t.name: t for t in self.reader.tensors}
        self.qtype = qtype

    def info(self, name, shape, kind):
        n = int(np.prod(shape))
        if kind == "norm":
            return (np.float32, 4 * n, None, shape)
        byte_shape = gguf.quants.quant_shape_to_byte_shape(shape, self.qtype)
        return (np.uint8, int(np.prod(byte_shape)), self.qtype, byte_shape)

    def data(self, name, shape, kind):
        t = self.by_name[name]
        x = np.asarray(t.data).reshape(shape)
        if kind == "norm":
            return x.astype(np.float32)
        return gguf.quants.quantize(x.astype(np.float32), self.qtype)


def llama_quantize(f16_path, out_path, ftype, threads):
    import ctypes
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    tmp = out_path.with_name(out_path.stem + ".part.gguf")
    rc = llama_cpp.llama_model_quantize(str(f16_path).encode(), str(tmp).encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit(f"llama_model_quantize -> {out_path.name} failed ({rc})")
    os.replace(tmp, out_path)


def count_params(tensors):
    return sum(int(np.prod(s)) for _, s, _ in tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=str(REPO / "models"))
    ap.add_argument("--types", default="f16,q8_0,q4_0,q4_k_m", help="comma list of f16,q8_0,q4_0,q4_k_m")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--vocab", default=str(DEFAULT_VOCAB), help="GGUF with a SentencePiece vocabulary")
    ap.add_argument("--n-embd", type=int, default=2048)
    ap.add_argument("--n-layer", type=int, default=16)
    ap.add_argument("--n-ff", type=int, default=8192)
    ap.add_argument("--n-head", type=int, default=32)
    ap.add_argument("--n-head-kv", type=int, default=8)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--pure", action="store_true",
                    help="Q8_0/Q4_0 with gguf.quants (every matrix in that type) instead of llama.cpp")
    ap.add_argument("--prefix", default="random-llama-1b")
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    a = ap.parse_args()

    types = [t.strip() for t in a.types.split(",") if t.strip()]
    for t in types:
        if t not in FTYPES:
            sys.exit(f"unknown type {t!r} (f16, q8_0, q4_0, q4_k_m)")
    vocab = read_vocab(a.vocab)
    a.n_vocab = len(vocab["tokens"])
    if a.n_embd % a.n_head or a.n_head % a.n_head_kv:
        sys.exit("n_embd must divide by n_head and n_head by n_head_kv")
    tensors = tensor_list(a)
    log(f"llama: n_embd {a.n_embd}, {a.n_layer} layers, n_ff {a.n_ff}, heads {a.n_head}/{a.n_head_kv}, "
        f"vocab {a.n_vocab}: {count_params(tensors) / 1e9:.3f}e9 parameters, seed {a.seed}")

    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = {t: out / f"{a.prefix}-{t}.gguf" for t in FTYPES}
    quant_todo = [t for t in types if t != "f16" and (a.force or not path[t].exists())]
    if (quant_todo or "f16" in types) and (not path["f16"].exists() or (a.force and "f16" in types)):
        log(f"writing {path['f16']}")
        t0 = time.time()
        write_gguf(path["f16"], a, vocab, tensors, FTYPES["f16"], F16Maker(a.seed, a.std), "f16")
        log(f"  done in {time.time() - t0:.0f} s, {path['f16'].stat().st_size / 2**30:.2f} GiB")
    elif "f16" in types:
        log(f"keeping {path['f16']} (--force rewrites it)")

    try:
        import llama_cpp  # noqa: F401
        have_llama = not a.pure
    except ImportError:
        have_llama = False
        log("llama-cpp-python not found: Q8_0 / Q4_0 via gguf.quants (pure), Q4_K_M skipped")

    qtypes = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}
    for t in types:
        if t == "f16":
            continue
        if path[t].exists() and not a.force:
            log(f"keeping {path[t]} (--force rewrites it)")
            continue
        t0 = time.time()
        if have_llama:
            log(f"quantizing {path[t].name} with llama.cpp's llama_model_quantize ({a.threads} threads)")
            llama_quantize(path["f16"], path[t], FTYPES[t], a.threads)
        elif t in qtypes:
            log(f"quantizing {path[t].name} with gguf.quants (pure {t})")
            write_gguf(path[t], a, vocab, tensors, FTYPES[t], PureQuantMaker(path["f16"], qtypes[t]), t)
        else:
            log(f"skipping {t}: needs llama-cpp-python")
            continue
        log(f"  done in {time.time() - t0:.0f} s, {path[t].stat().st_size / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
