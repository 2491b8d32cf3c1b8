#!/usr/bin/env python3
"""Writes tiny-qwen35-mtp-f32.gguf, tiny-qwen35moe-mtp-f32.gguf and MTP-head
reference vectors.

tiny-qwen35-mtp: a qwen35 model (2 main layers: a gated DeltaNet layer and
a full-attention layer, full_attention_interval 2) plus one MTP block
(block_count 3, nextn_predict_layers 1): blk.2 is a full-attention layer
with a dense FFN and nextn.eh_proj / enorm / hnorm / shared_head_norm /
shared_head_head (its own LM head; no nextn.embed_tokens, so token_embd is
used). Shapes otherwise as tests/data's tiny-qwen35 (n_embd 128, 4 heads /
2 KV heads of 64, rope over 16 dims, sections [3, 3, 2, 0], n_ff 256),
weights as gen_hybrid_refs.py draws them, tokenizer copied from tiny-llama.
tiny-qwen35moe-mtp: the same with qwen35moe's FFN in every layer, the MTP
block's included (4 experts, top 2, width 32; a gated shared expert of 64).

For them and for tiny-glm4moe (gen_model_refs.py; its MTP block blk.3 has no
shared_head_head: the model's output is used), one fixed input of the MTP
head alone: tokens MTP_TOKENS at positions 0..5 and hidden rows drawn from
N(0, 1) (seed 77), every row an output. Written per model M:
  M.mtp.tokens.txt      comma-separated token ids
  M.mtp.hidden.npy      float32 [6, 128] the hidden rows fed with them
  M.mtp.logits.npy      float32 [6, 512] the head's logits, float64 NumPy
  M.mtp.hidden_out.npy  float32 [6, 128] the head's output state (after its
                        head norm: what a chained draft takes), NumPy
and, with --llama-mtp PROGRAM (a small program outside the repository,
linked against llama.cpp 3f545be's libllama.so: it loads the model with
load_mtp, makes an LLAMA_CONTEXT_TYPE_MTP context and decodes the tokens
with the hidden rows as batch.embd; see tests/model/refdata/README.md),
  M.mtp.llama_logits.npy, M.mtp.llama_hidden_out.npy  llama.cpp's values
for the models llama.cpp runs MTP heads of (qwen35, qwen35moe here; its
glm4moe graph has none).

The NumPy head (mtp_reference):
  x = eh_proj [rms_norm(embd[t]) * enorm ; rms_norm(h) * hnorm]
  x += attention(rms_norm(x) * attn_norm)       causal over the 6 positions
  x += ffn(rms_norm(x) * post_attention_norm)
  g = rms_norm(x) * (shared_head_norm or output_norm); logits = head g
with the family's attention (qwen35: per head [query, gate] from attn_q,
q/k RMS norms, neox rope on the first rope.dimension_count dims, output
times sigmoid(gate); glm4moe: q/k/v biases, q/k norms, partial neox rope)
and FFN (qwen35: SwiGLU; qwen35moe: softmax router, top 2 renormalised,
plus the shared expert times sigmoid(ffn_gate_inp_shexp . x); glm4moe: the
routed layer of gen_model_refs.py).

Usage (from the repository root):
  .venv/bin/python scripts/gen_mtp_refs.py [--llama-mtp PROGRAM]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gguf  # noqa: E402
import gen_hybrid_refs as h  # noqa: E402
import gen_model_refs as g  # noqa: E402

OUT = g.OUT_DIR
MTP_TOKENS = [17, 301, 5, 88, 402, 260]
SPEC = dict(name="tiny-qwen35-mtp", arch="qwen35", seed=3577, n_layer=2, n_nextn=1, n_embd=128,
            n_head=4, n_head_kv=2, head_dim=64, n_rot=16, sections=[3, 3, 2, 0],
            rope_base=10000000.0, eps=1e-6, attn_interval=2, conv=4, state=32, groups=2,
            v_heads=4, n_ff=256)
# qwen35moe: the same layers with 4 routed experts (top 2, width 32, softmax
# router, weights renormalised) and a sigmoid-gated shared expert (width 64)
# in every layer, the MTP block's included.
SPEC_MOE = dict(SPEC, name="tiny-qwen35moe-mtp", arch="qwen35moe", seed=3578, n_ff=64,
                n_expert=4, n_expert_used=2, n_ff_exp=32, n_ff_shexp=64)


def make_tensors(spec: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    E, H, KV, D = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    S, HK, HV, K, F = spec["state"], spec["groups"], spec["v_heads"], spec["conv"], spec["n_ff"]
    C = 2 * HK * S + HV * S

    def lin(n_out, n_in):  # [n_out, n_in] = ggml [n_in, n_out]
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = rng.standard_normal((g.N_VOCAB, E))
    t["output_norm.weight"] = norm(E)
    t["output.weight"] = lin(g.N_VOCAB, E) * 3.0
    for i in range(spec["n_layer"] + spec["n_nextn"]):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        t[p + "post_attention_norm.weight"] = norm(E)
        if i < spec["n_layer"] and (i + 1) % spec["attn_interval"] != 0:
            t[p + "attn_qkv.weight"] = lin(C, E)
            t[p + "attn_gate.weight"] = lin(HV * S, E)
            t[p + "ssm_conv1d.weight"] = 0.5 * rng.standard_normal((C, K))
            t[p + "ssm_dt.bias"] = -2.7 + 0.9 * rng.standard_normal(HV)
            t[p + "ssm_a"] = -np.exp(rng.uniform(-0.6, 1.35, HV))
            t[p + "ssm_beta.weight"] = lin(HV, E)
            t[p + "ssm_alpha.weight"] = lin(HV, E)
            t[p + "ssm_norm.weight"] = norm(S)
            t[p + "ssm_out.weight"] = lin(E, HV * S)
        else:
            t[p + "attn_q.weight"] = lin(2 * H * D, E)  # per head [query, gate]
            t[p + "attn_k.weight"] = lin(KV * D, E)
            t[p + "attn_v.weight"] = lin(KV * D, E)
            t[p + "attn_output.weight"] = lin(E, H * D) * 0.7
            t[p + "attn_q_norm.weight"] = norm(D)
            t[p + "attn_k_norm.weight"] = norm(D)
        if "n_expert" in spec:
            X, FX, FS = spec["n_expert"], spec["n_ff_exp"], spec["n_ff_shexp"]
            t[p + "ffn_gate_inp.weight"] = 2.0 * lin(X, E)
            t[p + "ffn_gate_exps.weight"] = rng.standard_normal((X, FX, E)) / math.sqrt(E)
            t[p + "ffn_up_exps.weight"] = rng.standard_normal((X, FX, E)) / math.sqrt(E)
            t[p + "ffn_down_exps.weight"] = rng.standard_normal((X, E, FX)) / math.sqrt(FX)
            t[p + "ffn_gate_inp_shexp.weight"] = lin(1, E)[0]
            t[p + "ffn_gate_shexp.weight"] = lin(FS, E)
            t[p + "ffn_up_shexp.weight"] = lin(FS, E)
            t[p + "ffn_down_shexp.weight"] = lin(E, FS)
        else:
            t[p + "ffn_gate.weight"] = lin(F, E)
            t[p + "ffn_up.weight"] = lin(F, E)
            t[p + "ffn_down.weight"] = lin(E, F)
        if i >= spec["n_layer"]:
            t[p + "nextn.eh_proj.weight"] = lin(E, 2 * E)
            t[p + "nextn.enorm.weight"] = norm(E)
            t[p + "nextn.hnorm.weight"] = norm(E)
            t[p + "nextn.shared_head_norm.weight"] = norm(E)
            t[p + "nextn.shared_head_head.weight"] = lin(g.N_VOCAB, E) * 3.0
    return {k: v.astype(np.float32) for k, v in t.items()}


def write_model(spec: dict, path: Path) -> None:
    g.finish_file(h.qwen35_writer(spec, path), make_tensors(spec))


def read_model(path: Path) -> tuple[dict, dict]:
    """Tensors (float64, numpy order [n_out, n_in]) and the keys used here."""
    r = gguf.GGUFReader(str(path))
    t = {x.name: np.array(x.data, dtype=np.float64) for x in r.tensors}
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()

    def key(k, default=None):
        f = r.fields.get(f"{arch}.{k}")
        return default if f is None else f.parts[-1][0].item()

    kv = dict(arch=arch, n_block=key("block_count"), n_nextn=key("nextn_predict_layers", 0),
              n_head=key("attention.head_count"), n_head_kv=key("attention.head_count_kv"),
              head_dim=key("attention.key_length"), n_rot=key("rope.dimension_count"),
              rope_base=key("rope.freq_base"), eps=key("attention.layer_norm_rms_epsilon"),
              n_expert_used=key("expert_used_count", 0),
              weights_scale=key("expert_weights_scale", 1.0))
    return t, kv


def rope_neox(x, n_rot, base):
    # x [n, heads, D]; neox pairs (i, i + n_rot/2) on the first n_rot dims
    n = x.shape[0]
    i = np.arange(n_rot // 2, dtype=np.float64)[None, :]
    theta = np.arange(n, dtype=np.float64)[:, None] * base ** (-2.0 * i / n_rot)
    return g.apply_rope(x, theta, 1.0, "neox")


def mtp_reference(t: dict, kv: dict, tokens: list[int], hid: np.ndarray):
    blk = kv["n_block"] - kv["n_nextn"]
    p = f"blk.{blk}."
    eps, H, KV, D = kv["eps"], kv["n_head"], kv["n_head_kv"], kv["head_dim"]
    n = len(tokens)
    rms = g.rms_norm
    e = t.get(p + "nextn.embed_tokens.weight", t["token_embd.weight"])[tokens]
    x = np.concatenate([rms(e, t[p + "nextn.enorm.weight"], eps),
                        rms(hid, t[p + "nextn.hnorm.weight"], eps)], axis=1)
    x = x @ t[p + "nextn.eh_proj.weight"].T
    h = rms(x, t[p + "attn_norm.weight"], eps)
    qwen = kv["arch"].startswith("qwen3")
    if qwen:
        qf = (h @ t[p + "attn_q.weight"].T).reshape(n, H, 2 * D)
        q, gate = qf[:, :, :D], qf[:, :, D:]
    else:
        q = (h @ t[p + "attn_q.weight"].T + t[p + "attn_q.bias"]).reshape(n, H, D)
    k = h @ t[p + "attn_k.weight"].T
    v = h @ t[p + "attn_v.weight"].T
    if not qwen:
        k, v = k + t[p + "attn_k.bias"], v + t[p + "attn_v.bias"]
    k, v = k.reshape(n, KV, D), v.reshape(n, KV, D)
    q = rms(q, t[p + "attn_q_norm.weight"], eps)
    k = rms(k, t[p + "attn_k_norm.weight"], eps)
    q, k = rope_neox(q, kv["n_rot"], kv["rope_base"]), rope_neox(k, kv["n_rot"], kv["rope_base"])
    mask = np.arange(n)[None, :] > np.arange(n)[:, None]
    att = np.empty((n, H, D))
    for hh in range(H):
        kh = hh // (H // KV)
        s = (q[:, hh] @ k[:, kh].T) / math.sqrt(D)
        s[mask] = -np.inf
        s = np.exp(s - s.max(axis=1, keepdims=True))
        att[:, hh] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kh]
    if qwen:
        att = att / (1.0 + np.exp(-gate))
    x = x + att.reshape(n, H * D) @ t[p + "attn_output.weight"].T
    h = rms(x, t[p + "post_attention_norm.weight"], eps)

    def swiglu(a, b):
        return a / (1.0 + np.exp(-a)) * b

    if p + "ffn_gate_inp.weight" in t and qwen:  # qwen35moe: softmax router, renormalised
        logit = h @ t[p + "ffn_gate_inp.weight"].T
        prob = np.exp(logit - logit.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        order = np.argsort(-prob, axis=1)
        f = np.zeros_like(x)
        for r in range(n):
            sel = order[r, :kv["n_expert_used"]]
            wts = prob[r, sel] / prob[r, sel].sum()
            for ex, wgt in zip(sel, wts):
                a = t[p + "ffn_gate_exps.weight"][ex] @ h[r]
                b = t[p + "ffn_up_exps.weight"][ex] @ h[r]
                f[r] += wgt * (t[p + "ffn_down_exps.weight"][ex] @ swiglu(a, b))
        shared = swiglu(h @ t[p + "ffn_gate_shexp.weight"].T,
                        h @ t[p + "ffn_up_shexp.weight"].T) @ t[p + "ffn_down_shexp.weight"].T
        gate_s = 1.0 / (1.0 + np.exp(-(h @ t[p + "ffn_gate_inp_shexp.weight"])))
        f += shared * gate_s[:, None]
    elif p + "ffn_gate_inp.weight" in t:  # glm4moe's routed layer (gen_model_refs.py)
        prob = 1.0 / (1.0 + np.exp(-(h @ t[p + "ffn_gate_inp.weight"].T)))
        order = np.argsort(-(prob + t[p + "exp_probs_b.bias"]), axis=1)
        f = np.zeros_like(x)
        for r in range(n):
            sel = order[r, :kv["n_expert_used"]]
            wts = prob[r, sel] / prob[r, sel].sum() * kv["weights_scale"]
            for ex, wgt in zip(sel, wts):
                a = t[p + "ffn_gate_exps.weight"][ex] @ h[r]
                b = t[p + "ffn_up_exps.weight"][ex] @ h[r]
                f[r] += wgt * (t[p + "ffn_down_exps.weight"][ex] @ swiglu(a, b))
        f += swiglu(h @ t[p + "ffn_gate_shexp.weight"].T,
                    h @ t[p + "ffn_up_shexp.weight"].T) @ t[p + "ffn_down_shexp.weight"].T
    else:
        f = swiglu(h @ t[p + "ffn_gate.weight"].T, h @ t[p + "ffn_up.weight"].T) @ \
            t[p + "ffn_down.weight"].T
    x = x + f
    gn = rms(x, t.get(p + "nextn.shared_head_norm.weight", t["output_norm.weight"]), eps)
    head = t.get(p + "nextn.shared_head_head.weight", t.get("output.weight"))
    return gn @ head.T, gn


def write_refs(name: str, llama_mtp: str | None) -> None:
    path = OUT / f"{name}-f32.gguf"
    t, kv = read_model(path)
    hid = np.random.default_rng(77).standard_normal((len(MTP_TOKENS), 128))
    hid32 = hid.astype(np.float32)
    (OUT / f"{name}.mtp.tokens.txt").write_text(",".join(map(str, MTP_TOKENS)) + "\n")
    np.save(OUT / f"{name}.mtp.hidden.npy", hid32)
    logits, gn = mtp_reference(t, kv, MTP_TOKENS, hid32.astype(np.float64))
    np.save(OUT / f"{name}.mtp.logits.npy", logits.astype(np.float32))
    np.save(OUT / f"{name}.mtp.hidden_out.npy", gn.astype(np.float32))
    msg = f"{name}: NumPy logits written"
    if llama_mtp and kv["arch"].startswith("qwen3"):
        with tempfile.TemporaryDirectory() as d:
            hp, lp, gp = Path(d) / "h.f32", Path(d) / "l.f32", Path(d) / "g.f32"
            hid32.tofile(hp)
            subprocess.run([llama_mtp, str(path), ",".join(map(str, MTP_TOKENS)), str(hp),
                            str(lp), str(gp)], check=True)
            ll = np.fromfile(lp, dtype=np.float32).reshape(len(MTP_TOKENS), g.N_VOCAB)
            lg = np.fromfile(gp, dtype=np.float32).reshape(len(MTP_TOKENS), 128)
        np.save(OUT / f"{name}.mtp.llama_logits.npy", ll)
        np.save(OUT / f"{name}.mtp.llama_hidden_out.npy", lg)
        msg += (f"; llama.cpp vs NumPy: logits max |d| {np.abs(ll - logits).max():.3g}, "
                f"state max |d| {np.abs(lg - gn).max():.3g}")
    print(msg)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-mtp", help="the llama.cpp MTP program (outside the repository)")
    args = ap.parse_args()
    for spec in (SPEC, SPEC_MOE):
        path = OUT / f"{spec['name']}-f32.gguf"
        write_model(spec, path)
        print(f"{path.name}: {path.stat().st_size} bytes")
    for name in (SPEC["name"], SPEC_MOE["name"], "tiny-glm4moe"):
        write_refs(name, args.llama_mtp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
