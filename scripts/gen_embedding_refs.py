#!/usr/bin/env python3
"""Writes tiny random-weight embedding models (bert, nomic-bert) and llama.cpp's
reference tokens and embeddings for them, into tests/engine/refdata/.

For every model in MODELS this script
  1. writes tests/engine/refdata/<name>-f32.gguf with the `gguf` package: F32
     weights drawn from a seeded normal distribution and a small WordPiece
     vocabulary laid out like BERT's (the [PAD] / [unusedN] / [UNK] / [CLS] /
     [SEP] / [MASK] ids of bert-base-uncased, then characters, common English
     words and suffix pieces) in the converter's form (word-initial pieces
     with a U+2581 prefix, continuation pieces without "##");
  2. runs llama.cpp's llama-tokenize on TOKENIZE_CASES and llama-embedding on
     EMBED_CASES (one run per pooling type none / mean / cls / last, with and
     without L2 normalisation; all cases in one batch, each its own sequence)
     and writes <name>.json: {"model", "n_embd", "pooling_type", "tokenize":
     [{"text", "tokens"}], "embed": [{"text", "tokens"}], "embeddings":
     {"<pooling>": {"normalized": [...], "raw": [...]}}} where each entry of
     normalized / raw is one case's vector (pooling none: the case's token
     vectors one after another).
  3. recomputes the mean-pooled embeddings with an independent float64 NumPy
     forward pass of the same model (llama.cpp's semantics: GELU tanh
     approximation, layer norm eps, non-causal attention within a sequence)
     and prints the max |diff| against llama.cpp's (a check of the reference,
     not written anywhere).

Usage (from the repository root; needs numpy and gguf 0.19, both in .venv):
  .venv/bin/python scripts/gen_embedding_refs.py \
      --llama-bin LLAMA_CPP/build/bin   (a llama.cpp build outside the repository)
The llama.cpp build used for the committed files is recorded in the JSON
("reference").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import gguf

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "tests" / "engine" / "refdata"
SPACE = "\u2581"

MODELS = [
    dict(name="tiny-bert", arch="bert", seed=3001, n_layer=2, n_embd=64, n_head=4, n_ff=128,
         n_ctx=64, eps=1e-12, pooling=1),
    dict(name="tiny-nomic-bert", arch="nomic-bert", seed=3002, n_layer=2, n_embd=64, n_head=4,
         n_ff=96, n_ctx=64, eps=1e-12, pooling=1, rope_base=1000.0),
]

POOLINGS = {"none": 0, "mean": 1, "cls": 2, "last": 3}

# Embedded together (one batch) by llama-embedding; no newlines (its separator).
EMBED_CASES = [
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings turn text into vectors, and similar texts get similar vectors.",
    "Caf\u00e9 d\u00e9j\u00e0 vu: the na\u00efve r\u00e9sum\u00e9",
    "unbelievably unaffable tokenization",
    "a",
]

# Tokenized only (llama-tokenize, special tokens added and parsed).
TOKENIZE_CASES = EMBED_CASES + [
    "",
    " ",
    "HeLLo WoRLD",
    "Don't stop--believing!!! (ok?) [yes]",
    "price: $42.50 + 7% = ~45",
    "I \u2764 llamas \U0001F999 and \u4e2d\u6587 text",
    "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
    "combining e\u0301 mark and \u00c5ngstr\u00f6m",
    "zero\u200bwidth and no\u00a0break and\ttab\nnewline",
    "bell\x07 control \x00 nul",
    "\uff28\uff45\uff4c\uff4c\uff4f fullwidth",
    "[CLS] special [SEP] tokens [MASK] in text [UNK]",
    "   leading and trailing spaces   ",
    "supercalifragilisticexpialidocious",
    "running jumped happily unhappiness",
    "\u0130stanbul \u00dfeta DOTTED \u0131",
]

WORDS = """
the of and to a in is it you that he was for on are with as i his they be at one have
this from or had by hot word but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them write would
like so these her long make thing see him two has look more day could go come did number
sound no most people my over know water than call first who may down side been now find
any new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help
low line differ turn cause much mean before move right boy old too same tell does set three
want air well also play small end put home read hand port large spell add even land here
must big high such follow act why ask men change went light kind off need house picture try
us again animal point mother world near build self earth father head stand own page should
country found answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw far sea draw
left late run don while press close night real life few north hello quick brown fox jumps
lazy dog text vector vectors similar token embed cafe deja vu naive resume believe able
affable stop yes ok price fullwidth special tokens leading trailing spaces control tab
newline width break zero combining mark llama llamas happy
""".split()

SUFFIXES = ["s", "es", "ed", "ing", "ly", "er", "ers", "est", "ness", "ment", "tion", "ation",
            "ize", "izable", "able", "ably", "un", "ize", "iza", "dings", "ding", "bed", "vably"]

CJK = ["\u4e2d", "\u6587"]


def build_vocab() -> tuple[list[str], list[int]]:
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    types = [3] + [1] * 99 + [3, 3, 3, 3]
    seen = set(tokens)

    def add(t: str) -> None:
        if t not in seen:
            seen.add(t)
            tokens.append(t)
            types.append(1)

    for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~":
        add(SPACE + c)
    for c in "0123456789abcdefghijklmnopqrstuvwxyz":
        add(SPACE + c)
        add(c)  # continuation piece ("##c")
    for c in CJK:
        add(SPACE + c)
    for w in WORDS:
        add(SPACE + w)
    for s in SUFFIXES:
        add(s)
    return tokens, types


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def make_weights(m: dict, n_vocab: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(m["seed"])
    e, f, n_ctx = m["n_embd"], m["n_ff"], m["n_ctx"]

    def lin(n_out: int, n_in: int) -> np.ndarray:  # numpy (out, in) = ggml [in, out]
        return (rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)).astype(np.float32)

    def vec(n: int, mean: float = 0.0, std: float = 0.1) -> np.ndarray:
        return (mean + std * rng.standard_normal(n)).astype(np.float32)

    w: dict[str, np.ndarray] = {}
    w["token_embd.weight"] = rng.standard_normal((n_vocab, e)).astype(np.float32)
    w["token_types.weight"] = (0.5 * rng.standard_normal((2, e))).astype(np.float32)
    if m["arch"] == "bert":
        w["position_embd.weight"] = (0.5 * rng.standard_normal((n_ctx, e))).astype(np.float32)
    w["token_embd_norm.weight"] = vec(e, 1.0)
    w["token_embd_norm.bias"] = vec(e)
    for il in range(m["n_layer"]):
        p = f"blk.{il}."
        if m["arch"] == "bert":
            for t in ("q", "k", "v"):
                w[p + f"attn_{t}.weight"] = lin(e, e)
                w[p + f"attn_{t}.bias"] = vec(e, std=0.5)
            w[p + "attn_output.weight"] = lin(e, e)
            w[p + "attn_output.bias"] = vec(e)
        else:
            w[p + "attn_qkv.weight"] = lin(3 * e, e)
            w[p + "attn_output.weight"] = lin(e, e)
        w[p + "attn_output_norm.weight"] = vec(e, 1.0)
        w[p + "attn_output_norm.bias"] = vec(e)
        w[p + "ffn_up.weight"] = lin(f, e)
        if m["arch"] == "bert":
            w[p + "ffn_up.bias"] = vec(f)
        else:
            w[p + "ffn_gate.weight"] = lin(f, e)
        w[p + "ffn_down.weight"] = lin(e, f)
        if m["arch"] == "bert":
            w[p + "ffn_down.bias"] = vec(e)
        w[p + "layer_output_norm.weight"] = vec(e, 1.0)
        w[p + "layer_output_norm.bias"] = vec(e)
    return w


def write_gguf(m: dict, path: Path, tokens: list[str], types: list[int],
               w: dict[str, np.ndarray]) -> None:
    arch = m["arch"]
    wr = gguf.GGUFWriter(str(path), arch)
    wr.add_name(m["name"])
    wr.add_context_length(m["n_ctx"])
    wr.add_embedding_length(m["n_embd"])
    wr.add_feed_forward_length(m["n_ff"])
    wr.add_block_count(m["n_layer"])
    wr.add_head_count(m["n_head"])
    wr.add_layer_norm_eps(m["eps"])
    wr.add_causal_attention(False)
    wr.add_pooling_type(gguf.PoolingType(m["pooling"]))
    if "rope_base" in m:
        wr.add_rope_freq_base(m["rope_base"])
    wr.add_file_type(gguf.LlamaFileType.ALL_F32)
    wr.add_tokenizer_model("bert")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_type_count(2)
    # What convert_hf_to_gguf.py writes for BERT (no bos / eos: llama.cpp
    # defaults [CLS] = 101 as its BOS).
    wr.add_unk_token_id(100)
    wr.add_sep_token_id(102)
    wr.add_pad_token_id(0)
    wr.add_uint32("tokenizer.ggml.cls_token_id", 101)
    wr.add_mask_token_id(103)
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


# --------------------------------------------------------------------------
# llama.cpp
# --------------------------------------------------------------------------


def llama_tokenize(bin_dir: Path, model: Path, text: str) -> list[int]:
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        name = f.name
    try:
        r = subprocess.run([str(bin_dir / "llama-tokenize"), "-m", str(model), "-f", name,
                            "--ids", "--log-disable", "--no-escape"],
                           capture_output=True, text=True, check=True)
    finally:
        os.unlink(name)
    line = [l for l in r.stdout.splitlines() if l.startswith("[")][-1]
    return json.loads(line)


def llama_embed(bin_dir: Path, model: Path, texts: list[str], pooling: str,
                normalize: int) -> list[list[float]]:
    n_ctx = 512
    cmd = [str(bin_dir / "llama-embedding"), "-m", str(model), "-p", "\n".join(texts),
           "--pooling", pooling, "--embd-normalize", str(normalize),
           "--embd-output-format", "json", "-c", str(n_ctx), "-b", str(n_ctx), "-ub", str(n_ctx),
           "-t", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"llama-embedding failed:\n{r.stderr[-3000:]}")
    out = r.stdout
    doc = json.loads(out[out.index("{"):out.rindex("}") + 1])
    return [d["embedding"] for d in doc["data"]]


def llama_build(bin_dir: Path) -> str:
    """The build's version, or (a source tree without git metadata) its date."""
    r = subprocess.run([str(bin_dir / "llama-embedding"), "--version"], capture_output=True,
                       text=True)
    m = re.search(r"version: (\S+) \((\S+)\)", r.stdout + r.stderr)
    if m and m.group(2) != "unknown":
        return f"llama.cpp build {m.group(1)} ({m.group(2)})"
    src = bin_dir.resolve().parent.parent / "CMakeLists.txt"
    date = ""
    if src.exists():
        import datetime
        date = datetime.date.fromtimestamp(src.stat().st_mtime).isoformat()
    return f"llama.cpp source tree of {date} (no git metadata), CPU build"


