#!/usr/bin/env python3
"""Writes tiny random-weight F32 GGUF models and llama.cpp's reference logits.

For every model in MODELS this script
  1. writes tests/model/refdata/<name>-f32.gguf with the `gguf` package: F32
     weights drawn from a seeded normal distribution, the 512-token BPE
     tokenizer copied verbatim (all tokenizer.* keys) from
     tests/data/models/tiny-llama-f32.gguf;
  2. runs llama.cpp on it through llama-cpp-python's low-level API (CPU, 2
     threads, F32 KV cache, flash attention off, n_ctx 512, one ubatch), on the
     `short` and `long` prompts of tests/data, and writes the same files
     tests/data has: <name>.<case>.{prompt.txt, prompt_tokens.txt,
     prefill.npy, gen_tokens.txt, decode.npy}.

Other modes:
  --verify     regenerate tests/data's own cases (tiny-llama, tiny-qwen3,
               ...) with this pipeline and print max |diff| against them.
  --selfcheck  recompute every written model's prefill logits with an
               independent float64 NumPy forward pass that follows the
               hyperparameter semantics documented in tests/model/refdata/README.md
               (rope scaling, sliding window layer pattern, gpt-oss sinks,
               biases, gating and swiglu_oai, ...) and print max |diff|
               against llama.cpp's.

Usage (from the repository root):
  /tmp/venvtest/bin/python scripts/gen_model_refs.py            # models + refs
  /tmp/venvtest/bin/python scripts/gen_model_refs.py --verify
  /tmp/venvtest/bin/python scripts/gen_model_refs.py --selfcheck
Needs: numpy, gguf (0.19), llama-cpp-python (0.3.36 was used).
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import sys
from pathlib import Path

import numpy as np

import gguf

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO / "tests" / "data" / "models"
OUT_DIR = REPO / "tests" / "model" / "refdata"
TOKENIZER_SOURCE = SHARED / "tiny-llama-f32.gguf"
CASES = {"short": 16, "long": 32}  # case -> number of greedy tokens
N_VOCAB = 512
N_CTX = 512
N_THREADS = 2

# --------------------------------------------------------------------------
# Model specifications. Shapes follow tests/data's tiny models.
# --------------------------------------------------------------------------

MODELS: list[dict] = [
    dict(name="tiny-qwen2", arch="qwen2", seed=1002, n_layer=2, n_embd=128,
         n_head=4, n_head_kv=2, head_dim=32, n_ff=256, rope_base=1000000.0,
         eps=1e-6, tied=False, qkv_bias=True, rope="neox",
         notes="q/k/v biases (std 0.5), untied output"),
    dict(name="tiny-qwen3moe", arch="qwen3moe", seed=1003, n_layer=2,
         n_embd=128, n_head=4, n_head_kv=2, head_dim=32, n_ff=384,
         n_expert=4, n_expert_used=2, n_ff_exp=128, rope_base=1000000.0,
         eps=1e-6, tied=False, qk_norm=True, rope="neox",
         notes="4 experts top-2, softmax gating, top-k weights renormalised; "
               "feed_forward_length (384) is present but unused"),
    # Like the real Gemma 3 files: no pattern key (llama.cpp's default period 6),
    # no rope.freq_base_swa (default 10000), no softcapping key.
    # Gemma seeds were picked (among 8) for greedy margins >= 0.05, well above the
    # ~1e-3 noise of ggml's fp16 GELU table; post norms ~2 keep the tied
    # embedding from making the model repeat its input token.
    dict(name="tiny-gemma3", arch="gemma3", seed=2001, post_norm_scale=2.0, n_layer=6, n_embd=128,
         n_head=4, n_head_kv=1, head_dim=64, n_ff=128, rope_base=1000000.0,
         rope_base_swa=10000.0, n_swa=16, swa_period=6, eps=1e-6, tied=True,
         qk_norm=True, rope="neox",
         notes="layers 0-4 sliding window 16 (rope base 10000), layer 5 global "
               "(rope base 1e6); no pattern/softcap keys"),
    # The optional gemma3 keys llama.cpp honours, written explicitly.
    dict(name="tiny-gemma3-swa2-softcap", arch="gemma3", seed=2000, post_norm_scale=2.0, n_layer=2,
         n_embd=128, n_head=4, n_head_kv=1, head_dim=64, n_ff=128,
         rope_base=1000000.0, rope_base_swa=20000.0, n_swa=16, swa_period=2,
         eps=1e-6, tied=True, qk_norm=True, rope="neox", final_softcap=6.0,
         write_swa_keys=True,
         notes="sliding_window_pattern 2 (layer 0 window 16, layer 1 global), "
               "rope.freq_base_swa 20000, final_logit_softcapping 6"),
    dict(name="tiny-llama-rope-linear", arch="llama", seed=1005, n_layer=2,
         n_embd=128, n_head=4, n_head_kv=2, head_dim=32, n_ff=256,
         rope_base=10000.0, eps=1e-5, tied=False, rope="norm",
         rope_scaling=dict(type="linear", factor=2.0),
         notes="rope.scaling.type linear, factor 2"),
    dict(name="tiny-llama-yarn", arch="llama", seed=1006, n_layer=2,
         n_embd=128, n_head=4, n_head_kv=2, head_dim=32, n_ff=256,
         rope_base=10000.0, eps=1e-5, tied=False, rope="norm", n_ctx_train=8192,
         rope_scaling=dict(type="yarn", factor=4.0, orig_ctx=2048),
         notes="rope.scaling.type yarn, factor 4, original context 2048"),
    dict(name="tiny-llama-mha", arch="llama", seed=1007, n_layer=2,
         n_embd=128, n_head=4, n_head_kv=4, head_dim=32, n_ff=256,
         rope_base=500000.0, eps=1e-6, tied=False, rope="norm",
         notes="n_head_kv = n_head (no GQA), rope base 500000, eps 1e-6"),
    # gpt-oss as the released files: biases on q/k/v/o, router and experts,
    # attention sinks, sliding window on even layers (no pattern key: period
    # 2), YaRN on every layer (factor 32 from 4096, rope base 150000),
    # swiglu_oai experts, the o200k pre-tokenizer. Expert gate/up weights are
    # scaled so that swiglu_oai's clamps at +-7 are reached.
    dict(name="tiny-gpt-oss", arch="gpt-oss", seed=3001, n_layer=2, n_embd=128,
         n_head=4, n_head_kv=2, head_dim=64, n_ff=64, n_expert=4, n_expert_used=2,
         n_ff_exp=64, rope_base=150000.0, rope_base_swa=150000.0, n_swa=16, swa_period=2,
         swa_rope_scaled=True, eps=1e-5, tied=False, rope="neox", qkv_bias=True,
         n_ctx_train=131072, rope_scaling=dict(type="yarn", factor=32.0, orig_ctx=4096),
         expert_scale=4.0, tokenizer_pre="gpt-4o",
         notes="gpt-oss: sinks, sliding window 16 on layer 0, YaRN x32, "
               "4 experts top-2 with biases, swiglu_oai, pre-tokenizer gpt-4o"),
    # Phi-3 / Phi-3.5 as converted: fused attn_qkv and gate+up ffn_up, neox
    # rope, LongRoPE factors (the long ones: the references' context 512
    # exceeds the original 256) and the rope magnitude attn_factor.
    dict(name="tiny-phi3", arch="phi3", seed=4001, n_layer=2, n_embd=128,
         n_head=4, n_head_kv=2, head_dim=32, n_ff=192, rope_base=10000.0,
         eps=1e-5, tied=False, rope="neox", n_ctx_train=4096,
         longrope=dict(orig_ctx=256, attn_factor=1.19),
         # A name with "phi3" in it makes llama.cpp look up Phi-3's special
         # tokens (<|end|>, ...), which the tiny vocabulary lacks.
         general_name="tiny-p3",
         notes="phi3: fused qkv and gate/up, LongRoPE long factors (context 512 > "
               "original 256), rope.scaling.attn_factor 1.19"),
    # Ministral 3 as converted: llama's layers, YaRN with the magnitude
    # divisor yarn_log_multiplier (mscale_all_dim) and the llama-4-style
    # attention temperature (floor period = the original context 64, so the
    # long prompt crosses several periods), the tekken pre-tokenizer.
    dict(name="tiny-mistral3", arch="mistral3", seed=5001, n_layer=2, n_embd=128,
         n_head=4, n_head_kv=2, head_dim=32, n_ff=256, rope_base=1000000.0,
         eps=1e-5, tied=False, rope="norm", n_ctx_train=1024,
         rope_scaling=dict(type="yarn", factor=4.0, orig_ctx=64),
         yarn_log_mul=0.6, attn_temp_scale=0.3, tokenizer_pre="tekken",
         notes="mistral3: YaRN x4 from 64 with yarn_log_multiplier 0.6, "
               "attention.temperature_scale 0.3, pre-tokenizer tekken"),
    # GLM-4.5 as converted: q/k/v biases, q/k norm, partial neox rope (half
    # the head), pre-FFN norm post_attention_norm, layer 0 dense, then
    # sigmoid-routed experts chosen with exp_probs_b, weights renormalised and
    # scaled, one ungated shared expert; one MTP block after the main layers
    # (block_count 4, nextn_predict_layers 1), outside the main forward (an MTP
    # head: scripts/gen_mtp_refs.py).
    dict(name="tiny-glm4moe", arch="glm4moe", seed=6004, n_layer=3, n_nextn=1, n_embd=128,
         n_head=4, n_head_kv=2, head_dim=32, rope_dims=16, n_ff=192, n_expert=4,
         n_expert_used=2, n_ff_exp=64, n_shared=1, n_dense_lead=1, weights_scale=2.5,
         rope_base=1000000.0, eps=1e-5, tied=False, rope="neox", qkv_bias=True,
         qk_norm=True, tokenizer_pre="glm4",
         notes="glm4moe: partial rope 16/32, q/k/v bias, q/k norm, 1 dense lead layer, "
               "sigmoid routing with exp_probs_b, norm + scale 2.5, shared expert, 1 MTP block"),
    # Gemma 4 E2B/E4B shape: sliding-window layers (head dim 32, 2 KV heads,
    # rope base 10000) between full-attention layers (head dim 64, 1 KV head,
    # proportional rope: rope_freqs 1 on the first 8 pairs, 1e30 on the rest;
    # no attn_v: V from the k projection); the last 2 layers share the K/V of
    # layers 2 and 3 and carry no attn_k/attn_v/attn_k_norm; per-layer inputs
    # of width 16; double-wide FFN on the shared layers; layer_output_scale;
    # final softcap 30.
    dict(name="tiny-gemma4", arch="gemma4", seed=5006, post_norm_scale=2.0, n_layer=6,
         n_embd=128, n_head=4, n_head_kv=[2, 1, 2, 1, 2, 1], head_dim=64, head_dim_swa=32,
         n_ff=[128, 128, 128, 128, 256, 256], swa_pattern=[True, False, True, False, True, False],
         n_swa=16, rope_base=1000000.0, rope_base_swa=10000.0, rope_partial_full=0.25,
         n_embd_per_layer=16, shared_kv_layers=2, final_softcap=30.0, eps=1e-6, tied=True,
         embd_std=0.12,
         qk_norm=True, rope="neox",
         notes="gemma4: per-layer inputs, shared KV (layers 4, 5 read 2, 3), sliding window 16 "
               "with head dim 32, proportional rope on full layers, k as v on full layers"),
    # Gemma 4 26B-A4B shape: no per-layer inputs, no shared KV; every layer
    # runs its dense GELU FFN beside 4 routed experts (top 2, softmax, weights
    # renormalised) whose gate and up share one ffn_gate_up_exps table, with
    # the router on rms_norm(x) / sqrt(E) * ffn_gate_inp.scale, the experts'
    # own input and output norms, the dense branch's post_ffw_norm_1 and a
    # per-expert output scale ffn_down_exps.scale.
    dict(name="tiny-gemma4-moe", arch="gemma4", seed=5020, post_norm_scale=2.0, n_layer=4,
         n_embd=128, n_head=4, n_head_kv=[2, 1, 2, 1], head_dim=64, head_dim_swa=32,
         n_ff=[96, 96, 96, 96], swa_pattern=[True, False, True, False],
         n_swa=16, rope_base=1000000.0, rope_base_swa=10000.0, rope_partial_full=0.25,
         n_embd_per_layer=0, shared_kv_layers=0, final_softcap=30.0, eps=1e-6, tied=False,
         embd_std=0.2, qk_norm=True, rope="neox", n_expert=4, n_expert_used=2, n_ff_exp=64,
         notes="gemma4 26B-A4B: dense FFN beside routed GELU experts (fused gate/up, "
               "per-expert scale), router on its own normalised input"),
]

# --------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------


def make_tensors(spec: dict) -> dict[str, np.ndarray]:
    """Returns name -> float32 array (NumPy shape = reversed ggml shape)."""
    if spec["arch"] == "gemma4":
        return make_gemma4_tensors(spec)
    rng = np.random.default_rng(spec["seed"])
    E, H, KV, D = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    gptoss = spec["arch"] == "gpt-oss"
    phi3 = spec["arch"] == "phi3"
    glm = spec["arch"] == "glm4moe"

    def lin(n_out, n_in):  # [n_out, n_in] = ggml [n_in, n_out]
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = rng.standard_normal((N_VOCAB, E)) * (0.1 if spec["tied"] else 1.0)
    t["output_norm.weight"] = norm(E)
    if not spec["tied"]:
        t["output.weight"] = lin(N_VOCAB, E) * 3.0
    if phi3:  # per-pair frequency divisors
        t["rope_factors_long.weight"] = 1.0 + 3.0 * rng.random(D // 2)
        t["rope_factors_short.weight"] = 1.0 + 0.5 * rng.random(D // 2)
    for i in range(spec["n_layer"] + spec.get("n_nextn", 0)):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        t[p + "attn_q.weight"] = lin(H * D, E)
        t[p + "attn_k.weight"] = lin(KV * D, E)
        t[p + "attn_v.weight"] = lin(KV * D, E)
        if spec.get("qkv_bias"):
            t[p + "attn_q.bias"] = 0.5 * rng.standard_normal(H * D)
            t[p + "attn_k.bias"] = 0.5 * rng.standard_normal(KV * D)
            t[p + "attn_v.bias"] = 0.5 * rng.standard_normal(KV * D)
        if spec.get("qk_norm"):
            t[p + "attn_q_norm.weight"] = norm(D)
            t[p + "attn_k_norm.weight"] = norm(D)
        t[p + "attn_output.weight"] = lin(E, H * D)
        if gptoss:
            t[p + "attn_output.bias"] = 0.5 * rng.standard_normal(E)
            # Sink logits around the typical row maximum, so the sink takes a
            # visible share of the softmax.
            t[p + "attn_sinks.weight"] = 1.0 + rng.standard_normal(H)
        if spec["arch"] == "gemma3":
            t[p + "post_attention_norm.weight"] = spec["post_norm_scale"] * norm(E)
        # gpt-oss and glm4moe name their pre-FFN norm post_attention_norm.
        t[p + ("post_attention_norm.weight" if gptoss or glm else "ffn_norm.weight")] = norm(E)
        if "n_expert" in spec and i >= spec.get("n_dense_lead", 0):
            X, F = spec["n_expert"], spec["n_ff_exp"]
            xs = spec.get("expert_scale", 1.0)
            t[p + "ffn_gate_inp.weight"] = 2.0 * lin(X, E)
            t[p + "ffn_gate_exps.weight"] = xs * rng.standard_normal((X, F, E)) / math.sqrt(E)
            t[p + "ffn_up_exps.weight"] = xs * rng.standard_normal((X, F, E)) / math.sqrt(E)
            t[p + "ffn_down_exps.weight"] = rng.standard_normal((X, E, F)) / math.sqrt(F)
            if gptoss:  # NumPy shape [X, F] = ggml [F, X]: row e is expert e's bias
                t[p + "ffn_gate_inp.bias"] = 0.5 * rng.standard_normal(X)
                t[p + "ffn_gate_exps.bias"] = 0.5 * rng.standard_normal((X, F))
                t[p + "ffn_up_exps.bias"] = 0.5 * rng.standard_normal((X, F))
                t[p + "ffn_down_exps.bias"] = 0.5 * rng.standard_normal((X, E))
            if glm:  # selection bias; the shared expert(s), n_shared * F wide
                t[p + "exp_probs_b.bias"] = 0.3 * rng.standard_normal(X)
                S = spec["n_shared"] * F
                t[p + "ffn_gate_shexp.weight"] = lin(S, E)
                t[p + "ffn_up_shexp.weight"] = lin(S, E)
                t[p + "ffn_down_shexp.weight"] = lin(E, S)
        else:
            F = spec["n_ff"]
            t[p + "ffn_gate.weight"] = lin(F, E)
            t[p + "ffn_up.weight"] = lin(F, E)
            t[p + "ffn_down.weight"] = lin(E, F)
        if spec["arch"] == "gemma3":
            t[p + "post_ffw_norm.weight"] = spec["post_norm_scale"] * norm(E)
        if i >= spec["n_layer"]:  # an MTP block: its own input projection and norms
            t[p + "nextn.eh_proj.weight"] = lin(E, 2 * E)
            t[p + "nextn.enorm.weight"] = norm(E)
            t[p + "nextn.hnorm.weight"] = norm(E)
            t[p + "nextn.shared_head_norm.weight"] = norm(E)
        if phi3:  # one projection for q, k, v; one for gate then up
            t[p + "attn_qkv.weight"] = np.concatenate(
                [t.pop(p + "attn_q.weight"), t.pop(p + "attn_k.weight"), t.pop(p + "attn_v.weight")])
            t[p + "ffn_up.weight"] = np.concatenate([t.pop(p + "ffn_gate.weight"), t[p + "ffn_up.weight"]])
    return {k: v.astype(np.float32) for k, v in t.items()}


def gemma4_layer(spec: dict, i: int) -> tuple[bool, int, int, int, bool]:
    """(sliding window, KV heads, head dim, FFN width, owns K/V) of layer i."""
    swa = spec["swa_pattern"][i]
    return (swa, spec["n_head_kv"][i], spec["head_dim_swa"] if swa else spec["head_dim"],
            spec["n_ff"][i], i < spec["n_layer"] - spec["shared_kv_layers"])


def gemma4_rope_freqs(spec: dict) -> np.ndarray:
    D = spec["head_dim"]
    n_rot = int(D * spec["rope_partial_full"] / 2)
    return np.array([1.0] * n_rot + [1e30] * (D // 2 - n_rot))


def make_gemma4_tensors(spec: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    E, H, L, P = spec["n_embd"], spec["n_head"], spec["n_layer"], spec["n_embd_per_layer"]

    def lin(n_out, n_in):
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    t: dict[str, np.ndarray] = {}
    t["token_embd.weight"] = rng.standard_normal((N_VOCAB, E)) * spec["embd_std"]
    t["output_norm.weight"] = norm(E)
    t["rope_freqs.weight"] = gemma4_rope_freqs(spec)
    if not spec.get("tied"):
        t["output.weight"] = lin(N_VOCAB, E) * 3.0
    if P > 0:
        t["per_layer_token_embd.weight"] = rng.standard_normal((N_VOCAB, P * L))
        t["per_layer_model_proj.weight"] = lin(P * L, E)
        t["per_layer_proj_norm.weight"] = norm(P)
    for i in range(L):
        swa, KV, D, F, has_kv = gemma4_layer(spec, i)
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(E)
        t[p + "attn_q.weight"] = lin(H * D, E)
        # Attention scale 1: q/k norm weights ~D^-1/4 keep q.k at std ~1.5 (a
        # softmax this tiny model's GELU rounding does not swing).
        t[p + "attn_q_norm.weight"] = norm(D) * (1.5 / math.sqrt(D)) ** 0.5
        if has_kv:
            t[p + "attn_k.weight"] = lin(KV * D, E)
            t[p + "attn_k_norm.weight"] = norm(D) * (1.5 / math.sqrt(D)) ** 0.5
            if swa:  # full-attention layers: V from the k projection
                t[p + "attn_v.weight"] = lin(KV * D, E)
        t[p + "attn_output.weight"] = lin(E, H * D)
        t[p + "post_attention_norm.weight"] = spec["post_norm_scale"] * norm(E)
        t[p + "ffn_norm.weight"] = norm(E)
        t[p + "ffn_gate.weight"] = lin(F, E)
        t[p + "ffn_up.weight"] = lin(F, E)
        t[p + "ffn_down.weight"] = lin(E, F)
        t[p + "post_ffw_norm.weight"] = spec["post_norm_scale"] * norm(E)
        if spec.get("n_expert"):
            X, FX = spec["n_expert"], spec["n_ff_exp"]
            # The router reads rms_norm(x) / sqrt(E): x2 sqrt(E) gives its
            # logits std ~2, so top-k choices are rarely near-ties.
            t[p + "ffn_gate_inp.weight"] = 2.0 * math.sqrt(E) * lin(X, E)
            t[p + "ffn_gate_inp.scale"] = norm(E)
            t[p + "pre_ffw_norm_2.weight"] = norm(E)
            t[p + "post_ffw_norm_1.weight"] = norm(E)
            t[p + "post_ffw_norm_2.weight"] = norm(E)
            t[p + "ffn_gate_up_exps.weight"] = rng.standard_normal((X, 2 * FX, E)) / math.sqrt(E)
            t[p + "ffn_down_exps.weight"] = rng.standard_normal((X, E, FX)) / math.sqrt(FX)
            t[p + "ffn_down_exps.scale"] = 0.5 + rng.random(X)
        if P > 0:
            # The gate reads the raw residual (RMS ~3): x0.3 keeps its GELU inputs
            # near N(0, 1), where ggml's fp16 GELU table is closest to the exact one.
            t[p + "inp_gate.weight"] = 0.3 * lin(P, E)
            t[p + "proj.weight"] = lin(E, P)
            t[p + "post_norm.weight"] = norm(E)
        t[p + "layer_output_scale.weight"] = 0.5 + 0.5 * rng.random(1)
    return {k: v.astype(np.float32) for k, v in t.items()}


def copy_tokenizer(w: gguf.GGUFWriter, pre: str | None = None) -> None:
    """Copies the tokenizer keys; `pre` replaces tokenizer.ggml.pre."""
    r = gguf.GGUFReader(str(TOKENIZER_SOURCE))
    for key, field in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = pre if key == "tokenizer.ggml.pre" and pre is not None else field.contents()
        w.add_key_value(key, value, vtype, sub)


def write_model(spec: dict, path: Path) -> None:
    a = spec["arch"]
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(spec.get("general_name", spec["name"]))
    w.add_context_length(spec.get("n_ctx_train", N_CTX))
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"] + spec.get("n_nextn", 0))
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv(spec["n_head_kv"])
    w.add_key_length(spec["head_dim"])
    w.add_value_length(spec["head_dim"])
    if a != "gemma3":  # real Gemma 3 files carry no rope.dimension_count
        w.add_rope_dimension_count(spec.get("rope_dims", spec["head_dim"]))
    w.add_rope_freq_base(spec["rope_base"])
    w.add_layer_norm_rms_eps(spec["eps"])
    if "n_expert" in spec:
        w.add_expert_count(spec["n_expert"])
        w.add_expert_used_count(spec["n_expert_used"])
        w.add_expert_feed_forward_length(spec["n_ff_exp"])
    if "n_swa" in spec:
        w.add_sliding_window(spec["n_swa"])
    if spec.get("write_swa_keys"):
        w.add_sliding_window_pattern(spec["swa_period"])
        w.add_rope_freq_base_swa(spec["rope_base_swa"])
    if "final_softcap" in spec:
        w.add_final_logit_softcapping(spec["final_softcap"])
    if a == "gemma4":
        w.add_key_length_swa(spec["head_dim_swa"])
        w.add_value_length_swa(spec["head_dim_swa"])
        w.add_rope_dimension_count_swa(spec["head_dim_swa"])
        w.add_rope_freq_base_swa(spec["rope_base_swa"])
        w.add_sliding_window_pattern(spec["swa_pattern"])
        w.add_shared_kv_layers(spec["shared_kv_layers"])
        w.add_embedding_length_per_layer_input(spec["n_embd_per_layer"])
    lr = spec.get("longrope")
    if lr:
        w.add_rope_scaling_orig_ctx_len(lr["orig_ctx"])
        w.add_rope_scaling_attn_factors(lr["attn_factor"])
    rs = spec.get("rope_scaling")
    if rs:
        w.add_rope_scaling_type(gguf.RopeScalingType(rs["type"]))
        w.add_rope_scaling_factor(rs["factor"])
        if "orig_ctx" in rs:
            w.add_rope_scaling_orig_ctx_len(rs["orig_ctx"])
    if "yarn_log_mul" in spec:
        w.add_rope_scaling_yarn_log_mul(spec["yarn_log_mul"])
    if "attn_temp_scale" in spec:
        w.add_attn_temperature_scale(spec["attn_temp_scale"])
    if a == "glm4moe":
        w.add_expert_shared_count(spec["n_shared"])
        w.add_leading_dense_block_count(spec["n_dense_lead"])
        w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        w.add_expert_weights_scale(spec["weights_scale"])
        w.add_expert_weights_norm(True)
        w.add_nextn_predict_layers(spec["n_nextn"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    finish_file(w, make_tensors(spec), spec.get("tokenizer_pre"))


def finish_file(w: gguf.GGUFWriter, tensors: dict[str, np.ndarray], pre: str | None = None) -> None:
    """The shared tokenizer (`pre` replacing its pre-tokenizer), the vocab size,
    the tensors, and the file written and closed."""
    copy_tokenizer(w, pre)
    w.add_vocab_size(N_VOCAB)
    for name, arr in tensors.items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# --------------------------------------------------------------------------
# llama.cpp through llama-cpp-python's low-level API
# --------------------------------------------------------------------------

_llama_ready = False


def _llama():
    global _llama_ready
    import llama_cpp as L
    if not _llama_ready:
        if not os.environ.get("GEN_VERBOSE"):
            # Silence llama.cpp's log; keep a reference so it is not collected.
            _llama.cb = L.llama_log_callback(lambda level, text, user: None)
            L.llama_log_set(_llama.cb, ctypes.c_void_p(0))
        L.llama_backend_init()
        _llama_ready = True
    return L


def llama_reference(path: Path, tokens: list[int], n_gen: int):
    """Returns (prefill [n, V], generated ids, decode [n_gen, V], text bytes)."""
    L = _llama()
    model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
    if not model:
        raise RuntimeError(f"llama.cpp could not load {path}")
    cp = L.llama_context_default_params()
    cp.n_ctx = N_CTX
    cp.n_batch = N_CTX
    cp.n_ubatch = N_CTX
    cp.n_seq_max = 1
    cp.n_outputs_max = 0
    cp.n_outputs_max_per_seq = 0
    cp.n_threads = N_THREADS
    cp.n_threads_batch = N_THREADS
    cp.type_k = L.GGML_TYPE_F32
    cp.type_v = L.GGML_TYPE_F32
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise RuntimeError(f"llama.cpp could not create a context for {path}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    batch = L.llama_batch_init(len(tokens), 0, 1)

    def decode(ids: list[int], pos0: int) -> np.ndarray:
        for i, t in enumerate(ids):
            batch.token[i] = t
            batch.pos[i] = pos0 + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1  # every position returns logits
        batch.n_tokens = len(ids)
        rc = L.llama_decode(ctx, batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        out = L.llama_get_logits(ctx)
        return np.ctypeslib.as_array(out, shape=(len(ids), n_vocab)).copy()

    def piece(t: int) -> bytes:
        buf = ctypes.create_string_buffer(256)
        n = L.llama_token_to_piece(vocab, t, buf, len(buf), 0, True)
        return buf.raw[:n]

    prefill = decode(tokens, 0)
    gen, rows, last = [], [], prefill[-1]
    for i in range(n_gen):
        t = int(np.argmax(last))
        gen.append(t)
        last = decode([t], len(tokens) + i)[0]
        rows.append(last)
    text = b"".join(piece(t) for t in gen)
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return prefill, gen, np.asarray(rows, dtype=np.float32), text


def llama_tokenize(path: Path, text: bytes) -> list[int]:
    L = _llama()
    mp = L.llama_model_default_params()
    mp.vocab_only = True
    model = L.llama_model_load_from_file(str(path).encode(), mp)
    vocab = L.llama_model_get_vocab(model)
    out = (L.llama_token * 4096)()
    n = L.llama_tokenize(vocab, text, len(text), out, len(out), False, False)
    L.llama_model_free(model)
    return list(out[:n])


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


def read_ids(path: Path) -> list[int]:
    return [int(x) for x in path.read_bytes().split(b"\n")[0].split(b",")]


def case_inputs(case: str) -> tuple[bytes, list[int]]:
    text = (SHARED / f"tiny-llama.{case}.prompt.txt").read_bytes()
    ids = read_ids(SHARED / f"tiny-llama.{case}.prompt_tokens.txt")
    return text, ids


def write_case(out: Path, name: str, case: str, model_path: Path, own_pre: bool = False) -> None:
    text, ids = case_inputs(case)
    if own_pre:
        # Another pre-tokenizer than tests/data's qwen2: its ids are
        # llama.cpp's tokenization of the prompt with this file's vocabulary.
        own = llama_tokenize(model_path, text)
        print(f"  {name}.{case}: own pre-tokenizer, {len(own)} ids "
              f"({'same as' if own == ids else 'differ from'} tests/data's)")
        ids = own
    elif llama_tokenize(model_path, text) != ids:
        raise RuntimeError("llama.cpp tokenizes the prompt differently from tests/data")
    prefill, gen, decode, gen_text = llama_reference(model_path, ids, CASES[case])
    base = out / f"{name}.{case}"
    Path(f"{base}.prompt.txt").write_bytes(text)
    Path(f"{base}.prompt_tokens.txt").write_text(",".join(map(str, ids)) + "\n")
    np.save(f"{base}.prefill.npy", prefill.astype(np.float32))
    Path(f"{base}.gen_tokens.txt").write_bytes(
        ",".join(map(str, gen)).encode() + b"\n" + gen_text + b"\n")
    np.save(f"{base}.decode.npy", decode.astype(np.float32))
    # Smallest gap between the best and second-best logit over the greedy
    # choices: a folio result within tolerance must pick the same tokens.
    chosen = np.vstack([prefill[-1:], decode[:-1]])
    top2 = np.sort(chosen, axis=1)[:, -2:]
    print(f"  {name}.{case}: {len(ids)} prompt tokens, logits std "
          f"{prefill.std():.2f}, min greedy margin {(top2[:, 1] - top2[:, 0]).min():.3g}, gen {gen}")


def verify() -> int:
    """Regenerates tests/data's cases and compares (expects 0 diff)."""
    worst = 0.0
    for model in sorted(SHARED.glob("tiny-*-f32.gguf")):
        m = model.name[: -len("-f32.gguf")]
        for case in CASES:
            ids = read_ids(SHARED / f"{m}.{case}.prompt_tokens.txt")
            ref_gen = read_ids(SHARED / f"{m}.{case}.gen_tokens.txt")
            ref_text = (SHARED / f"{m}.{case}.gen_tokens.txt").read_bytes().split(b"\n", 1)[1]
            pre, gen, dec, text = llama_reference(model, ids, len(ref_gen))
            text_ok = text + b"\n" == ref_text
            dp = np.abs(pre - np.load(SHARED / f"{m}.{case}.prefill.npy")).max()
            dd = np.abs(dec - np.load(SHARED / f"{m}.{case}.decode.npy")).max()
            worst = max(worst, dp, dd)
            print(f"{m}.{case}: prefill max|d| {dp:.3g}, decode max|d| {dd:.3g}, "
                  f"gen tokens equal {gen == ref_gen}, text equal {text_ok}")
    print(f"worst max|d| {worst:.3g}")
    return 0 if worst < 1e-4 else 1


