#!/usr/bin/env python3
"""Files written by llama.cpp's own model saver, and llama.cpp's logits on them.

For every architecture folio runs, this script
  1. runs llama.cpp's `test-llama-archs -a ARCH -s SEED -o DIR` (its
     tests/test-llama-archs.cpp: a 2-layer (nemotron_h: 3) random-weight
     model, n_embd 256, n_vocab 128, no tokenizer, with that program's
     hyperparameters, built by llama_model_init_from_user and written by
     llama_model_save_to_file), which writes ARCH-dense.gguf and / or
     ARCH-moe.gguf;
  2. drops from each file the tensors STRIPPED names (with ggml's own GGUF
     writer, every key/value verbatim): the per-tensor `.scale` /
     `.input_scale` multipliers llama.cpp loads for every architecture
     (NVFP4's second-level scales) and the biases of the gated FFN
     (`ffn_gate/up/down.bias`), which the saver writes for llama, mistral3
     and granitehybrid; folio implements neither and refuses files that
     hold them (model/loader.cc), so the files test the keys, not those
     tensors; and stores the matrices (2-D `.weight` tensors other than
     norms, convolutions and ssm_a / ssm_d) as F16, which halves the files
     (--f32 keeps the saver's F32); for the architectures in AMPLIFIED it
     first lifts the weights to working magnitudes (the driver's --gain:
     norms 1 + w, other weights 8 w) and, where listed, repeats the blocks
     up to a depth (--layers N) that reaches the family's feature;
  3. builds scripts/llama_archs_logits.c against the same llama.cpp build
     (its public llama.h API; libllama.so from the build dir) and runs it on
     each rewritten file: CPU, F32 K/V cache, flash attention off, 2
     threads, n_ctx 128;
     a fixed prompt of PROMPT_LEN token ids (drawn with Python's
     random.Random(SEED)) as one batch, then GEN_LEN greedy tokens one at a
     time;
  4. writes tests/model/refdata/llama-archs/NAME.gguf beside
     NAME.prompt_tokens.txt, NAME.gen_tokens.txt, NAME.prefill.npy and
     NAME.decode.npy (the format of tests/model/refdata's other cases, read by
     tests/model/llamacpp_parity.cc), NAME = ARCH-dense or ARCH-moe, and
     for the architectures in VARIANTS also a copy with more tensors
     dropped (falcon-h1-dense-no-ssm-norm: an optional tensor absent).

Architectures test-llama-archs writes no file for are reported and skipped
(gemma3: llama_model_saver_supports_arch is false; gemma4: "ISWA KV cache
initialization needs more fixture params"; bert and nomic-bert: "TODO vocab").

Usage (from the repository root; not run by the tests):
  python3 scripts/gen_llama_archs.py --llama-bin /path/to/llama.cpp/build
  python3 scripts/gen_llama_archs.py --llama-bin BUILD --arch glm4moe --out /tmp/x
Needs: Python 3 (no packages), a C compiler, a llama.cpp build configured
with -DLLAMA_BUILD_TESTS=ON (bin/test-llama-archs, bin/libllama.so).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "tests" / "model" / "refdata" / "llama-archs"
DRIVER = REPO / "scripts" / "llama_archs_logits.c"

# folio's architectures (src/model/arch/*.cc), by llama.cpp's names.
FOLIO_ARCHS = [
    "llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "gemma4", "qwen3next",
    "qwen35", "qwen35moe", "gpt-oss", "bert", "nomic-bert", "granitehybrid",
    "phi3", "mistral3", "glm4moe", "lfm2", "lfm2moe", "nemotron_h",
    "nemotron_h_moe", "gemma2", "smollm3", "qwen2moe", "seed_oss", "exaone4",
    "deepseek2", "hunyuan-dense", "ernie4_5", "ernie4_5-moe", "qwen3vl",
    "minimax-m2", "falcon-h1",
]
# Architectures whose files get the driver's --gain (weights lifted from the
# saver's std 0.01 to working magnitudes: at 0.01 the logits are ~0.01 and
# soft-capping, sliding windows, shared-expert gates or a missing rope move
# them by less than the tests' 1e-3 tolerance) and extra driver options.
AMPLIFIED = {
    # attention scores of ~2 do not reach a cap of 50: a cap of 2 does
    "gemma2": ["--set-f32", "gemma2.attn_logit_softcapping", "2"],
    "smollm3": ["--layers", "4"],  # its no-rope layer is the 4th
    "qwen2moe": [],
    "seed_oss": [],
    "exaone4": [],
    # latent attention: at the saver's magnitudes the rope key and the
    # per-head k_b / v_b products move the logits by less than the tolerance
    "deepseek2": [],
    # q/k norms after the rope: at the saver's norm weights (0.01) the scores
    # are ~0 and neither the rope nor the norms' order shows
    "hunyuan-dense": [],
    "ernie4_5": [],
    "ernie4_5-moe": [],
    # sections of 8 per 32-pair period: pairs 24-31 and 56-63 of the 64 take
    # the e position (0 for text) and do not rotate; the saver's [32, 32, 32,
    # 32] rotates every pair, as neox rope does
    "qwen3vl": ["--set-i32s", "qwen3vl.rope.dimension_sections", "8,8,8,8"],
    # partial rope as in the real model (64 of 128 dims; the saver ropes all)
    "minimax-m2": ["--set-u32", "minimax-m2.rope.dimension_count", "64"],
    # Mamba-2 beside attention in every layer: at the saver's magnitudes
    # (logits ~0.008) the attention's share of the sum hardly shows
    "falcon-h1": [],
}
# Files kept in F32: llama.cpp's CPU mul_mat_id rounds the activations to F16
# for F16 expert weights (ggml's vec_dot_type) and folio keeps them F32, which
# at working magnitudes differs by ~0.2% of the largest logit; with F32
# experts neither rounds.
# deepseek2 too: with F16 matrices llama.cpp's rounding of the activations
# (every product, the per-head k_b / v_b ones included) moves its logits by
# ~0.25% of the largest at working magnitudes; with F32 folio matches it
# within 2e-5.
# falcon-h1 too: its Mamba-2 scan carries the F16-rounded activations of
# ssm_in through every later token, 8e-4 of a largest logit of 5.5 (in F32
# folio matches within 5e-6).
F32_ARCHS = {"qwen2moe", "deepseek2", "ernie4_5-moe", "minimax-m2", "falcon-h1"}
# Extra files cut from a written one: (suffix of the new NAME, tensors also
# dropped). falcon-h1's ssm_norm is optional (llama.cpp then skips the
# Mamba-2 mixer's grouped norm); the saver always writes it.
VARIANTS = {
    "falcon-h1": [("-no-ssm-norm", ["ssm_norm.weight"])],
}
SEED = 42
PROMPT_LEN = 20
GEN_LEN = 12
N_VOCAB = 128  # test-llama-archs' vocabulary
STRIPPED = [".scale", ".input_scale", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"]


def source_dir(build: Path) -> Path:
    """The llama.cpp checkout a build dir was configured from (CMakeCache.txt)."""
    cache = build / "CMakeCache.txt"
    for line in cache.read_text().splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:INTERNAL="):
            return Path(line.split("=", 1)[1])
    sys.exit(f"{cache}: no CMAKE_HOME_DIRECTORY")


def build_driver(build: Path, work: Path) -> Path:
    src = source_dir(build)
    exe = work / "llama_archs_logits"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-std=c11", "-o", str(exe), str(DRIVER),
                    f"-I{src / 'include'}", f"-I{src / 'ggml' / 'include'}",
                    f"-L{build / 'bin'}", "-lllama", "-lggml", "-lggml-base",
                    f"-Wl,-rpath,{build / 'bin'}"], check=True)
    return exe


def write_npy(path: Path, rows: int, cols: int, raw: bytes) -> None:
    assert len(raw) == rows * cols * 4, (path, len(raw), rows, cols)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(raw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-bin", required=True, type=Path,
                    help="llama.cpp build dir (bin/test-llama-archs, bin/libllama.so)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--arch", action="append", help="only these architectures")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--f32", action="store_true",
                    help="keep the saver's F32 matrices (default: F16, half the size)")
    args = ap.parse_args()

    build = args.llama_bin.resolve()
    saver = build / "bin" / "test-llama-archs"
    if not saver.exists():
        sys.exit(f"{saver} missing: build llama.cpp with -DLLAMA_BUILD_TESTS=ON")
    archs = args.arch or FOLIO_ARCHS
    rng = random.Random(args.seed)
    prompt = [rng.randrange(N_VOCAB) for _ in range(PROMPT_LEN)]
    args.out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        driver = build_driver(build, work)
        skipped = []
        for arch in archs:
            files_dir = work / arch
            files_dir.mkdir()
            subprocess.run([str(saver), "-a", arch, "-s", str(args.seed), "-o", str(files_dir)],
                           check=True, stdout=subprocess.DEVNULL)
            written = sorted(files_dir.glob("*.gguf"))
            if not written:
                skipped.append(arch)
                continue
            cuts = [(gguf, gguf.stem, []) for gguf in written]  # ARCH-dense / ARCH-moe
            cuts += [(gguf, gguf.stem + suffix, more) for gguf in written
                     for suffix, more in VARIANTS.get(arch, [])]
            for gguf, name, more in cuts:
                prefix = work / name
                stripped = work / f"{name}.gguf"
                mode = "--strip" if args.f32 or arch in F32_ARCHS else "--strip-f16"
                extra = ["--gain"] + AMPLIFIED[arch] if arch in AMPLIFIED else []
                subprocess.run([str(driver), mode, str(gguf), str(stripped)] + extra + STRIPPED
                               + more, check=True)
                gguf = stripped
                r = subprocess.run([str(driver), str(gguf), str(GEN_LEN), str(prefix)]
                                   + [str(t) for t in prompt],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{name}: llama.cpp failed: {r.stderr.strip()}", file=sys.stderr)
                    skipped.append(name)
                    continue
                n_vocab = int(r.stdout.strip())
                shutil.copyfile(gguf, args.out / f"{name}.gguf")
                (args.out / f"{name}.prompt_tokens.txt").write_text(
                    ",".join(map(str, prompt)) + "\n")
                gen = Path(f"{prefix}.gen.txt").read_text()
                (args.out / f"{name}.gen_tokens.txt").write_text(gen)
                write_npy(args.out / f"{name}.prefill.npy", PROMPT_LEN, n_vocab,
                          Path(f"{prefix}.prefill.f32").read_bytes())
                write_npy(args.out / f"{name}.decode.npy", GEN_LEN, n_vocab,
                          Path(f"{prefix}.decode.f32").read_bytes())
                print(f"{name}: {gguf.stat().st_size} bytes, greedy {gen.strip()}")
        if skipped:
            print("no file or no reference from llama.cpp for: " + ", ".join(skipped))


if __name__ == "__main__":
    main()
