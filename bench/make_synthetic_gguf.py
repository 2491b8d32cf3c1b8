#!/usr/bin/env python3
"""Writes a llama-architecture GGUF with synthetic weights of a chosen shape
and weight type, for speed measurements where no real model file can be
brought (a lent GPU machine has no network, and what travels there is
small). The weights are valid blocks (finite scales, arbitrary quants), so
every kernel does its real work; the text such a model writes is noise.
It carries a sentencepiece-style ("llama") vocabulary: control tokens, the
256 byte-fallback tokens, the letters and common English words with a
leading "▁", then filler pieces up to --vocab, so servers (folio serve,
llama-server) tokenize text prompts as for a real model.
scripts/gen_random_llama.py makes statistically realistic weights and a real
tokenizer (numpy, gguf, llama.cpp's quantizer, refdata's vocabulary) for
side-by-side runs with llama.cpp; this one needs nothing but Python, for
machines that have nothing else.

  make_synthetic_gguf.py OUT.gguf --type q4_0 [--embd 2048 --layers 22
      --heads 32 --kv-heads 4 --ff 5632 --vocab 32000]   (TinyLlama 1.1B's shape)
  make_synthetic_gguf.py OUT.gguf --arch qwen35 --type q8_0   (a hybrid:
      gated DeltaNet layers and every 4th layer gated attention; defaults
      give a 0.6B model of Qwen3.5 0.8B's layer shapes with a 32k vocab)
  make_synthetic_gguf.py OUT.gguf --arch qwen3moe --type q8_0 [--experts 32
      --experts-used 8 --expert-ff 768]   (a MoE: Qwen3-30B-A3B's layer
      shapes with fewer experts and layers; the router's weights are random,
      so tokens spread over the experts as in a real model)

Standard library only (and serve_bench.py beside it, for its word list).
"""

import argparse
import os
import random
import struct
import sys

# ggml type id, block elements, block bytes, byte offsets of fp16 scales in a block.
TYPES = {
    "f32": (0, 1, 4, []),
    "f16": (1, 1, 2, []),
    "f32_random": (0, 1, 4, []),  # f32, uniform in [-1, 1) (a MoE router)
    "bf16": (30, 1, 2, []),
    "q4_0": (2, 32, 18, [0]),
    "q4_1": (3, 32, 20, [0, 2]),
    "q5_0": (6, 32, 22, [0]),
    "q5_1": (7, 32, 24, [0, 2]),
    "q8_0": (8, 32, 34, [0]),
    "q4_K": (12, 256, 144, [0, 2]),
    "q5_K": (13, 256, 176, [0, 2]),
    "q6_K": (14, 256, 210, [208]),
}
ALIGN = 32


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, value):
    if isinstance(value, str):
        return gguf_string(key) + struct.pack("<I", 8) + gguf_string(value)
    if isinstance(value, float):
        return gguf_string(key) + struct.pack("<If", 6, value)
    return gguf_string(key) + struct.pack("<II", 4, value)


def kv_array(key, elem_type, values):
    """An array KV: elem_type 8 (string), 6 (f32) or 5 (i32)."""
    out = gguf_string(key) + struct.pack("<IIQ", 9, elem_type, len(values))
    if elem_type == 8:
        return out + b"".join(gguf_string(v) for v in values)
    return out + b"".join(struct.pack("<f" if elem_type == 6 else "<i", v) for v in values)


# Whole-word pieces: the words bench/serve_bench.py builds its prompts from,
# so a prompt costs about one token per word, as with a real vocabulary.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench import WORDS  # noqa: E402


def vocab(n):
    """(tokens, scores, types) of a sentencepiece vocabulary of n pieces."""
    tokens, types = ["<unk>", "<s>", "</s>"], [2, 3, 3]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    seen = set(tokens)
    # Single characters, then every prefix of each "▁word": sentencepiece
    # merges adjacent pieces only into pieces the vocabulary holds, so a word
    # forms one merge at a time from the left.
    pieces = ["\u2581"] + [chr(c) for c in range(33, 127)]
    for w in WORDS:
        pieces += ["\u2581" + w[:i] for i in range(1, len(w) + 1)]
    for piece in pieces:
        if piece not in seen and len(tokens) < n:
            seen.add(piece)
            tokens.append(piece)
            types.append(1)
    i = 0
    while len(tokens) < n:
        tokens.append(f"\u2581w{i}")
        types.append(1)
        i += 1
    scores = [0.0] * 259 + [-float(i) for i in range(n - 259)]
    return tokens[:n], scores[:n], types[:n]