# --------------------------------------------------------------------------
# Independent float64 forward (mean pooling), to check the reference
# --------------------------------------------------------------------------


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * x * (1.0 + 0.044715 * x * x)))


def rope_neox(x, base):  # x [T, H, D]
    t, _, d = x.shape
    half = d // 2
    inv = base ** (-np.arange(half, dtype=np.float64) * 2.0 / d)
    ang = np.arange(t, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., :half], x[..., half:]
    return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)


def numpy_embed(m: dict, w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    g = {k: v.astype(np.float64) for k, v in w.items()}
    e, h, eps = m["n_embd"], m["n_head"], m["eps"]
    d = e // h
    t = len(ids)
    x = g["token_embd.weight"][ids] + g["token_types.weight"][0]
    if m["arch"] == "bert":
        x = x + g["position_embd.weight"][:t]
    x = layer_norm(x, g["token_embd_norm.weight"], g["token_embd_norm.bias"], eps)
    for il in range(m["n_layer"]):
        p = f"blk.{il}."
        if m["arch"] == "bert":
            q = x @ g[p + "attn_q.weight"].T + g[p + "attn_q.bias"]
            k = x @ g[p + "attn_k.weight"].T + g[p + "attn_k.bias"]
            v = x @ g[p + "attn_v.weight"].T + g[p + "attn_v.bias"]
        else:
            qkv = x @ g[p + "attn_qkv.weight"].T
            q, k, v = qkv[:, :e], qkv[:, e:2 * e], qkv[:, 2 * e:]
        q, k, v = q.reshape(t, h, d), k.reshape(t, h, d), v.reshape(t, h, d)
        if m["arch"] != "bert":
            q, k = rope_neox(q, m["rope_base"]), rope_neox(k, m["rope_base"])
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", s, v).reshape(t, e)
        a = o @ g[p + "attn_output.weight"].T
        if m["arch"] == "bert":
            a = a + g[p + "attn_output.bias"]
        hh = layer_norm(a + x, g[p + "attn_output_norm.weight"], g[p + "attn_output_norm.bias"], eps)
        if m["arch"] == "bert":
            f = gelu_tanh(hh @ g[p + "ffn_up.weight"].T + g[p + "ffn_up.bias"])
            f = f @ g[p + "ffn_down.weight"].T + g[p + "ffn_down.bias"]
        else:
            gate = hh @ g[p + "ffn_gate.weight"].T
            f = (gate / (1.0 + np.exp(-gate))) * (hh @ g[p + "ffn_up.weight"].T)
            f = f @ g[p + "ffn_down.weight"].T
        x = layer_norm(f + hh, g[p + "layer_output_norm.weight"], g[p + "layer_output_norm.bias"],
                       eps)
    return x.mean(0)


# --------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-bin", required=True, type=Path,
                    help="bin/ of a llama.cpp build (outside the repository)")
    args = ap.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    tokens, types = build_vocab()
    reference = llama_build(args.llama_bin)
    for m in MODELS:
        path = OUT_DIR / f"{m['name']}-f32.gguf"
        w = make_weights(m, len(tokens))
        write_gguf(m, path, tokens, types, w)
        doc: dict = {
            "model": path.name,
            "arch": m["arch"],
            "n_embd": m["n_embd"],
            "n_ctx_train": m["n_ctx"],
            "pooling_type": m["pooling"],
            "reference": reference + ": llama-tokenize, llama-embedding (CPU, 2 threads)",
            "tokenize": [{"text": s, "tokens": llama_tokenize(args.llama_bin, path, s)}
                         for s in TOKENIZE_CASES],
            "embed": [{"text": s, "tokens": llama_tokenize(args.llama_bin, path, s)}
                      for s in EMBED_CASES],
            "embeddings": {},
        }
        for pname in POOLINGS:
            raw = llama_embed(args.llama_bin, path, EMBED_CASES, pname, -1)
            normed = llama_embed(args.llama_bin, path, EMBED_CASES, pname, 2)
            if pname == "none":  # one entry per token: regroup per case
                def group(vs):
                    out, i = [], 0
                    for c in doc["embed"]:
                        n = len(c["tokens"])
                        out.append([x for v in vs[i:i + n] for x in v])
                        i += n
                    assert i == len(vs), (i, len(vs))
                    return out
                raw, normed = group(raw), group(normed)
            assert len(raw) == len(EMBED_CASES) and len(normed) == len(EMBED_CASES)
            doc["embeddings"][pname] = {"normalized": normed, "raw": raw}
        worst = 0.0
        for c, ref in zip(doc["embed"], doc["embeddings"]["mean"]["raw"]):
            worst = max(worst, float(np.abs(numpy_embed(m, w, c["tokens"]) - np.array(ref)).max()))
        with open(OUT_DIR / f"{m['name']}.json", "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=True, indent=1)
            f.write("\n")
        print(f"{m['name']}: {path.stat().st_size} bytes; NumPy float64 forward vs llama.cpp "
              f"(mean pooling, raw): max |diff| {worst:.3g}")


if __name__ == "__main__":
    main()
