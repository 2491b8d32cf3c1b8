#!/usr/bin/env python3
"""Small deepseek2 files and their logits from an independent NumPy forward
in the *expanded* form of multi-head latent attention.

folio runs deepseek2's attention in the absorbed form (queries multiplied into
the latent space by attn_k_b, attention over the cached latent rows, outputs
through attn_v_b; src/model/blocks/latent_attention.cc). This script computes
the same model the other way round, as the paper writes it: per head, keys
k_h = [attn_k_b_h^T c, rope key] and values v_h = attn_v_b_h c from the
normed latent vectors c, then plain causal softmax attention in float64. So
the test (tests/model/deepseek2_test.cc) checks the absorption's algebra, the
latent cache and the routing independently of llama.cpp (whose own files
are in tests/model/refdata/llama-archs when its saver writes them).

moe and groups: 2 layers (layer 0 a dense SwiGLU FFN: leading_dense_block_count
1; layer 1 routed experts with sigmoid gating, exp_probs_b selection bias,
renormalised weights times expert_weights_scale 2.5, one ungated shared
expert), q_lora_rank 48, kv_lora_rank 64, rope 16 dims (normal rope),
key_length_mla 32, value_length_mla 24, 2 heads, n_embd 64, vocabulary 64,
matrices stored F16 (the forward uses the rounded values), norms F32:
  moe     4 experts, top 2, no groups
  groups  8 experts in 4 groups, 2 groups used, top 2 (DeepSeek V3's
          group-limited routing: a group scores its two best experts)
  lite    DeepSeek-V2-Lite's layout: 26 blocks (llama.cpp reads no
          q_lora_rank then), one attn_q per layer; n_embd 32, kv_lora_rank
          32, 8 rope dims, key/value_length_mla 16, 25 dense layers, 4
          experts top 2 in the last
  yarn    as moe, with YaRN rope (factor 4, original context 32) and
          rope.scaling.yarn_log_multiplier 0.0707 (DeepSeek V2's
          mscale_all_dim 0.707): ggml's YaRN rope, DeepSeek's q.k scale
Writes tests/model/refdata/deepseek2/NAME.{gguf,prompt_tokens.txt,
gen_tokens.txt,prefill.npy,decode.npy} (20 prompt ids, 12 greedy tokens).

With --llama-bin BUILD it also runs llama.cpp (its libllama, through
scripts/llama_archs_logits.c) on twins of the files with F32 matrices and
checks that llama.cpp's logits agree with this forward's within 1e-4 of the
largest logit, with the same greedy tokens (llama.cpp 3f545be: within 2.6e-5,
logits up to 8.7, greedy the same on all four), and keeps groups' twin with
llama.cpp's logits on it in tests/model/refdata/deepseek2/llamacpp/.

Usage (repository root; not run by the tests):
  .venv/bin/python scripts/gen_deepseek2_expanded.py [--llama-bin /path/to/llama.cpp/build]
Needs: numpy, gguf (scripts/requirements.txt); a C compiler for --llama-bin.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "model" / "refdata" / "deepseek2"
# With --llama-bin: the F32 twins of these files and llama.cpp's logits on
# them go to OUT/llamacpp/NAME-f32.* (the dense-layer lead and the expert
# groups checked against llama.cpp itself by tests/model/deepseek2_test.cc).
LLAMACPP_OUT = OUT / "llamacpp"
LLAMACPP_KEPT = {"groups"}
E, V, H, L = 64, 64, 2, 2
LQ, DL, R, DQK, DV = 48, 64, 16, 32, 24
DN = DQK - R
F, FX, K, SHARED = 96, 32, 2, 1
BASE, EPS, SCALE = 10000.0, 1e-5, 2.5
PROMPT_LEN, GEN_LEN = 20, 12


def make(name, n_expert, groups, groups_used, seed, lite=False, yarn=None, out=OUT,
         matrices=np.float16):
    # lite: DeepSeek-V2-Lite's layout, which llama.cpp tells by its layer
    # count (26 or 27 blocks): one attn_q, no q_lora_rank; here 26 blocks of
    # smaller dims, 25 of them dense, so the file stays small.
    global E, L, LQ, DL, R, DQK, DV, DN, F
    E, L, LQ, DL, R, DQK, DV, F = (32, 26, 0, 32, 8, 16, 16, 16) if lite else \
        (64, 2, 48, 64, 16, 32, 24, 96)
    DN = DQK - R
    n_dense = L - 1
    rng = np.random.default_rng(seed)
    w = {}

    def t(n, *shape, norm=False, s=None):
        fan_in = shape[-1]
        a = rng.standard_normal(shape) * (0.1 if norm else (s if s else 1.0 / np.sqrt(fan_in)))
        if norm:
            a = (a + 1.0).astype(np.float32)
        else:
            a = a.astype(matrices)  # stored F16; the forward uses the rounded values
        w[n] = a

    t("token_embd.weight", V, E, s=1.0)
    t("output_norm.weight", E, norm=True)
    t("output.weight", V, E, s=2.0 / np.sqrt(E))
    for il in range(L):
        p = f"blk.{il}."
        t(p + "attn_norm.weight", E, norm=True)
        if LQ > 0:
            t(p + "attn_q_a.weight", LQ, E)
            t(p + "attn_q_a_norm.weight", LQ, norm=True)
            t(p + "attn_q_b.weight", H * DQK, LQ, s=2.0 / np.sqrt(LQ))
        else:
            t(p + "attn_q.weight", H * DQK, E, s=2.0 / np.sqrt(E))
        t(p + "attn_kv_a_mqa.weight", DL + R, E, s=2.0 / np.sqrt(E))
        t(p + "attn_kv_a_norm.weight", DL, norm=True)
        t(p + "attn_k_b.weight", H, DL, DN, s=1.0 / np.sqrt(DN))
        t(p + "attn_v_b.weight", H, DV, DL)
        t(p + "attn_output.weight", E, H * DV)
        t(p + "ffn_norm.weight", E, norm=True)
        if il < n_dense:
            t(p + "ffn_gate.weight", F, E)
            t(p + "ffn_up.weight", F, E)
            t(p + "ffn_down.weight", E, F)
        else:
            t(p + "ffn_gate_inp.weight", n_expert, E, s=2.0 / np.sqrt(E))
            w[p + "exp_probs_b.bias"] = (rng.standard_normal(n_expert) * 0.3).astype(np.float32)
            t(p + "ffn_gate_exps.weight", n_expert, FX, E)
            t(p + "ffn_up_exps.weight", n_expert, FX, E)
            t(p + "ffn_down_exps.weight", n_expert, E, FX)
            t(p + "ffn_gate_shexp.weight", FX * SHARED, E)
            t(p + "ffn_up_shexp.weight", FX * SHARED, E)
            t(p + "ffn_down_shexp.weight", E, FX * SHARED)

    wr = gguf.GGUFWriter(str(out / f"{name}.gguf"), "deepseek2")
    a = "deepseek2"
    for k, v in [("context_length", 128), ("embedding_length", E), ("block_count", L),
                 ("feed_forward_length", F), ("attention.head_count", H),
                 ("attention.head_count_kv", 1), ("attention.key_length", DL + R),
                 ("attention.value_length", DL), ("attention.key_length_mla", DQK),
                 ("attention.value_length_mla", DV),
                 ("attention.kv_lora_rank", DL), ("rope.dimension_count", R),
                 ("expert_count", n_expert), ("expert_used_count", K),
                 ("expert_shared_count", SHARED), ("expert_feed_forward_length", FX),
                 ("leading_dense_block_count", n_dense), ("expert_gating_func", 2),
                 ("expert_group_count", groups), ("expert_group_used_count", groups_used),
                 ("vocab_size", V)]:
        wr.add_uint32(f"{a}.{k}", v)
    wr.add_string("tokenizer.ggml.model", "no_vocab")  # as llama.cpp's saver: no tokenizer
    if LQ > 0:
        wr.add_uint32(f"{a}.attention.q_lora_rank", LQ)
    if yarn:  # (factor, original context, yarn_log_multiplier as converters store it)
        wr.add_string(f"{a}.rope.scaling.type", "yarn")
        wr.add_float32(f"{a}.rope.scaling.factor", yarn[0])
        wr.add_uint32(f"{a}.rope.scaling.original_context_length", yarn[1])
        wr.add_float32(f"{a}.rope.scaling.yarn_log_multiplier", yarn[2])
    wr.add_float32(f"{a}.attention.layer_norm_rms_epsilon", EPS)
    wr.add_float32(f"{a}.rope.freq_base", BASE)
    wr.add_bool(f"{a}.expert_weights_norm", True)
    wr.add_float32(f"{a}.expert_weights_scale", SCALE)
    for n, arr in w.items():
        wr.add_tensor(n, arr)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()

    f64 = {n: arr.astype(np.float64) for n, arr in w.items()}

    def rms(x, g):
        return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + EPS) * g

    # YaRN as ggml's rope computes it (rope_yarn, rope_yarn_corr_dims), with
    # DeepSeek's magnitudes (llama.cpp's yarn_attn_factor and the graph's
    # mscale): the rope's own magnitude cancels to 1, and q.k is scaled by
    # mscale^2 / sqrt(key_length_mla), mscale = 1 + 0.1 * mul * ln(factor).
    rope_gain, kq_scale = 1.0, 1.0 / np.sqrt(DQK)
    ramp = np.zeros(R // 2)
    freq_scale = 1.0
    if yarn:
        factor, n_orig, mul = yarn[0], yarn[1], yarn[2] / 0.1
        freq_scale = 1.0 / factor

        def corr_dim(beta):
            return R * np.log(n_orig / (beta * 2 * np.pi)) / (2 * np.log(BASE))
        lo, hi = max(0.0, np.floor(corr_dim(32.0))), min(R - 1.0, np.ceil(corr_dim(1.0)))
        y = (np.arange(R // 2) - lo) / max(0.001, hi - lo)
        ramp = 1.0 - np.minimum(1.0, np.maximum(0.0, y))  # ext_factor 1
        rope_attn = 1.0 / (1.0 + 0.1 * np.log(factor))   # llama.cpp's yarn_attn_factor
        rope_gain = rope_attn * (1.0 + 0.1 * np.log(1.0 / freq_scale))
        mscale = 1.0 * (1.0 + 0.1 * mul * np.log(factor))
        kq_scale = mscale * mscale / np.sqrt(DQK)

    def rope(x, pos):  # x [T, n, R]: normal (GPT-J) rope of consecutive pairs
        extrap = pos[:, None] * BASE ** (-2.0 * np.arange(R // 2) / R)
        th = freq_scale * extrap * (1 - ramp) + extrap * ramp
        c, s = rope_gain * np.cos(th)[:, None, :], rope_gain * np.sin(th)[:, None, :]
        o = np.empty_like(x)
        o[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
        o[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
        return o

    def silu(z):
        return z / (1.0 + np.exp(-z))

    changed = [0, 0]  # tokens whose experts the groups changed, tokens routed

    def route(sel):  # expert ids for one token's selection values
        changed[1] += 1
        plain = np.argsort(-sel, kind="stable")[:K]
        if groups > 1:
            per = n_expert // groups
            score = [np.sort(sel[g * per:(g + 1) * per])[-2:].sum() for g in range(groups)]
            masked = np.full(n_expert, -np.inf)
            for g in np.argsort(-np.array(score), kind="stable")[:groups_used]:
                masked[g * per:(g + 1) * per] = sel[g * per:(g + 1) * per]
            sel = masked
        ids = np.argsort(-sel, kind="stable")[:K]
        changed[0] += int(set(ids) != set(plain))
        return ids

    def forward(toks):
        T = len(toks)
        pos = np.arange(T, dtype=np.float64)
        x = f64["token_embd.weight"][toks]
        scale = kq_scale
        causal = np.triu(np.ones((T, T), dtype=bool), 1)
        for il in range(L):
            p = f"blk.{il}."
            h = rms(x, f64[p + "attn_norm.weight"])
            if LQ > 0:
                qa = rms(h @ f64[p + "attn_q_a.weight"].T, f64[p + "attn_q_a_norm.weight"])
                q = (qa @ f64[p + "attn_q_b.weight"].T).reshape(T, H, DQK)
            else:
                q = (h @ f64[p + "attn_q.weight"].T).reshape(T, H, DQK)
            q_nope, q_rope = q[..., :DN], rope(q[..., DN:], pos)
            kv = h @ f64[p + "attn_kv_a_mqa.weight"].T
            c = rms(kv[:, :DL], f64[p + "attn_kv_a_norm.weight"])
            k_rope = rope(kv[:, None, DL:], pos)[:, 0]
            o = np.zeros((T, H, DV))
            for hh in range(H):  # expanded: this head's keys and values from c
                k_nope = c @ f64[p + "attn_k_b.weight"][hh]      # [T, Dn]
                v = c @ f64[p + "attn_v_b.weight"][hh].T          # [T, Dv]
                s = (q_nope[:, hh] @ k_nope.T + q_rope[:, hh] @ k_rope.T) * scale
                s[causal] = -np.inf
                a_ = np.exp(s - s.max(-1, keepdims=True))
                o[:, hh] = (a_ / a_.sum(-1, keepdims=True)) @ v
            x = x + o.reshape(T, H * DV) @ f64[p + "attn_output.weight"].T
            h = rms(x, f64[p + "ffn_norm.weight"])
            if il < n_dense:
                f = (silu(h @ f64[p + "ffn_gate.weight"].T) * (h @ f64[p + "ffn_up.weight"].T)) \
                    @ f64[p + "ffn_down.weight"].T
            else:
                probs = 1.0 / (1.0 + np.exp(-(h @ f64[p + "ffn_gate_inp.weight"].T)))
                sel = probs + f64[p + "exp_probs_b.bias"]
                f = np.zeros_like(h)
                for ti in range(T):
                    ids = route(sel[ti])
                    wt = probs[ti, ids]
                    wt = wt / max(wt.sum(), 6.103515625e-5) * SCALE
                    for e, we in zip(ids, wt):
                        g = f64[p + "ffn_gate_exps.weight"][e] @ h[ti]
                        u = f64[p + "ffn_up_exps.weight"][e] @ h[ti]
                        f[ti] += we * (f64[p + "ffn_down_exps.weight"][e] @ (silu(g) * u))
                f += (silu(h @ f64[p + "ffn_gate_shexp.weight"].T) * (h @ f64[p + "ffn_up_shexp.weight"].T)) \
                    @ f64[p + "ffn_down_shexp.weight"].T
            x = x + f
        return rms(x, f64["output_norm.weight"]) @ f64["output.weight"].T

    prompt = [int(v) for v in rng.integers(0, V, PROMPT_LEN)]
    prefill = forward(prompt)
    toks, decode, gen = list(prompt), [], []
    nxt = int(np.argmax(prefill[-1]))
    for _ in range(GEN_LEN):
        gen.append(nxt)
        toks.append(nxt)
        row = forward(toks)[-1]
        decode.append(row)
        nxt = int(np.argmax(row))
    np.save(out / f"{name}.prefill.npy", prefill.astype(np.float32))
    np.save(out / f"{name}.decode.npy", np.array(decode, dtype=np.float32))
    (out / f"{name}.prompt_tokens.txt").write_text(",".join(map(str, prompt)) + "\n")
    (out / f"{name}.gen_tokens.txt").write_text(",".join(map(str, gen)) + "\n")
    print(f"{name}: greedy {gen}; the groups changed the experts of {changed[0]} of "
          f"{changed[1]} routed tokens")


FILES = [  # name, n_expert, groups, groups used, seed, options
    ("moe", 4, 0, 0, 1, {}),
    ("groups", 8, 4, 2, 2, {}),
    ("lite", 4, 0, 0, 3, {"lite": True}),
    ("yarn", 4, 0, 0, 4, {"yarn": (4.0, 32, 0.0707)}),
]


def check_with_llama(build):
    """Runs llama.cpp (scripts/llama_archs_logits.c against the build's
    libllama) on F32-matrix twins of the files (same seeds: llama.cpp's CPU
    mul_mat rounds activations to F16 for F16 weights, which would hide
    differences below ~1e-3) and compares its logits and greedy tokens with
    this forward's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gen_llama_archs import build_driver
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        driver = build_driver(build, work)
        for name, x, g, gu, seed, opts in FILES:
            make(name, x, g, gu, seed, out=work, matrices=np.float32, **opts)
            prompt = (work / f"{name}.prompt_tokens.txt").read_text().strip().split(",")
            subprocess.run([str(driver), str(work / f"{name}.gguf"), str(GEN_LEN),
                            str(work / f"ll-{name}")] + prompt, check=True,
                           stdout=subprocess.DEVNULL)
            worst, scale = 0.0, 0.0
            for part in ("prefill", "decode"):
                ref = np.load(work / f"{name}.{part}.npy")
                got = np.fromfile(work / f"ll-{name}.{part}.f32", dtype=np.float32).reshape(ref.shape)
                worst, scale = max(worst, float(np.abs(ref - got).max())), max(scale, float(np.abs(ref).max()))
            same = (work / f"ll-{name}.gen.txt").read_text().strip() == \
                (work / f"{name}.gen_tokens.txt").read_text().strip()
            if name in LLAMACPP_KEPT:  # the twin and llama.cpp's own logits, as test data
                LLAMACPP_OUT.mkdir(parents=True, exist_ok=True)
                base = LLAMACPP_OUT / f"{name}-f32"
                shutil.copyfile(work / f"{name}.gguf", f"{base}.gguf")
                shutil.copyfile(work / f"{name}.prompt_tokens.txt", f"{base}.prompt_tokens.txt")
                shutil.copyfile(work / f"ll-{name}.gen.txt", f"{base}.gen_tokens.txt")
                for part in ("prefill", "decode"):
                    got = np.fromfile(work / f"ll-{name}.{part}.f32", dtype=np.float32)
                    np.save(f"{base}.{part}.npy", got.reshape(-1, V))
            print(f"{name} (F32 matrices) vs llama.cpp: max |d logit| {worst:.3g} of {scale:.3g}, "
                  f"greedy {'the same' if same else 'DIFFERENT'}")
            ok = ok and same and worst <= 1e-4 * scale
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-bin", type=Path,
                    help="also check this forward against llama.cpp (a build dir with bin/libllama.so)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, x, g, gu, seed, opts in FILES:
        make(name, x, g, gu, seed, **opts)
    if args.llama_bin is not None and not check_with_llama(args.llama_bin.resolve()):
        sys.exit("llama.cpp disagrees with the expanded form")


if __name__ == "__main__":
    main()
