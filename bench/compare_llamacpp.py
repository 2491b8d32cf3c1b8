#!/usr/bin/env python3
"""Side-by-side decode/prefill speed: folio vs llama.cpp on the same GGUF file.

Runs both engines on the same model, prompt, thread count and number of
generated tokens, in one run, and prints tokens/s and folio/llama.cpp
ratios. llama.cpp comes from llama-cpp-python (scripts/setup.sh --oracles),
on its plain CPU path (no AMX/repacked buffers: they crash here);
folio is the built binary. Greedy, F16 KV cache for both.

  .venv/bin/python bench/compare_llamacpp.py -m models/gemma-3-270m-q4_k_m.gguf -t 2 -n 64 -r 3
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

PROMPT = ("The printing press, invented by Johannes Gutenberg around 1440, changed how "
          "knowledge spread across Europe. Before it, books were copied by hand, which made "
          "them rare and expensive. Describe the consequences in detail:")


def run_folio(binary, model, threads, n_gen, prompt):
    out = subprocess.run([binary, "run", "-m", model, "-p", prompt, "-n", str(n_gen), "--temp", "0",
                          "--ignore-eos", "-t", str(threads), "--kv-type", "f16"],
                         capture_output=True, text=True, check=True)
    m = re.search(r"prompt (\d+) tokens in [\d.]+ s \(([\d.]+) tokens/s\); generated (\d+) tokens "
                  r"in [\d.]+ s \(([\d.]+) tokens/s\)", out.stderr)
    if not m:
        sys.exit("folio: could not parse speeds from:\n" + out.stderr)
    return int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))


def run_llamacpp(llm, n_gen, prompt):
    import numpy as np
    toks = llm.tokenize(prompt.encode(), add_bos=True)
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(toks)
    t1 = time.perf_counter()
    for _ in range(n_gen):
        llm.eval([int(np.argmax(llm.scores[llm.n_tokens - 1]))])  # greedy, like folio --temp 0
    t2 = time.perf_counter()
    return len(toks), len(toks) / (t1 - t0), n_gen, n_gen / (t2 - t1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("-n", "--n-gen", type=int, default=64)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--folio", default="build/folio")
    args = ap.parse_args()

    import llama_cpp
    import llama_cpp.llama_cpp as llama_low
    # llama.cpp's AMX / repacked buffer path crashes on this machine's AMX
    # (see tests/model/refdata/README.md): compare against its plain CPU path.
    default_params = llama_low.llama_model_default_params

    def plain_cpu_params():
        p = default_params()
        p.use_extra_bufts = False
        return p

    llama_low.llama_model_default_params = plain_cpu_params
    # F16 KV (type 1) like folio's default; no flash attention.
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=2048, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, logits_all=True, verbose=False,
                          type_k=1, type_v=1, flash_attn=False)
    rows = {"folio": [], "llama.cpp": []}
    for _ in range(args.repetitions):
        rows["folio"].append(run_folio(args.folio, args.model, args.threads, args.n_gen, PROMPT))
        rows["llama.cpp"].append(run_llamacpp(llm, args.n_gen, PROMPT))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"model {os.path.basename(args.model)}, {args.threads} threads, {args.n_gen} generated, "
          f"{args.repetitions} runs, load average {load:.1f}")
    print(f"{'engine':<10} {'prompt tok':>10} {'pp tok/s':>10} {'tg tok/s':>10}")
    med = {}
    for name, rs in rows.items():
        pp = statistics.median(r[1] for r in rs)
        tg = statistics.median(r[3] for r in rs)
        med[name] = (pp, tg)
        print(f"{name:<10} {rs[0][0]:>10} {pp:>10.1f} {tg:>10.1f}")
    print(f"{'ratio':<10} {'':>10} {med['folio'][0] / med['llama.cpp'][0]:>9.2f}x "
          f"{med['folio'][1] / med['llama.cpp'][1]:>9.2f}x")


if __name__ == "__main__":
    main()
