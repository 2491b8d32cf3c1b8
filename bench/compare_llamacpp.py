#!/usr/bin/env python3
"""Side by side: folio and llama.cpp on the same GGUF files, same thread
count, same tests, in one run; prints tokens/s of both and folio/llama.cpp
ratios, the machine's memory bandwidth (STREAM triad) and decode speed as a
fraction of the bandwidth limit (bandwidth / weight bytes per token).

Tests (llama-bench / batched-bench definitions, both engines alike):
  pp512   prefill of 512 random tokens into an empty cache (ubatch 512),
          logits for the last token; tokens/s = 512 / time.
  tg128   one sequence: a 1-token prompt (untimed), then 128 single-token
          decodes with logits; tokens/s = 128 / time.
  tgNxS   S sequences (8 and 32), each after a 1-token prompt (one untimed
          batch), decode together: N batches of S tokens (one per sequence,
          every token with logits); tokens/s = S * N / time (batched-bench's
          S_TG). N = --batched-gen (default 32, to keep the run short).
Every test: one untimed warmup run (tg: 4 steps), then -r timed runs; mean ±
sample stddev. Random token ids (fixed seed), F16 KV cache on both.

folio runs `folio bench --json` (one process per model). llama.cpp runs in a
subprocess per model through llama-cpp-python's low-level API (llama_batch
with several sequence ids, like batched-bench); a crash there is reported,
not fatal. llama.cpp settings: its plain CPU weight path
(`use_extra_bufts = False`): on this machine its AMX / repack extra buffer
path segfaulted (SIGSEGV in ggml_backend_amx_mul_mat at the first decode,
tests/model/refdata/README.md); --llama-extra-bufts tries it anyway.
Flash attention "auto" (llama.cpp's default; folio always uses its paged
flash attention); one context per test with one KV stream per sequence
(llama.cpp's default, not kv_unified, like batched-bench without -kvu);
llama.cpp's own OpenMP wait policy by default (its threads spin between ops,
as folio's pool spins briefly before sleeping); on a machine shared with
other work, --omp-wait-policy passive keeps spinning threads from swinging
its decode speed.

  /tmp/venvtest/bin/python bench/compare_llamacpp.py -t 2 -r 3 \\
      -m models/random-llama-1b-f16.gguf,models/random-llama-1b-q8_0.gguf,\\
models/random-llama-1b-q4_0.gguf,models/random-llama-1b-q4_k_m.gguf,\\
models/gemma-3-270m-q4_k_m.gguf

With --llama-bin DIR, llama.cpp runs as users run it instead: its own
llama-bench (pp, tg) and llama-batched-bench (tgNxS: -npp 1 -ntg N -npl S,
S_TG) from a build at its default settings (native flags, OpenMP, runtime
repacking, flash attention off), outside this repository:

  python3 bench/compare_llamacpp.py -t 2 -r 3 --llama-bin ~/llama.cpp/build/bin \\
      -m /tmp/q4_0.gguf,/tmp/q8_0.gguf

Default models: those five (scripts/gen_random_llama.py writes the 1B files).
--json-out FILE also writes every measurement as JSON lines.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = [
    "models/random-llama-1b-f16.gguf",
    "models/random-llama-1b-q8_0.gguf",
    "models/random-llama-1b-q4_0.gguf",
    "models/random-llama-1b-q4_k_m.gguf",
    "models/gemma-3-270m-q4_k_m.gguf",
]
TG_WARMUP_STEPS = 4  # as folio bench's warmup
GGML_TYPE_F16 = 1


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def mean_sd(xs):
    m = statistics.fmean(xs)
    return m, (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def load_average():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


# --------------------------------------------------------------------------
# llama.cpp worker (runs in a subprocess: --llama-worker)


def llama_worker(a):
    import random
    import llama_cpp as L

    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.use_extra_bufts = a.llama_extra_bufts
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        sys.exit(f"llama.cpp: cannot load {a.model}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)

    tests = json.loads(a.tests)
    rng = random.Random(a.seed)
    state = {}

    def open_context(n_seqs, seq_len):
        """A context for one test: n_seqs KV streams (llama.cpp's default,
        not unified: each sequence attends over its own cells only, as in
        batched-bench without -kvu) of at least seq_len cells each."""
        cp = L.llama_context_default_params()
        per_seq = max(256, (seq_len + 1 + 255) // 256 * 256)
        cp.n_ctx = n_seqs * per_seq
        cp.n_batch = max(a.ubatch, n_seqs)
        cp.n_ubatch = a.ubatch
        cp.n_seq_max = n_seqs
        cp.n_threads = a.threads
        cp.n_threads_batch = a.threads
        cp.type_k = GGML_TYPE_F16
        cp.type_v = GGML_TYPE_F16
        cp.flash_attn_type = {"auto": -1, "0": 0, "1": 1}[a.llama_fa]
        cp.kv_unified = False
        cp.no_perf = True
        ctx = L.llama_init_from_model(model, cp)
        if not ctx:
            sys.exit("llama.cpp: cannot create a context")
        state["ctx"] = ctx
        state["mem"] = L.llama_get_memory(ctx)
        state["batch"] = L.llama_batch_init(max(a.ubatch, n_seqs), 0, n_seqs)

    def close_context():
        L.llama_batch_free(state["batch"])
        L.llama_free(state["ctx"])

    def fill(entries):
        """entries: (token, pos, seq, logits)"""
        batch = state["batch"]
        batch.n_tokens = len(entries)
        for i, (tok, pos, seq, want) in enumerate(entries):
            batch.token[i] = tok
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = 1 if want else 0

    def decode():
        rc = L.llama_decode(state["ctx"], state["batch"])
        if rc != 0:
            sys.exit(f"llama_decode returned {rc}")

    def run_pp(n):
        L.llama_memory_clear(state["mem"], True)
        toks = [rng.randrange(n_vocab) for _ in range(n)]
        t0 = time.perf_counter()
        for b in range(0, n, a.ubatch):
            e = min(n, b + a.ubatch)
            fill([(toks[i], i, 0, i == n - 1) for i in range(b, e)])
            decode()
        L.llama_synchronize(state["ctx"])
        return time.perf_counter() - t0

    def run_tg(n, s):
        L.llama_memory_clear(state["mem"], True)
        fill([(rng.randrange(n_vocab), 0, q, True) for q in range(s)])  # 1-token prompts
        decode()
        L.llama_synchronize(state["ctx"])
        toks = [[rng.randrange(n_vocab) for _ in range(s)] for _ in range(n)]
        t0 = time.perf_counter()
        for step in range(n):
            fill([(toks[step][q], 1 + step, q, True) for q in range(s)])
            decode()
        L.llama_synchronize(state["ctx"])
        return time.perf_counter() - t0

    for t in tests:
        if t["n_prompt"] > 0:
            open_context(1, t["n_prompt"])
        else:
            open_context(t["n_seqs"], 1 + t["n_gen"])
        if t["n_prompt"] > 0:
            once = lambda n=t["n_prompt"]: run_pp(n)  # noqa: E731
            tokens = t["n_prompt"]
            run_pp(t["n_prompt"])  # warmup
        else:
            once = lambda n=t["n_gen"], s=t["n_seqs"]: run_tg(n, s)  # noqa: E731
            tokens = t["n_gen"] * t["n_seqs"]
            run_tg(min(t["n_gen"], TG_WARMUP_STEPS), t["n_seqs"])  # warmup
        samples = []
        for r in range(a.reps):
            s = once()
            samples.append(tokens / s)
            log(f"  llama.cpp {t['test']} rep {r + 1}/{a.reps}: {samples[-1]:.2f} tokens/s")
        m, sd = mean_sd(samples)
        print(json.dumps({"test": t["test"], "n_prompt": t["n_prompt"], "n_gen": t["n_gen"],
                          "n_seqs": t["n_seqs"], "threads": a.threads, "tokens_per_s": m,
                          "stddev": sd, "samples_ts": samples}), flush=True)
        close_context()
    L.llama_model_free(model)


# --------------------------------------------------------------------------
# driver


def test_name(n_prompt, n_gen, n_seqs):
    if n_prompt > 0:
        return f"pp{n_prompt}"
    return f"tg{n_gen}" + (f"x{n_seqs}" if n_seqs > 1 else "")


def run_folio(a, model, args, what):
    cmd = [a.folio, "bench", "-m", model, "-t", str(a.threads), "-r", str(a.reps), "--json",
           "--kv-type", "f16", "--tg-prompt", "1", "-ub", str(a.ubatch)] + args
    log(f"folio {what}: {' '.join(cmd)}")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0:
        log(f"folio failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return rows, p.returncode


def run_llama(a, model, tests):
    env = dict(os.environ)
    if a.omp_wait_policy:
        env["OMP_WAIT_POLICY"] = a.omp_wait_policy
    cmd = [sys.executable, __file__, "--llama-worker", "--model", model, "-t", str(a.threads),
           "-r", str(a.reps), "--ubatch", str(a.ubatch), "--seed", str(a.seed),
           "--llama-fa", a.llama_fa, "--tests", json.dumps(tests)]
    if a.llama_extra_bufts:
        cmd.append("--llama-extra-bufts")
    log(f"llama.cpp: {os.path.basename(model)} (subprocess)")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in p.stderr.splitlines():
        if line.startswith("  llama.cpp"):
            log(line)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0:
        log(f"llama.cpp failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return rows, p.returncode


def run_llama_bins(a, model, tests):
    """llama.cpp's own benchmark programs from a build at its default
    settings (--llama-bin DIR): llama-bench for pp / tg (its JSON lines:
    avg_ts, stddev_ts over -r runs), llama-batched-bench for the batched
    tests (-npp 1 -ntg N -npl S: S_TG = S * N / decode time, one run per
    invocation, so it runs -r times)."""
    rows = []
    bench = os.path.join(a.llama_bin, "llama-bench")
    single = [t for t in tests if t["n_seqs"] == 1]
    for t in single:
        cmd = [bench, "-m", model, "-t", str(a.threads), "-r", str(a.reps), "-o", "jsonl",
               "-p", str(t["n_prompt"]), "-n", str(t["n_gen"]), "-ub", str(a.ubatch)]
        log("llama.cpp: " + " ".join(cmd))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            log(f"llama-bench failed ({p.returncode}):\n{p.stderr[-3000:]}")
            continue
        for line in p.stdout.splitlines():
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("n_prompt") == t["n_prompt"] and r.get("n_gen") == t["n_gen"]:
                rows.append({"test": t["test"], "tokens_per_s": r["avg_ts"], "stddev": r["stddev_ts"],
                             "samples_ts": r.get("samples_ts", [])})
    batched = os.path.join(a.llama_bin, "llama-batched-bench")
    for t in tests:
        if t["n_seqs"] == 1:
            continue
        s, n = t["n_seqs"], t["n_gen"]
        cmd = [batched, "-m", model, "-t", str(a.threads), "-c", str(s * (n + 1) + 64),
               "-b", "2048", "-ub", str(a.ubatch), "-npp", "1", "-ntg", str(n), "-npl", str(s),
               "--output-format", "jsonl"]
        log("llama.cpp: " + " ".join(cmd) + f"  (x{a.reps})")
        samples = []
        for _ in range(a.reps):
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("{")]
            if p.returncode != 0 or not lines:
                log(f"llama-batched-bench failed ({p.returncode}):\n{p.stderr[-3000:]}")
                break
            samples.append(json.loads(lines[-1])["speed_tg"])
        if samples:
            m, sd = mean_sd(samples)
            rows.append({"test": t["test"], "tokens_per_s": m, "stddev": sd, "samples_ts": samples})
    return rows, 0


def cpu_model():
    """The CPU's model name and its SIMD flags of interest (Linux /proc/cpuinfo)."""
    name, flags = platform.processor() or "?", set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name") and name in ("?", "", platform.processor()):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ["avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16",
              "amx_int8", "amx_bf16"]
    return f"{name} ({' '.join(f for f in wanted if f in flags) or 'no AVX2'})"


