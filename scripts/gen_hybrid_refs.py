#!/usr/bin/env python3
"""Writes tiny random-weight hybrid GGUF models and llama.cpp's reference logits.

tiny-qwen35moe, tiny-granitehybrid, tiny-granitehybrid-moe, tiny-lfm2,
tiny-lfm2moe, tiny-nemotron-h and tiny-nemotron-h-moe (described at GRANITE,
GRANITE_MOE, LFM2, LFM2_MOE, NEMOTRON and NEMOTRON_MOE below);
--only NAME regenerates one of them.

tests/data covers the hybrid architectures qwen3next (MoE + shared
expert, ssm_ba, value head h -> key head h / r) and qwen35 (dense, separate
ssm_beta / ssm_alpha, h -> h % H_k, multi-section rope). This adds qwen35moe:
qwen35's gated DeltaNet layers with routed experts plus a gated shared expert,
and shapes the shared models do not exercise:
  - full_attention_interval 2: layers 0, 2 gated DeltaNet, layers 1, 3 full
    attention (two attention layers in the cache);
  - 6 value heads over 2 key heads (r = 3) of state size 32, so the
    h % H_k head map differs from h / r on most heads;
  - 4 experts top-2 (n_ff_exp 64) and a shared expert of width 96.
Weights are F32 from a seeded normal distribution shaped like the shared
tiny-qwen3next's (linear 1/sqrt(fan_in), norms 1 + 0.1 N(0,1) with their +1
offset applied, ssm_norm without, conv 0.5 N, dt bias about -2.7,
ssm_a = -exp(A_log)), tokenizer copied from the shared tiny-llama. The cases
and files are gen_model_refs.py's (short / long prompts of tests/data,
llama.cpp through llama-cpp-python, CPU, 2 threads, F32 KV, no flash
attention, one ubatch of 512).

Usage (from the repository root):
  /tmp/venvtest/bin/python scripts/gen_hybrid_refs.py [--only tiny-granitehybrid]
Needs: numpy, gguf (0.19), llama-cpp-python (0.3.36 was used).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gguf  # noqa: E402
import gen_model_refs as g  # noqa: E402

SPEC = dict(name="tiny-qwen35moe", arch="qwen35moe", seed=3501, n_layer=4, n_embd=128,
            n_head=4, n_head_kv=2, head_dim=64, n_rot=16, sections=[3, 3, 2, 0],
            rope_base=10000000.0, eps=1e-6, attn_interval=2,
            conv=4, state=32, groups=2, v_heads=6,
            n_expert=4, n_expert_used=2, n_ff_exp=64, n_ff_shexp=96, n_ff=64, embd_std=1.0)


def is_recurrent(spec: dict, layer: int) -> bool:
    return (layer + 1) % spec["attn_interval"] != 0


def make_tensors(spec: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    E, H, KV, D = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    S, HK, HV, K = spec["state"], spec["groups"], spec["v_heads"], spec["conv"]
    C = 2 * HK * S + HV * S

    def lin(n_out, n_in):  # [n_out, n_in] = ggml [n_in, n_out]
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = spec["embd_std"] * rng.standard_normal((g.N_VOCAB, E))
    t["output_norm.weight"] = norm(E)
    t["output.weight"] = lin(g.N_VOCAB, E) * 3.0
    for i in range(spec["n_layer"]):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        t[p + "post_attention_norm.weight"] = norm(E)
        if is_recurrent(spec, i):
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
        X, F, FS = spec["n_expert"], spec["n_ff_exp"], spec["n_ff_shexp"]
        t[p + "ffn_gate_inp.weight"] = 2.0 * lin(X, E)
        t[p + "ffn_gate_exps.weight"] = rng.standard_normal((X, F, E)) / math.sqrt(E)
        t[p + "ffn_up_exps.weight"] = rng.standard_normal((X, F, E)) / math.sqrt(E)
        t[p + "ffn_down_exps.weight"] = rng.standard_normal((X, E, F)) / math.sqrt(F)
        t[p + "ffn_gate_inp_shexp.weight"] = lin(1, E)[0]
        t[p + "ffn_gate_shexp.weight"] = lin(FS, E)
        t[p + "ffn_up_shexp.weight"] = lin(FS, E)
        t[p + "ffn_down_shexp.weight"] = lin(E, FS)
    return {k: v.astype(np.float32) for k, v in t.items()}


def qwen35_writer(spec: dict, path: Path) -> gguf.GGUFWriter:
    """The keys of a qwen35 / qwen35moe file (gen_mtp_refs.py's too): its
    `n_nextn` MTP blocks (default none) follow the `n_layer` decoder layers,
    and the expert keys are written where the spec has experts."""
    a = spec["arch"]
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(spec["name"])
    w.add_context_length(g.N_CTX)
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"] + spec.get("n_nextn", 0))
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv(spec["n_head_kv"])
    w.add_key_length(spec["head_dim"])
    w.add_value_length(spec["head_dim"])
    w.add_rope_dimension_count(spec["n_rot"])
    w.add_rope_freq_base(spec["rope_base"])
    w.add_layer_norm_rms_eps(spec["eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_uint32(f"{a}.ssm.conv_kernel", spec["conv"])
    w.add_uint32(f"{a}.ssm.state_size", spec["state"])
    w.add_uint32(f"{a}.ssm.group_count", spec["groups"])
    w.add_uint32(f"{a}.ssm.time_step_rank", spec["v_heads"])
    w.add_uint32(f"{a}.ssm.inner_size", spec["v_heads"] * spec["state"])
    w.add_uint32(f"{a}.full_attention_interval", spec["attn_interval"])
    w.add_array(f"{a}.rope.dimension_sections", spec["sections"])
    if "n_nextn" in spec:
        w.add_uint32(f"{a}.nextn_predict_layers", spec["n_nextn"])
    if "n_expert" in spec:
        w.add_uint32(f"{a}.expert_count", spec["n_expert"])
        w.add_uint32(f"{a}.expert_used_count", spec["n_expert_used"])
        w.add_uint32(f"{a}.expert_feed_forward_length", spec["n_ff_exp"])
        w.add_uint32(f"{a}.expert_shared_feed_forward_length", spec["n_ff_shexp"])
    return w


def write_model(spec: dict, path: Path) -> None:
    g.finish_file(qwen35_writer(spec, path), make_tensors(spec))


def add_mamba2_keys(w: gguf.GGUFWriter, spec: dict) -> None:
    """The Mamba-2 mixer's ssm.* keys (granitehybrid, nemotron_h)."""
    a = spec["arch"]
    w.add_uint32(f"{a}.ssm.conv_kernel", spec["conv"])
    w.add_uint32(f"{a}.ssm.state_size", spec["state"])
    w.add_uint32(f"{a}.ssm.group_count", spec["groups"])
    w.add_uint32(f"{a}.ssm.time_step_rank", spec["heads"])
    w.add_uint32(f"{a}.ssm.inner_size", spec["d_inner"])


def add_mamba2_tensors(t: dict, p: str, rng: np.random.Generator, spec: dict) -> None:
    """A Mamba-2 mixer's tensors (prefix p), drawn from rng: d_inner channels in
    `heads` heads, `groups` groups of B and C of `state` values, conv width
    `conv` with a bias; ssm_a = -exp(A_log), dt bias about -2.7, grouped norm."""
    E, N, G = spec["n_embd"], spec["state"], spec["groups"]
    NH, DI, K = spec["heads"], spec["d_inner"], spec["conv"]
    C = DI + 2 * G * N
    t[p + "ssm_in.weight"] = rng.standard_normal((2 * DI + 2 * G * N + NH, E)) / math.sqrt(E)
    t[p + "ssm_conv1d.weight"] = 0.5 * rng.standard_normal((C, K))
    t[p + "ssm_conv1d.bias"] = 0.1 * rng.standard_normal(C)
    t[p + "ssm_dt.bias"] = -2.7 + 0.9 * rng.standard_normal(NH)
    t[p + "ssm_a"] = -np.exp(rng.uniform(-0.6, 1.35, (NH, 1)))
    t[p + "ssm_d"] = 1.0 + 0.1 * rng.standard_normal((NH, 1))
    t[p + "ssm_norm.weight"] = (1.0 + 0.1 * rng.standard_normal(DI)).reshape(G, DI // G)
    t[p + "ssm_out.weight"] = rng.standard_normal((E, DI)) / math.sqrt(DI)


# granitehybrid (Granite 4.0 H): Mamba-2 layers 0 and 2, attention layers 1
# and 3 (head_count_kv 0 marks the Mamba-2 ones), d_inner = 2 * n_embd as
# llama.cpp requires, 8 heads of 32 channels in 2 groups of state size 16,
# conv width 4 with a bias, no rope (rope.scaling.finetuned false, as the
# converter writes for the Granite 4.0 H models), dense SiLU FFN and the
# Granite multipliers (embedding 12, residual 0.22, attention 1/16, logits 4).
GRANITE = dict(name="tiny-granitehybrid", arch="granitehybrid", seed=4001, n_layer=4,
               n_embd=128, n_head=4, n_head_kv=2, head_dim=32, eps=1e-5, attn_layers=[1, 3],
               conv=4, state=16, groups=2, heads=8, d_inner=256, n_ff=192,
               embedding_scale=12.0, residual_scale=0.22, attention_scale=0.0625,
               logit_scale=4.0)


def make_granite_tensors(spec: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    E, H, KV, D = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    F = spec["n_ff"]

    def lin(n_out, n_in):  # [n_out, n_in] = ggml [n_in, n_out]
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = rng.standard_normal((g.N_VOCAB, E)) * 0.1
    t["output_norm.weight"] = norm(E)
    t["output.weight"] = lin(g.N_VOCAB, E) * 12.0
    for i in range(spec["n_layer"]):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        t[p + "ffn_norm.weight"] = norm(E)
        if i not in spec["attn_layers"]:
            add_mamba2_tensors(t, p, rng, spec)
        else:
            t[p + "attn_q.weight"] = lin(H * D, E)
            t[p + "attn_k.weight"] = lin(KV * D, E)
            t[p + "attn_v.weight"] = lin(KV * D, E)
            t[p + "attn_output.weight"] = lin(E, H * D)
        if spec.get("n_expert"):
            X, FS = spec["n_expert"], spec["n_ff_shexp"]
            t[p + "ffn_gate_inp.weight"] = 2.0 * lin(X, E)
            t[p + "ffn_gate_exps.weight"] = rng.standard_normal((X, F, E)) / math.sqrt(E)
            t[p + "ffn_up_exps.weight"] = rng.standard_normal((X, F, E)) / math.sqrt(E)
            t[p + "ffn_down_exps.weight"] = rng.standard_normal((X, E, F)) / math.sqrt(F)
            t[p + "ffn_gate_shexp.weight"] = lin(FS, E)
            t[p + "ffn_up_shexp.weight"] = lin(FS, E)
            t[p + "ffn_down_shexp.weight"] = lin(E, FS)
        else:
            t[p + "ffn_gate.weight"] = lin(F, E)
            t[p + "ffn_up.weight"] = lin(F, E)
            t[p + "ffn_down.weight"] = lin(E, F)
    return {k: v.astype(np.float32) for k, v in t.items()}


def write_granite_model(spec: dict, path: Path) -> None:
    a = spec["arch"]
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(spec["name"])
    w.add_context_length(g.N_CTX)
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv([spec["n_head_kv"] if i in spec["attn_layers"] else 0
                         for i in range(spec["n_layer"])])
    w.add_key_length(spec["head_dim"])
    w.add_value_length(spec["head_dim"])
    w.add_layer_norm_rms_eps(spec["eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    add_mamba2_keys(w, spec)
    w.add_bool(f"{a}.rope.scaling.finetuned", False)
    w.add_float32(f"{a}.embedding_scale", spec["embedding_scale"])
    w.add_float32(f"{a}.residual_scale", spec["residual_scale"])
    w.add_float32(f"{a}.attention.scale", spec["attention_scale"])
    w.add_float32(f"{a}.logit_scale", spec["logit_scale"])
    if spec.get("n_expert"):
        w.add_uint32(f"{a}.expert_count", spec["n_expert"])
        w.add_uint32(f"{a}.expert_used_count", spec["n_expert_used"])
        w.add_uint32(f"{a}.expert_shared_feed_forward_length", spec["n_ff_shexp"])
    g.finish_file(w, make_granite_tensors(spec))


# Granite 4.0 H-Tiny / -Small style: the same layers with routed experts (4,
# top-2, softmax, weights renormalised; each expert of feed_forward_length
# 64, as llama.cpp sizes granite experts) and an ungated shared expert of
# width 96 in every layer.
GRANITE_MOE = dict(GRANITE, name="tiny-granitehybrid-moe", seed=4003, n_ff=64, n_expert=4,
                   n_expert_used=2, n_ff_shexp=96)


# lfm2 (Liquid LFM2): short-conv layers 0, 2 and 4, attention layers 1 and 3
# (head_count_kv 0 marks the short-conv ones; the last layer is a short-conv
# one), conv width (shortconv.l_cache) 3 as in the released models, q/k RMS
# norms, neox rope, a sliding window of 96 tokens on both attention layers
# (attention.sliding_window, as the LFM2.5 audio tokenizer's files carry; the
# long case runs past it), dense SiLU FFN, the final norm stored as
# token_embd_norm and the LM head tied to the token embeddings (no
# output.weight), the tokenizer's pre-tokenizer named "lfm2".
LFM2 = dict(name="tiny-lfm2", arch="lfm2", seed=5001, n_layer=5, n_embd=128, n_head=4,
            n_head_kv=2, head_dim=32, eps=1e-5, rope_base=1000000.0, attn_layers=[1, 3],
            l_cache=3, n_ff=192, embd_std=0.3, sliding_window=96)


def make_lfm2_tensors(spec: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    E, H, KV, D = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    K, F = spec["l_cache"], spec["n_ff"]

    def lin(n_out, n_in):  # [n_out, n_in] = ggml [n_in, n_out]
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = spec["embd_std"] * rng.standard_normal((g.N_VOCAB, E))
    t["token_embd_norm.weight"] = norm(E)
    for i in range(spec["n_layer"]):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        t[p + "ffn_norm.weight"] = norm(E)
        if i not in spec["attn_layers"]:
            t[p + "shortconv.in_proj.weight"] = lin(3 * E, E)
            t[p + "shortconv.conv.weight"] = 0.5 * rng.standard_normal((E, K))
            t[p + "shortconv.out_proj.weight"] = lin(E, E)
        else:
            t[p + "attn_q.weight"] = lin(H * D, E)
            t[p + "attn_k.weight"] = lin(KV * D, E)
            t[p + "attn_v.weight"] = lin(KV * D, E)
            t[p + "attn_q_norm.weight"] = norm(D)
            t[p + "attn_k_norm.weight"] = norm(D)
            t[p + "attn_output.weight"] = lin(E, H * D)
        if spec.get("n_expert") and i >= spec["n_dense"]:
            X, FX = spec["n_expert"], spec["n_ff_exp"]
            t[p + "ffn_gate_inp.weight"] = 2.0 * lin(X, E)
            t[p + "exp_probs_b.bias"] = 0.5 * rng.standard_normal(X)
            t[p + "ffn_gate_exps.weight"] = rng.standard_normal((X, FX, E)) / math.sqrt(E)
            t[p + "ffn_up_exps.weight"] = rng.standard_normal((X, FX, E)) / math.sqrt(E)
            t[p + "ffn_down_exps.weight"] = rng.standard_normal((X, E, FX)) / math.sqrt(FX)
        else:
            t[p + "ffn_gate.weight"] = lin(F, E)
            t[p + "ffn_up.weight"] = lin(F, E)
            t[p + "ffn_down.weight"] = lin(E, F)
    return {k: v.astype(np.float32) for k, v in t.items()}


def write_lfm2_model(spec: dict, path: Path) -> None:
    a = spec["arch"]
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(spec["name"])
    w.add_context_length(g.N_CTX)
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv([spec["n_head_kv"] if i in spec["attn_layers"] else 0
                         for i in range(spec["n_layer"])])
    w.add_key_length(spec["head_dim"])
    w.add_value_length(spec["head_dim"])
    w.add_rope_freq_base(spec["rope_base"])
    w.add_layer_norm_rms_eps(spec["eps"])
    w.add_shortconv_l_cache(spec["l_cache"])
    if spec.get("sliding_window"):
        w.add_sliding_window(spec["sliding_window"])
    if spec.get("n_expert"):
        w.add_uint32(f"{a}.expert_count", spec["n_expert"])
        w.add_uint32(f"{a}.expert_used_count", spec["n_expert_used"])
        w.add_uint32(f"{a}.expert_feed_forward_length", spec["n_ff_exp"])
        w.add_uint32(f"{a}.leading_dense_block_count", spec["n_dense"])
        w.add_uint32(f"{a}.expert_gating_func", 2)  # sigmoid, as the converter writes
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    g.finish_file(w, make_lfm2_tensors(spec), pre="lfm2")


# lfm2moe (LFM2-8B-A1B style): tiny-lfm2's layers, the first 2 with the
# dense FFN (leading_dense_block_count), layers 2-4 with 4 routed experts
# (top 2, sigmoid router, selection bias exp_probs_b 0.5 N, weights
# renormalised) of expert_feed_forward_length 64. The file keeps tiny-lfm2's
# attention.sliding_window 96, which llama.cpp ignores for lfm2moe (full
# attention throughout), as folio must.
LFM2_MOE = dict(LFM2, name="tiny-lfm2moe", arch="lfm2moe", seed=5003, n_expert=4,
                n_expert_used=2, n_ff_exp=64, n_dense=2)

# nemotron_h (Nemotron-H / Nemotron Nano 2): one block per layer by the
# pattern M (Mamba-2: head_count_kv 0 and feed_forward_length 0), * (attention:
# feed_forward_length 0) and - (a relu^2 FFN alone: feed_forward_length > 0),
# here "M-M*M-": the last layer an FFN, the one attention layer at 3 (4 heads /
# 2 KV heads of 32, no rope at all, scale 1/sqrt(32)). Mamba-2 mixers as
# tiny-granitehybrid's (8 heads of 32 channels, 2 groups, state 16, conv 4
# with a bias); the first FFN layer carries the optional ffn_up / ffn_down
# biases (std 0.3), the last none, as the released files. Only
# attention.layer_norm_epsilon (1e-5) is written: llama.cpp's RMS norms fall
# back to it.
NEMOTRON = dict(name="tiny-nemotron-h", arch="nemotron_h", seed=7001, pattern="M-M*M-",
                n_embd=128, n_head=4, n_head_kv=2, head_dim=32, eps=1e-5, conv=4, state=16,
                groups=2, heads=8, d_inner=256, n_ff=192, ffn_bias_layers=[1])


def make_nemotron_tensors(spec: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    E, H, KV, D = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    F = spec["n_ff"]

    def lin(n_out, n_in):  # [n_out, n_in] = ggml [n_in, n_out]
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = rng.standard_normal((g.N_VOCAB, E))
    t["output_norm.weight"] = norm(E)
    t["output.weight"] = lin(g.N_VOCAB, E) * 3.0
    for i, kind in enumerate(spec["pattern"]):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        if kind == "M":
            add_mamba2_tensors(t, p, rng, spec)
        elif kind == "*":
            t[p + "attn_q.weight"] = lin(H * D, E)
            t[p + "attn_k.weight"] = lin(KV * D, E)
            t[p + "attn_v.weight"] = lin(KV * D, E)
            t[p + "attn_output.weight"] = lin(E, H * D)
        elif kind == "-":
            t[p + "ffn_up.weight"] = lin(F, E)
            t[p + "ffn_down.weight"] = lin(E, F) * 0.5
            if i in spec["ffn_bias_layers"]:
                t[p + "ffn_up.bias"] = 0.3 * rng.standard_normal(F)
                t[p + "ffn_down.bias"] = 0.3 * rng.standard_normal(E)
        else:  # "E": routed relu^2 experts (latent width L) and the shared expert
            X, FX, FS = spec["n_expert"], spec["n_ff_exp"], spec["n_ff_shexp"]
            L = spec.get("latent") or E
            t[p + "ffn_gate_inp.weight"] = 2.0 * lin(X, E)
            t[p + "exp_probs_b.bias"] = 0.5 * rng.standard_normal(X)
            if spec.get("latent"):
                t[p + "ffn_latent_down.weight"] = lin(L, E)
                t[p + "ffn_latent_up.weight"] = lin(E, L)
            t[p + "ffn_up_exps.weight"] = rng.standard_normal((X, FX, L)) / math.sqrt(L)
            t[p + "ffn_down_exps.weight"] = 0.5 * rng.standard_normal((X, L, FX)) / math.sqrt(FX)
            t[p + "ffn_up_shexp.weight"] = lin(FS, E)
            t[p + "ffn_down_shexp.weight"] = lin(E, FS) * 0.5
    return {k: v.astype(np.float32) for k, v in t.items()}


def write_nemotron_model(spec: dict, path: Path) -> None:
    a, pattern = spec["arch"], spec["pattern"]
    ff = spec.get("n_ff_exp") or spec["n_ff"]
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(spec["name"])
    w.add_context_length(g.N_CTX)
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(len(pattern))
    w.add_feed_forward_length([ff if k in "-E" else 0 for k in pattern])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv([spec["n_head_kv"] if k == "*" else 0 for k in pattern])
    w.add_key_length(spec["head_dim"])
    w.add_value_length(spec["head_dim"])
    w.add_layer_norm_eps(spec["eps"])
    if spec.get("rms_eps"):
        w.add_layer_norm_rms_eps(spec["rms_eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    add_mamba2_keys(w, spec)
    if spec.get("n_expert"):
        w.add_expert_count(spec["n_expert"])
        w.add_expert_used_count(spec["n_expert_used"])
        w.add_expert_feed_forward_length(spec["n_ff_exp"])
        w.add_expert_shared_feed_forward_length(spec["n_ff_shexp"])
        w.add_expert_shared_count(1)
        w.add_expert_weights_norm(True)
        w.add_expert_weights_scale(spec["weights_scale"])
        w.add_expert_group_count(1)
        if spec.get("latent"):
            w.add_moe_latent_size(spec["latent"])
    g.finish_file(w, make_nemotron_tensors(spec))


# nemotron_h_moe (Nemotron 3 Nano / Super style): pattern "ME*MEM" (the last
# layer a Mamba-2 mixer), each E layer 4 routed relu^2 experts (top 2, no
# gate, sigmoid router, selection bias exp_probs_b 0.5 N, weights
# renormalised then times 2.5) of width 64 in a latent space of 64
# (moe_latent_size, ffn_latent_down / _up: Nemotron 3 Super), plus an ungated
# relu^2 shared expert of width 96 on n_embd. Both epsilon keys are written
# (layer_norm_epsilon 1e-4, layer_norm_rms_epsilon 1e-5): the RMS one wins.
NEMOTRON_MOE = dict(NEMOTRON, name="tiny-nemotron-h-moe", arch="nemotron_h_moe", seed=7003,
                    pattern="ME*MEM", eps=1e-4, rms_eps=1e-5, n_expert=4, n_expert_used=2,
                    n_ff_exp=64, n_ff_shexp=96, weights_scale=2.5, latent=64,
                    ffn_bias_layers=[])

MODELS = {SPEC["name"]: (SPEC, write_model), GRANITE["name"]: (GRANITE, write_granite_model),
          GRANITE_MOE["name"]: (GRANITE_MOE, write_granite_model),
          LFM2["name"]: (LFM2, write_lfm2_model), LFM2_MOE["name"]: (LFM2_MOE, write_lfm2_model),
          NEMOTRON["name"]: (NEMOTRON, write_nemotron_model),
          NEMOTRON_MOE["name"]: (NEMOTRON_MOE, write_nemotron_model)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="model names to (re)generate (default: all)")
    args = ap.parse_args()
    out = g.OUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name, (spec, writer) in MODELS.items():
        if args.only and name not in args.only:
            continue
        path = out / f"{name}-f32.gguf"
        writer(spec, path)
        print(f"{path.name}: {path.stat().st_size} bytes")
        for case in g.CASES:
            g.write_case(out, name, case, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