# --------------------------------------------------------------------------
# Independent float64 forward pass (checks the documented semantics)
# --------------------------------------------------------------------------


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_fp16_table(x):
    # GELU evaluated at the fp16-rounded input, result rounded to fp16;
    # identity above 10, zero below -10.
    y = gelu_tanh(x.astype(np.float16).astype(np.float64)).astype(np.float16).astype(np.float64)
    return np.where(x >= 10.0, x, np.where(x <= -10.0, 0.0, y))


def rope_angles(spec, n_pos, layer):
    """Returns (theta [n_pos, D/2], magnitude scale) for one layer."""
    D = spec.get("rope_dims", spec["head_dim"])
    base = spec["rope_base"]
    if spec.get("n_swa") and is_swa_layer(spec, layer):
        base = spec["rope_base_swa"]
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    i = np.arange(D // 2, dtype=np.float64)[None, :]
    theta_ext = pos * base ** (-2.0 * i / D)
    lr = spec.get("longrope")
    if lr:  # long factors: the references' context exceeds the original one
        f = spec["_tensors"]["rope_factors_long.weight"].astype(np.float64)
        return theta_ext / f[None, :], lr["attn_factor"]
    rs = spec.get("rope_scaling")
    swa_unscaled = spec.get("n_swa") and is_swa_layer(spec, layer) and not spec.get("swa_rope_scaled")
    if not rs or swa_unscaled:
        return theta_ext, 1.0
    scale = 1.0 / rs["factor"]
    if rs["type"] == "linear":
        return theta_ext * scale, 1.0
    # YaRN: blend interpolated and extrapolated angles per dimension pair.
    n_orig, beta_fast, beta_slow = rs["orig_ctx"], 32.0, 1.0

    def corr_dim(n_rot):
        return D * math.log(n_orig / (n_rot * 2 * math.pi)) / (2 * math.log(base))

    lo = max(0.0, math.floor(corr_dim(beta_fast)))
    hi = min(D - 1.0, math.ceil(corr_dim(beta_slow)))
    y = (i - lo) / max(0.001, hi - lo)
    ramp = 1.0 - np.clip(y, 0.0, 1.0)  # 1: extrapolate (original), 0: interpolate
    theta = theta_ext * scale * (1.0 - ramp) + theta_ext * ramp
    mscale = 1.0 + 0.1 * math.log(1.0 / scale)
    if "yarn_log_mul" in spec:  # mistral3: divided by 1 + 0.1 L ln(factor)
        mscale /= 1.0 + 0.1 * spec["yarn_log_mul"] * math.log(rs["factor"])
    return theta, mscale


def apply_rope(x, theta, mscale, kind):
    # x [n, heads, D]; theta [n, R/2] rotates the first R dims (partial rope)
    r = 2 * theta.shape[-1]
    if r < x.shape[-1]:
        return np.concatenate([apply_rope(x[..., :r], theta, mscale, kind), x[..., r:]], axis=-1)
    c = (np.cos(theta) * mscale)[:, None, :]
    s = (np.sin(theta) * mscale)[:, None, :]
    if kind == "norm":  # adjacent pairs (2i, 2i+1)
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = a * s + b * c
        return out
    h = x.shape[-1] // 2  # neox: pairs (i, i + D/2)
    a, b = x[..., :h], x[..., h:]
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)