def block_chunk(type_name, rng):
    """About 1 MiB of whole blocks: random quants, small finite fp16 scales."""
    _, elems, nbytes, scales = TYPES[type_name]
    if type_name == "f32":
        return struct.pack("<f", 0.01) * (1 << 18)
    if type_name == "f32_random":
        return struct.pack(f"<{1 << 18}f", *(rng.uniform(-1.0, 1.0) for _ in range(1 << 18)))
    if type_name == "f16":
        return struct.pack("<H", 0x2000) * (1 << 19)
    if type_name == "bf16":  # magnitudes 2^-7 .. 2^-6, both signs
        return b"".join(struct.pack("<H", 0x3c00 | rng.randrange(0x80) | (rng.randrange(2) << 15))
                        for _ in range(1 << 19))
    n_blocks = (1 << 20) // nbytes
    data = bytearray(rng.randbytes(n_blocks * nbytes))
    for b in range(n_blocks):
        for off in scales:  # 0x1c00..0x1fff: scales around 2^-8, positive
            struct.pack_into("<H", data, b * nbytes + off, 0x1c00 | rng.randrange(0x400))
    return bytes(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--type", default="q4_0", choices=sorted(t for t in TYPES if t != "f32_random"))
    ap.add_argument("--embd", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=5632)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--arch", default="llama", choices=["llama", "qwen35", "qwen3moe"])
    ap.add_argument("--head-dim", type=int, default=0, help="qwen35: attention head dim")
    ap.add_argument("--ssm-state", type=int, default=128, help="qwen35: DeltaNet head dim S")
    ap.add_argument("--ssm-k-heads", type=int, default=16, help="qwen35: DeltaNet key heads")
    ap.add_argument("--ssm-v-heads", type=int, default=16, help="qwen35: DeltaNet value heads")
    ap.add_argument("--attn-interval", type=int, default=4, help="qwen35: every Nth layer attends")
    ap.add_argument("--experts", type=int, default=32, help="qwen3moe: experts per layer")
    ap.add_argument("--experts-used", type=int, default=8, help="qwen3moe: experts per token")
    ap.add_argument("--expert-ff", type=int, default=768, help="qwen3moe: an expert's FFN width")
    a = ap.parse_args()
    if a.arch == "qwen35":
        return write_qwen35(a, ap)
    if a.arch == "qwen3moe":
        return write_qwen3moe(a, ap)
    head_dim = a.embd // a.heads
    elems = TYPES[a.type][1]
    for name, n in (("--embd", a.embd), ("--ff", a.ff)):
        if n % elems:
            ap.error(f"{name} {n} is not a multiple of {a.type}'s block of {elems}")

    # (name, shape innermost first, type)
    tensors = [("token_embd.weight", [a.embd, a.vocab], a.type),
               ("output_norm.weight", [a.embd], "f32"),
               ("output.weight", [a.embd, a.vocab], a.type)]
    for i in range(a.layers):
        p = f"blk.{i}."
        tensors += [(p + "attn_norm.weight", [a.embd], "f32"),
                    (p + "attn_q.weight", [a.embd, a.embd], a.type),
                    (p + "attn_k.weight", [a.embd, head_dim * a.kv_heads], a.type),
                    (p + "attn_v.weight", [a.embd, head_dim * a.kv_heads], a.type),
                    (p + "attn_output.weight", [a.embd, a.embd], a.type),
                    (p + "ffn_norm.weight", [a.embd], "f32"),
                    (p + "ffn_gate.weight", [a.embd, a.ff], a.type),
                    (p + "ffn_up.weight", [a.embd, a.ff], a.type),
                    (p + "ffn_down.weight", [a.ff, a.embd], a.type)]

    meta = [kv("general.architecture", "llama"), kv("general.name", f"synthetic-llama-{a.type}"),
            kv("general.alignment", ALIGN), kv("llama.context_length", a.ctx),
            kv("llama.embedding_length", a.embd), kv("llama.block_count", a.layers),
            kv("llama.feed_forward_length", a.ff), kv("llama.attention.head_count", a.heads),
            kv("llama.attention.head_count_kv", a.kv_heads), kv("llama.vocab_size", a.vocab),
            kv("llama.rope.freq_base", 10000.0),
            kv("llama.attention.layer_norm_rms_epsilon", 1e-5)]
    meta += tokenizer_meta(a.vocab)

    write_file(a, tensors, meta, "llama")


def tokenizer_meta(n_vocab):
    tokens, scores, types = vocab(n_vocab)
    return [kv("tokenizer.ggml.model", "llama"), kv_array("tokenizer.ggml.tokens", 8, tokens),
            kv_array("tokenizer.ggml.scores", 6, scores),
            kv_array("tokenizer.ggml.token_type", 5, types),
            kv("tokenizer.ggml.bos_token_id", 1), kv("tokenizer.ggml.eos_token_id", 2),
            kv("tokenizer.ggml.unknown_token_id", 0)]


def write_qwen35(a, ap):
    """qwen35 (Qwen3.5): gated DeltaNet layers; layer i attends when (i + 1) %
    attn_interval == 0 (gated attention: q and its gate from one projection,
    q/k RMS norms, partial multi-section rope)."""
    if a.embd == 2048 and a.layers == 22 and a.heads == 32 and a.ff == 5632:  # untouched defaults
        a.embd, a.layers, a.heads, a.kv_heads, a.ff = 1024, 24, 8, 2, 3584
    hd = a.head_dim or 256
    s, hk, hv = a.ssm_state, a.ssm_k_heads, a.ssm_v_heads
    if hv % hk:
        ap.error("--ssm-v-heads must be a multiple of --ssm-k-heads")
    inner = hv * s
    conv = 2 * hk * s + inner
    elems = TYPES[a.type][1]
    for name, n in (("--embd", a.embd), ("--ff", a.ff), ("DeltaNet inner size", inner),
                    ("heads x head dim", a.heads * hd)):
        if n % elems:
            ap.error(f"{name} {n} is not a multiple of {a.type}'s block of {elems}")
    t = a.type
    tensors = [("token_embd.weight", [a.embd, a.vocab], t),
               ("output_norm.weight", [a.embd], "f32"),
               ("output.weight", [a.embd, a.vocab], t)]
    for i in range(a.layers):
        p = f"blk.{i}."
        tensors += [(p + "attn_norm.weight", [a.embd], "f32"),
                    (p + "post_attention_norm.weight", [a.embd], "f32")]
        if (i + 1) % a.attn_interval == 0:
            tensors += [(p + "attn_q.weight", [a.embd, 2 * a.heads * hd], t),
                        (p + "attn_k.weight", [a.embd, a.kv_heads * hd], t),
                        (p + "attn_v.weight", [a.embd, a.kv_heads * hd], t),
                        (p + "attn_output.weight", [a.heads * hd, a.embd], t),
                        (p + "attn_q_norm.weight", [hd], "f32"),
                        (p + "attn_k_norm.weight", [hd], "f32")]
        else:
            tensors += [(p + "attn_qkv.weight", [a.embd, conv], t),
                        (p + "attn_gate.weight", [a.embd, inner], t),
                        (p + "ssm_conv1d.weight", [4, conv], "f32"),
                        (p + "ssm_dt.bias", [hv], "f32"),
                        (p + "ssm_a", [hv], "f32"),
                        (p + "ssm_beta.weight", [a.embd, hv], t if hv % elems == 0 else "f32"),
                        (p + "ssm_alpha.weight", [a.embd, hv], t if hv % elems == 0 else "f32"),
                        (p + "ssm_norm.weight", [s], "f32"),
                        (p + "ssm_out.weight", [inner, a.embd], t)]
        tensors += [(p + "ffn_gate.weight", [a.embd, a.ff], t),
                    (p + "ffn_up.weight", [a.embd, a.ff], t),
                    (p + "ffn_down.weight", [a.ff, a.embd], t)]
    q = "qwen35."
    rot = hd // 4
    meta = [kv("general.architecture", "qwen35"), kv("general.name", f"synthetic-qwen35-{t}"),
            kv("general.alignment", ALIGN), kv(q + "context_length", a.ctx),
            kv(q + "embedding_length", a.embd), kv(q + "block_count", a.layers),
            kv(q + "feed_forward_length", a.ff), kv(q + "attention.head_count", a.heads),
            kv(q + "attention.head_count_kv", a.kv_heads), kv(q + "attention.key_length", hd),
            kv(q + "attention.value_length", hd), kv(q + "rope.dimension_count", rot),
            kv(q + "rope.freq_base", 10000000.0),
            kv(q + "attention.layer_norm_rms_epsilon", 1e-6), kv(q + "ssm.conv_kernel", 4),
            kv(q + "ssm.state_size", s), kv(q + "ssm.group_count", hk),
            kv(q + "ssm.time_step_rank", hv), kv(q + "ssm.inner_size", inner),
            kv(q + "full_attention_interval", a.attn_interval),
            kv_array(q + "rope.dimension_sections", 5,
                     [rot // 2 - 2 * (rot // 6), rot // 6, rot // 6, 0]),
            kv(q + "vocab_size", a.vocab)]
    write_file(a, tensors, meta + tokenizer_meta(a.vocab), "qwen35")


def write_qwen3moe(a, ap):
    """qwen3moe (Qwen3 MoE): attention with q/k RMS norms, then a routed FFN of
    --experts SwiGLU experts (--experts-used per token, softmax gating,
    weights renormalised), no shared expert."""
    if a.embd == 2048 and a.layers == 22 and a.heads == 32 and a.ff == 5632:  # untouched defaults
        a.layers = 8
    hd = a.head_dim or 128
    if not 0 < a.experts_used <= a.experts:
        ap.error("--experts-used must be between 1 and --experts")
    elems = TYPES[a.type][1]
    for name, n in (("--embd", a.embd), ("--expert-ff", a.expert_ff),
                    ("heads x head dim", a.heads * hd)):
        if n % elems:
            ap.error(f"{name} {n} is not a multiple of {a.type}'s block of {elems}")
    t, e, f = a.type, a.experts, a.expert_ff
    tensors = [("token_embd.weight", [a.embd, a.vocab], t),
               ("output_norm.weight", [a.embd], "f32"),
               ("output.weight", [a.embd, a.vocab], t)]
    for i in range(a.layers):
        p = f"blk.{i}."
        tensors += [(p + "attn_norm.weight", [a.embd], "f32"),
                    (p + "attn_q.weight", [a.embd, a.heads * hd], t),
                    (p + "attn_k.weight", [a.embd, a.kv_heads * hd], t),
                    (p + "attn_v.weight", [a.embd, a.kv_heads * hd], t),
                    (p + "attn_output.weight", [a.heads * hd, a.embd], t),
                    (p + "attn_q_norm.weight", [hd], "f32"),
                    (p + "attn_k_norm.weight", [hd], "f32"),
                    (p + "ffn_norm.weight", [a.embd], "f32"),
                    (p + "ffn_gate_inp.weight", [a.embd, e], "f32_random"),
                    (p + "ffn_gate_exps.weight", [a.embd, f, e], t),
                    (p + "ffn_up_exps.weight", [a.embd, f, e], t),
                    (p + "ffn_down_exps.weight", [f, a.embd, e], t)]
    q = "qwen3moe."
    meta = [kv("general.architecture", "qwen3moe"), kv("general.name", f"synthetic-qwen3moe-{t}"),
            kv("general.alignment", ALIGN), kv(q + "context_length", a.ctx),
            kv(q + "embedding_length", a.embd), kv(q + "block_count", a.layers),
            kv(q + "feed_forward_length", a.ff), kv(q + "attention.head_count", a.heads),
            kv(q + "attention.head_count_kv", a.kv_heads), kv(q + "attention.key_length", hd),
            kv(q + "attention.value_length", hd), kv(q + "rope.freq_base", 1000000.0),
            kv(q + "attention.layer_norm_rms_epsilon", 1e-6), kv(q + "expert_count", e),
            kv(q + "expert_used_count", a.experts_used), kv(q + "expert_feed_forward_length", f),
            kv(q + "vocab_size", a.vocab)]
    write_file(a, tensors, meta + tokenizer_meta(a.vocab), "qwen3moe")


def write_file(a, tensors, meta, arch):
    infos, sizes, offset = [], [], 0
    for name, shape, t in tensors:
        type_id, belems, bbytes, _ = TYPES[t]
        n = 1
        for d in shape:
            n *= d
        size = n // belems * bbytes
        infos.append(gguf_string(name) + struct.pack("<I", len(shape)) +
                     b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<IQ", type_id, offset))
        sizes.append((size, t))
        offset += (size + ALIGN - 1) // ALIGN * ALIGN

    rng = random.Random(a.seed)
    chunks = {}
    with open(a.out, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)))
        for m in meta:
            f.write(m)
        for i in infos:
            f.write(i)
        f.write(b"\0" * ((-f.tell()) % ALIGN))
        for size, t in sizes:
            chunk = chunks.setdefault(t, block_chunk(t, rng))
            left = size
            while left > 0:
                f.write(chunk[:min(left, len(chunk))])
                left -= min(left, len(chunk))
            f.write(b"\0" * ((-size) % ALIGN))
    print(f"{a.out}: {arch}, {a.layers} layers, n_embd {a.embd}, {a.type}, {offset / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