def target_for(test, model_type):
    """The target ratio for a test (issue 14's, for every weight type): prefill
    1.3x, single-sequence decode 1.1x, batched decode 1.3x."""
    if test.startswith("pp"):
        return 1.3
    if "x" in test:
        return 1.3
    return 1.1


def fmt_ts(r):
    return f"{r['tokens_per_s']:.2f} ± {r['stddev']:.2f}" if r else "failed"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--models", default=",".join(DEFAULT_MODELS), help="comma list of GGUF files")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("--seqs", default="8,32", help="batched decode sequence counts")
    ap.add_argument("--batched-gen", type=int, default=32, help="decode steps of the batched tests")
    ap.add_argument("--ubatch", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--folio", default=str(REPO / "build" / "folio"))
    ap.add_argument("--bw", type=float, default=0.0, help="bandwidth GB/s (default: measure the triad)")
    ap.add_argument("--mem-size", type=int, default=0, help="MiB per triad array (folio bench --mem-size)")
    ap.add_argument("--llama-fa", default="auto", choices=["auto", "0", "1"])
    ap.add_argument("--llama-extra-bufts", action="store_true",
                    help="let llama.cpp use its AMX / repack buffers (segfaulted here)")
    ap.add_argument("--omp-wait-policy", default="", help="OMP_WAIT_POLICY for llama.cpp ('' keeps its default)")
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--llama-bin", default="",
                    help="directory with llama-bench and llama-batched-bench (llama.cpp built from "
                         "source at its default settings): run those instead of llama-cpp-python")
    ap.add_argument("--json-out", default="")
    # worker mode
    ap.add_argument("--llama-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--tests", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.llama_worker:
        llama_worker(a)
        return

    models = [m for m in a.models.split(",") if m]
    models = [m if os.path.isabs(m) else str(REPO / m) for m in models]
    for m in models:
        if not os.path.exists(m):
            sys.exit(f"missing model {m} (scripts/gen_random_llama.py writes the random 1B files)")
    seqs = [int(s) for s in a.seqs.split(",") if s]

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_before = load_average()
    bw = a.bw
    mem_rows = []  # one triad per model: this VM's bandwidth drifts (host load) within a run

    def measure_triad():
        cmd = [a.folio, "bench", "--mem", "--json", "-t", str(a.threads)]
        if a.mem_size:
            cmd += ["--mem-size", str(a.mem_size)]
        log("triad: " + " ".join(cmd))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        # STREAM's ordinary pages give the limit; the huge-page triad (folio's
        # weight buffers' pages, where the kernel gives them) is reported beside it.
        row = next(r for r in rows if r.get("pages", "4k") == "4k")
        huge = [r for r in rows if r.get("pages") == "2m"]
        if huge:
            row["triad_huge_gbps"] = huge[0]["triad_gbps"]
        mem_rows.append(row)
        return row["triad_gbps"]

    bw_by_model = {}
    results = []  # (model, test, folio row, llama row)
    out_json = []
    for m in models:
        name = os.path.basename(m)
        if a.bw <= 0:
            bw = measure_triad()
        bw_by_model[name] = bw
        common = ["--bw", f"{bw:.4f}"]
        f_rows, _ = run_folio(a, m, ["-p", str(a.n_prompt), "-n", str(a.n_gen), "--seqs", "1"] + common,
                              "pp/tg")
        if seqs:
            more, _ = run_folio(a, m, ["-p", "0", "-n", str(a.batched_gen), "--seqs",
                                       ",".join(map(str, seqs))] + common, "batched")
            f_rows += more
        tests = [{"test": test_name(a.n_prompt, 0, 1), "n_prompt": a.n_prompt, "n_gen": 0, "n_seqs": 1},
                 {"test": test_name(0, a.n_gen, 1), "n_prompt": 0, "n_gen": a.n_gen, "n_seqs": 1}]
        tests += [{"test": test_name(0, a.batched_gen, s), "n_prompt": 0, "n_gen": a.batched_gen,
                   "n_seqs": s} for s in seqs]
        l_rows = []
        if a.llama_bin:
            l_rows, _ = run_llama_bins(a, m, tests)
        elif not a.skip_llama:
            l_rows, _ = run_llama(a, m, tests)
        f_by = {r["test"]: r for r in f_rows}
        l_by = {r["test"]: r for r in l_rows}
        for t in tests:
            results.append((name, t["test"], f_by.get(t["test"]), l_by.get(t["test"])))
            out_json.append({"model": name, "test": t["test"], "folio": f_by.get(t["test"]),
                             "llama.cpp": l_by.get(t["test"])})

    load_after = load_average()
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             stdout=subprocess.PIPE, text=True).stdout.strip()
    except OSError:
        rev = "?"
    if a.llama_bin:
        peer = (f"llama.cpp's llama-bench / llama-batched-bench from {a.llama_bin} "
                f"(its default settings)")
    else:
        try:
            import llama_cpp
            llama_version = llama_cpp.__version__
        except ImportError:
            llama_version = "not installed"
        peer = (f"llama.cpp via llama-cpp-python {llama_version} (use_extra_bufts="
                f"{a.llama_extra_bufts}, flash_attn={a.llama_fa}, "
                f"OMP_WAIT_POLICY={a.omp_wait_policy or 'default'})")

    built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(a.folio)))
    print(f"{started}, {platform.node()}, {cpu_model()}, {os.cpu_count()} CPUs, {a.threads} threads, "
          f"{a.reps} repetitions; folio {a.folio} built {built} (HEAD now {rev}), {peer}")
    print(f"load average before: {load_before}; after: {load_after}")
    if mem_rows:
        r0 = mem_rows[0]
        print(f"memory bandwidth, {a.threads} threads, measured before each model: triad "
              + ", ".join(f"{r['triad_gbps']:.2f}" for r in mem_rows)
              + f" GB/s (3 arrays of {r0['array_bytes'] >> 20} MiB, best of {r0['runs']} each)")
        if all("triad_huge_gbps" in r for r in mem_rows):
            print("the same arrays on huge pages: triad "
                  + ", ".join(f"{r['triad_huge_gbps']:.2f}" for r in mem_rows) + " GB/s")
    else:
        print(f"memory bandwidth (given): {bw:.2f} GB/s")
    print()
    print("| model | test | folio t/s | llama.cpp t/s | folio / llama.cpp | target | "
          "folio % BW | llama.cpp % BW |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, test, f, l in results:
        ratio = f["tokens_per_s"] / l["tokens_per_s"] if f and l and l["tokens_per_s"] > 0 else None
        target = target_for(test, f["model_type"] if f else "")
        mark = ""
        if target is not None:
            mark = f"{target:.1f}x" + ("" if ratio is None else (" met" if ratio >= target else " missed"))
        limit = f.get("bw_limit_tokens_per_s") if f else None
        fbw = f"{100 * f['tokens_per_s'] / limit:.0f}%" if limit else ""
        lbw = f"{100 * l['tokens_per_s'] / limit:.0f}%" if limit and l else ""
        print(f"| {name} | {test} | {fmt_ts(f)} | {fmt_ts(l)} | "
              f"{'' if ratio is None else f'{ratio:.2f}x'} | {mark} | {fbw} | {lbw} |")
    print()
    print("% BW: tokens/s / (n_seqs * triad bandwidth / weight bytes one decode step reads); "
          "weight bytes from folio's placement (token_embd: one row); the triad measured just "
          "before the model's runs.")
    for m in models:
        f = next((r for r in out_json if r["model"] == os.path.basename(m) and r["folio"]), None)
        if f:
            fr = f["folio"]
            print(f"- {os.path.basename(m)}: {fr['model_type']}, {fr['model_size'] / 2**30:.2f} GiB, "
                  f"decode reads {fr['decode_bytes'] / 2**20:.0f} MiB/token -> limit "
                  f"{bw_by_model[f['model']] * 1e9 / fr['decode_bytes']:.1f} tokens/s at "
                  f"{bw_by_model[f['model']]:.1f} GB/s")
            state = fr.get("state_bytes", 0)
            if state:
                # A recurrent layer's state moves too (read and written each
                # step, per sequence): the bytes a step moves, as % of the triad.
                bw_m = bw_by_model[f["model"]] * 1e9
                parts = []
                for name, test, fo, lo in results:
                    if name != f["model"] or not fo or fo.get("n_gen", 0) == 0:
                        continue
                    moved = fr["decode_bytes"] + fo["n_seqs"] * state
                    cell = f"{test} {100 * fo['tokens_per_s'] * moved / (fo['n_seqs'] * bw_m):.0f}%"
                    if lo:
                        cell += f" ({100 * lo['tokens_per_s'] * moved / (fo['n_seqs'] * bw_m):.0f}%)"
                    parts.append(cell)
                print(f"  and {state / 2**20:.1f} MiB of recurrent state per sequence (read and "
                      f"written back); counting it, folio (llama.cpp) at " + ", ".join(parts)
                      + " of the triad")
    if a.json_out:
        with open(a.json_out, "w") as fh:
            for r in out_json:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