def is_swa_layer(spec, layer):
    return (layer + 1) % spec["swa_period"] != 0


def swiglu_oai(g, u, alpha=1.702, limit=7.0):
    g = np.minimum(g, limit)
    u = np.clip(u, -limit, limit)
    return g / (1.0 + np.exp(-alpha * g)) * (u + 1.0)


def gemma4_reference_forward(spec, t, ids, gelu):
    """Gemma 4 (README: tiny-gemma4): per-layer inputs, shared KV, V = rms_norm(v or k)."""
    n, E, H, L, P = len(ids), spec["n_embd"], spec["n_head"], spec["n_layer"], spec["n_embd_per_layer"]
    eps = spec["eps"]
    x = t["token_embd.weight"][ids] * np.float64(np.float32(math.sqrt(E)))
    if P > 0:
        pe = t["per_layer_token_embd.weight"][ids].reshape(n, L, P) * math.sqrt(P)
        pp = (x @ t["per_layer_model_proj.weight"].T / math.sqrt(E)).reshape(n, L, P)
        pl = (rms_norm(pp, t["per_layer_proj_norm.weight"], eps) + pe) / math.sqrt(2.0)  # [n, L, P]
    min_margin = math.inf
    n_kv = L - spec["shared_kv_layers"]
    kv_of: dict[int, tuple] = {}
    pos = np.arange(n, dtype=np.float64)[:, None]
    for l in range(L):
        swa, KV, D, F, has_kv = gemma4_layer(spec, l)
        p = f"blk.{l}."
        i = np.arange(D // 2, dtype=np.float64)[None, :]
        if swa:
            theta = pos * spec["rope_base_swa"] ** (-2.0 * i / D)
        else:
            theta = pos * spec["rope_base"] ** (-2.0 * i / D) / gemma4_rope_freqs(spec)[None, :]
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        q = rms_norm((h @ t[p + "attn_q.weight"].T).reshape(n, H, D), t[p + "attn_q_norm.weight"], eps)
        q = apply_rope(q, theta, 1.0, "neox")
        if has_kv:
            kr = (h @ t[p + "attn_k.weight"].T).reshape(n, KV, D)
            vr = (h @ t[p + "attn_v.weight"].T).reshape(n, KV, D) if p + "attn_v.weight" in t else kr
            v = rms_norm(vr, 1.0, eps)
            k = apply_rope(rms_norm(kr, t[p + "attn_k_norm.weight"], eps), theta, 1.0, "neox")
            kv_of[l] = (k, v)
        else:
            k, v = kv_of[n_kv - (2 if swa else 1)]
        qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
        mask = ki > qi
        if swa:
            mask |= (qi - ki) >= spec["n_swa"]
        att = np.empty((n, H, D))
        for hh in range(H):
            kh = hh // (H // KV)
            sc = q[:, hh] @ k[:, kh].T  # attention scale 1
            sc[mask] = -np.inf
            sc = np.exp(sc - sc.max(axis=1, keepdims=True))
            att[:, hh] = (sc / sc.sum(axis=1, keepdims=True)) @ v[:, kh]
        o = rms_norm(att.reshape(n, H * D) @ t[p + "attn_output.weight"].T,
                     t[p + "post_attention_norm.weight"], eps)
        x = x + o
        h = rms_norm(x, t[p + "ffn_norm.weight"], eps)
        f = (gelu(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
        if spec.get("n_expert"):  # 26B-A4B: routed experts beside the dense FFN
            f = rms_norm(f, t[p + "post_ffw_norm_1.weight"], eps)
            r = rms_norm(x, 1.0, eps) / math.sqrt(E) * t[p + "ffn_gate_inp.scale"]
            logits = r @ t[p + "ffn_gate_inp.weight"].T  # [n, X]
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)
            k, FX = spec["n_expert_used"], spec["n_ff_exp"]
            he = rms_norm(x, t[p + "pre_ffw_norm_2.weight"], eps)
            moe = np.zeros_like(x)
            for tok in range(n):
                order = np.argsort(-probs[tok])
                min_margin = min(min_margin, probs[tok, order[k - 1]] - probs[tok, order[k]])
                chosen = order[:k]
                wsum = probs[tok, chosen].sum()
                for e_id in chosen:
                    gu = t[p + "ffn_gate_up_exps.weight"][e_id] @ he[tok]  # [2 FX]: gate, up
                    y = t[p + "ffn_down_exps.weight"][e_id] @ (gelu(gu[:FX]) * gu[FX:])
                    y = y * t[p + "ffn_down_exps.scale"][e_id]
                    moe[tok] += y * probs[tok, e_id] / wsum
            f = f + rms_norm(moe, t[p + "post_ffw_norm_2.weight"], eps)
        x = x + rms_norm(f, t[p + "post_ffw_norm.weight"], eps)
        if P > 0:
            g = gelu(x @ t[p + "inp_gate.weight"].T) * pl[:, l]
            x = x + rms_norm(g @ t[p + "proj.weight"].T, t[p + "post_norm.weight"], eps)
        x = x * t[p + "layer_output_scale.weight"][0]
    x = rms_norm(x, t["output_norm.weight"], eps)
    logits = x @ t.get("output.weight", t["token_embd.weight"]).T
    c = spec["final_softcap"]
    return c * np.tanh(logits / c), min_margin


def reference_forward(spec, t, ids, gelu):
    t = {k: v.astype(np.float64) for k, v in t.items()}
    if spec["arch"] == "gemma4":
        return gemma4_reference_forward(spec, t, ids, gelu)
    n, E, H, KV, D = len(ids), spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["head_dim"]
    eps, gemma = spec["eps"], spec["arch"] == "gemma3"
    gptoss = spec["arch"] == "gpt-oss"
    glm = spec["arch"] == "glm4moe"
    if spec["arch"] == "phi3":  # split the fused projections
        t = dict(t)
        spec = dict(spec, _tensors=t)
        F = spec["n_ff"]
        for l in range(spec["n_layer"]):
            p = f"blk.{l}."
            qkv = t.pop(p + "attn_qkv.weight")
            t[p + "attn_q.weight"] = qkv[: H * D]
            t[p + "attn_k.weight"] = qkv[H * D: (H + KV) * D]
            t[p + "attn_v.weight"] = qkv[(H + KV) * D:]
            gu = t[p + "ffn_up.weight"]
            t[p + "ffn_gate.weight"], t[p + "ffn_up.weight"] = gu[:F], gu[F:]
    x = t["token_embd.weight"][ids]
    if gemma:
        x = x * np.float64(np.float32(math.sqrt(E)))
    min_margin = math.inf
    for l in range(spec["n_layer"]):
        p = f"blk.{l}."
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        q = h @ t[p + "attn_q.weight"].T
        k = h @ t[p + "attn_k.weight"].T
        v = h @ t[p + "attn_v.weight"].T
        if spec.get("qkv_bias"):
            q, k, v = q + t[p + "attn_q.bias"], k + t[p + "attn_k.bias"], v + t[p + "attn_v.bias"]
        q, k, v = q.reshape(n, H, D), k.reshape(n, KV, D), v.reshape(n, KV, D)
        if spec.get("qk_norm"):
            q = rms_norm(q, t[p + "attn_q_norm.weight"], eps)
            k = rms_norm(k, t[p + "attn_k_norm.weight"], eps)
        theta, mscale = rope_angles(spec, n, l)
        q, k = apply_rope(q, theta, mscale, spec["rope"]), apply_rope(k, theta, mscale, spec["rope"])
        if "attn_temp_scale" in spec:  # mistral3: q times 1 + beta ln(floor(p / n_orig) + 1)
            p_floor = np.floor(np.arange(n) / spec["rope_scaling"]["orig_ctx"])
            q = q * (1.0 + spec["attn_temp_scale"] * np.log(p_floor + 1.0))[:, None, None]
        qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
        mask = ki > qi
        if spec.get("n_swa") and is_swa_layer(spec, l):
            mask |= (qi - ki) >= spec["n_swa"]
        att = np.empty((n, H, D))
        for hh in range(H):
            kh = hh // (H // KV)
            s = (q[:, hh] @ k[:, kh].T) / math.sqrt(D)
            s[mask] = -np.inf
            if gptoss:  # the sink logit joins the denominator, with no value row
                sink = t[p + "attn_sinks.weight"][hh]
                m = np.maximum(s.max(axis=1, keepdims=True), sink)
                e = np.exp(s - m)
                att[:, hh] = (e @ v[:, kh]) / (e.sum(axis=1, keepdims=True) + np.exp(sink - m))
                continue
            s = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, hh] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kh]
        o = att.reshape(n, H * D) @ t[p + "attn_output.weight"].T
        if gptoss:
            o = o + t[p + "attn_output.bias"]
        if gemma:
            o = rms_norm(o, t[p + "post_attention_norm.weight"], eps)
        x = x + o
        h = rms_norm(x, t[p + ("post_attention_norm.weight" if gptoss or glm else "ffn_norm.weight")], eps)
        if glm and l >= spec["n_dense_lead"]:
            # Sigmoid router; top k by probability + exp_probs_b; weights the
            # unbiased probabilities, renormalised, times the scale; plus the
            # ungated shared expert.
            prob = 1.0 / (1.0 + np.exp(-(h @ t[p + "ffn_gate_inp.weight"].T)))
            sel_p = prob + t[p + "exp_probs_b.bias"]
            order = np.argsort(-sel_p, axis=1)
            srt = np.take_along_axis(sel_p, order, axis=1)
            k_used = spec["n_expert_used"]
            min_margin = min(min_margin, float((srt[:, k_used - 1] - srt[:, k_used]).min()))
            f = np.zeros_like(x)
            for r in range(n):
                sel = order[r, :k_used]
                wts = prob[r, sel] / prob[r, sel].sum() * spec["weights_scale"]
                for e, wgt in zip(sel, wts):
                    g = t[p + "ffn_gate_exps.weight"][e] @ h[r]
                    u = t[p + "ffn_up_exps.weight"][e] @ h[r]
                    f[r] += wgt * (t[p + "ffn_down_exps.weight"][e] @ (g / (1 + np.exp(-g)) * u))
            g = h @ t[p + "ffn_gate_shexp.weight"].T
            u = h @ t[p + "ffn_up_shexp.weight"].T
            f = f + (g / (1 + np.exp(-g)) * u) @ t[p + "ffn_down_shexp.weight"].T
        elif gptoss:
            # Router logits + bias; top-k by logit; softmax over the k chosen.
            logits = h @ t[p + "ffn_gate_inp.weight"].T + t[p + "ffn_gate_inp.bias"]
            order = np.argsort(-logits, axis=1)
            srt = np.take_along_axis(logits, order, axis=1)
            k_used = spec["n_expert_used"]
            min_margin = min(min_margin, float((srt[:, k_used - 1] - srt[:, k_used]).min()))
            f = np.zeros_like(x)
            for r in range(n):
                sel = order[r, :k_used]
                wts = np.exp(logits[r, sel] - logits[r, sel].max())
                wts /= wts.sum()
                for e, wgt in zip(sel, wts):
                    g = t[p + "ffn_gate_exps.weight"][e] @ h[r] + t[p + "ffn_gate_exps.bias"][e]
                    u = t[p + "ffn_up_exps.weight"][e] @ h[r] + t[p + "ffn_up_exps.bias"][e]
                    f[r] += wgt * (t[p + "ffn_down_exps.weight"][e] @ swiglu_oai(g, u)
                                   + t[p + "ffn_down_exps.bias"][e])
        elif "n_expert" in spec and not glm:
            logits = h @ t[p + "ffn_gate_inp.weight"].T
            prob = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            order = np.argsort(-prob, axis=1)
            srt = np.take_along_axis(prob, order, axis=1)
            k_used = spec["n_expert_used"]
            min_margin = min(min_margin, float((srt[:, k_used - 1] - srt[:, k_used]).min()))
            f = np.zeros_like(x)
            for r in range(n):
                sel = order[r, :k_used]
                wts = prob[r, sel] / prob[r, sel].sum()
                for e, wgt in zip(sel, wts):
                    g = t[p + "ffn_gate_exps.weight"][e] @ h[r]
                    u = t[p + "ffn_up_exps.weight"][e] @ h[r]
                    f[r] += wgt * (t[p + "ffn_down_exps.weight"][e] @ (g / (1 + np.exp(-g)) * u))
        else:
            g = h @ t[p + "ffn_gate.weight"].T
            u = h @ t[p + "ffn_up.weight"].T
            act = gelu(g) if gemma else g / (1 + np.exp(-g))
            f = (act * u) @ t[p + "ffn_down.weight"].T
        if gemma:
            f = rms_norm(f, t[p + "post_ffw_norm.weight"], eps)
        x = x + f
    x = rms_norm(x, t["output_norm.weight"], eps)
    out_w = t.get("output.weight", t["token_embd.weight"])
    logits = x @ out_w.T
    if "final_softcap" in spec:
        c = spec["final_softcap"]
        logits = c * np.tanh(logits / c)
    return logits, min_margin


def selfcheck(out: Path) -> int:
    worst = 0.0
    for spec in MODELS:
        path = out / f"{spec['name']}-f32.gguf"
        r = gguf.GGUFReader(str(path))
        t = {tt.name: np.array(tt.data) for tt in r.tensors}
        for case in CASES:
            ids = read_ids(out / f"{spec['name']}.{case}.prompt_tokens.txt")
            ref = np.load(out / f"{spec['name']}.{case}.prefill.npy")
            variants = [("gelu tanh", gelu_tanh)]
            if spec["arch"] in ("gemma3", "gemma4"):
                variants.append(("gelu fp16 table", gelu_fp16_table))
            for label, gelu in variants:
                got, margin = reference_forward(spec, t, ids, gelu)
                d = float(np.abs(got - ref).max())
                if label == variants[-1][0]:
                    # ggml's fp16 GELU table makes gemma3 logits jitter by ~1e-3
                    # (inputs near an fp16 rounding boundary flip), so gemma3
                    # gets a looser bound; everything else agrees to ~1e-5.
                    gemma = spec["arch"] in ("gemma3", "gemma4")
                    worst = max(worst, d / (5e-3 if gemma else 1e-4))
                extra = f", min top-k routing margin {margin:.3g}" if margin < math.inf else ""
                print(f"{spec['name']}.{case} [{label}]: max|numpy f64 - llama.cpp| {d:.3g}{extra}")
    print(f"worst diff / bound {worst:.3g} (bound 5e-3 for gemma3/gemma4, 1e-4 otherwise)")
    return 0 if worst < 1.0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--only", nargs="*", help="model names to (re)generate")
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--selfcheck", action="store_true")
    args = ap.parse_args()
    if args.verify:
        return verify()
    if args.selfcheck:
        return selfcheck(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in MODELS:
        if args.only and spec["name"] not in args.only:
            continue
        path = args.out / f"{spec['name']}-f32.gguf"
        write_model(spec, path)
        print(f"{path.name}: {path.stat().st_size} bytes ({spec['notes']})")
        for case in CASES:
            write_case(args.out, spec["name"], case, path, "tokenizer_pre" in spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
