#!/usr/bin/env python3
"""Serving benchmark in the manner of `vllm bench serve`.

Drives an OpenAI-compatible server (/v1/completions, streaming) with N
concurrent clients and reports request and token throughput, time to first
token (TTFT), inter-token latency (ITL) and end-to-end latency percentiles.
With --shared-prefix every prompt starts with the same long prefix and the
report adds the prefix-cache hit rate read from folio's /metrics.

It can start the servers itself, so folio and llama.cpp see exactly the same
load in one run:

  # folio with decode-first on and off, then llama.cpp's server (from the
  # llama-cpp-python package) on the same file, same threads:
  python3 bench/serve_bench.py --model-file models/gemma-3-270m-q4_k_m.gguf \
      --folio build/folio --folio-variants default,no-decode-first \
      --llamacpp-python /tmp/venvtest/bin/python -t 2 \
      --clients 8 --requests 32 --max-tokens 64

  # folio on a GPU against llama.cpp's own llama-server (built from source,
  # default settings; 8 slots, each with the full context):
  python3 bench/serve_bench.py --model-file M.gguf --folio build/folio \
      --folio-args="--device vulkan" --llama-server /path/to/llama-server \
      --llama-server-args="-ngl 99" --clients 8 --requests 64

  # against a server that is already running:
  python3 bench/serve_bench.py --base-url http://127.0.0.1:8080 --clients 8

Only the Python standard library is used (http.client + threads).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

WORDS = (
    "the of and to in is was that for on as with by he at from his an were are "
    "which this be or has had not first one their its new after who they have her "
    "she two been other when there all during into school time may years more most "
    "only over city some world would where later up such used many can state about "
    "national out known university united then made season river house family "
    "music team number series war company called part because under north game "
    "against while film played south group area well around three album early "
    "history took including both released second well public life county people"
).split()


@dataclass
class RequestResult:
    ok: bool = False
    error: str = ""
    prompt_words: int = 0
    ttft: float = 0.0
    itls: list = field(default_factory=list)
    e2e: float = 0.0
    output_tokens: int = 0
    prompt_tokens: int = 0


def make_prompts(n: int, min_words: int, max_words: int, shared_prefix_words: int, seed: int):
    rng = random.Random(seed)
    prefix = ""
    if shared_prefix_words > 0:
        prefix = " ".join(rng.choice(WORDS) for _ in range(shared_prefix_words)) + "\n\n"
    prompts = []
    for i in range(n):
        k = rng.randint(min_words, max_words)
        body = " ".join(rng.choice(WORDS) for _ in range(k))
        prompts.append(f"{prefix}Request {i}: {body}")
    return prompts


def stream_completion(base: urllib.parse.ParseResult, model: str, prompt: str, max_tokens: int,
                      api_key: str | None, timeout: float) -> RequestResult:
    res = RequestResult(prompt_words=len(prompt.split()))
    body = json.dumps({
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    })
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    start = time.perf_counter()
    last = None
    usage_tokens = 0
    chunk_tokens = 0
    try:
        conn = http.client.HTTPConnection(base.hostname, base.port or 80, timeout=timeout)
        conn.request("POST", "/v1/completions", body=body, headers=headers)
        resp = conn.getresponse()
        if resp.status != 200:
            res.error = f"HTTP {resp.status}: {resp.read()[:200]!r}"
            return res
        buf = b""
        done = False
        while not done:
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        done = True
                        break
                    obj = json.loads(data)
                    usage = obj.get("usage")
                    if usage:
                        usage_tokens = usage.get("completion_tokens") or 0
                        res.prompt_tokens = usage.get("prompt_tokens") or 0
                    choices = obj.get("choices") or []
                    if choices and choices[0].get("text"):
                        now = time.perf_counter()
                        if last is None:
                            res.ttft = now - start
                        else:
                            res.itls.append(now - last)
                        last = now
                        chunk_tokens += 1
        conn.close()
        # Servers that send usage report tokens exactly; otherwise count the
        # streamed chunks (one token each for folio and llama.cpp).
        res.output_tokens = max(usage_tokens, chunk_tokens)
    except Exception as e:  # network errors are results, not crashes
        res.error = f"{type(e).__name__}: {e}"
        return res
    res.e2e = time.perf_counter() - start
    res.ok = last is not None
    if not res.ok:
        res.error = "no tokens streamed"
    return res


def pct(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def scrape_metrics(base: urllib.parse.ParseResult) -> dict:
    try:
        conn = http.client.HTTPConnection(base.hostname, base.port or 80, timeout=10)
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
    except Exception:
        return {}
    if resp.status != 200:
        return {}
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m and (m.group(2) is None or "le=" not in m.group(2)):
            try:
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
            except ValueError:
                pass
    return out


def metric(m: dict, *needles):
    for k, v in m.items():
        if all(n in k for n in needles):
            return v
    return None


class Hostile:
    """--slow-clients: connections that trickle a request head (one header
    line every 2 s, never finishing it), and a prober timing GET /health
    every 100 ms while the load runs."""

    def __init__(self, base: urllib.parse.ParseResult, slow_clients: int):
        self.base = base
        self.socks = []
        for _ in range(slow_clients):
            try:
                s = socket.create_connection((base.hostname, base.port), timeout=5)
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
                self.socks.append(s)
            except OSError:
                break
        self.health_ms = []
        self.health_failed = 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._trickle, daemon=True),
                        threading.Thread(target=self._probe, daemon=True)]
        for t in self.threads:
            t.start()

    def _trickle(self):
        line = 0
        while not self.stop.wait(2.0):
            for s in self.socks:
                try:
                    s.sendall(f"X-Slow-{line}: 1\r\n".encode())
                except OSError:
                    pass
            line += 1

    def _probe(self):
        while not self.stop.wait(0.1):
            t0 = time.perf_counter()
            try:
                conn = http.client.HTTPConnection(self.base.hostname, self.base.port, timeout=60)
                conn.request("GET", "/health")
                ok = conn.getresponse().status == 200
                conn.close()
            except OSError:
                ok = False
            if ok:
                self.health_ms.append((time.perf_counter() - t0) * 1e3)
            else:
                self.health_failed += 1

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        for s in self.socks:
            s.close()
        return {"slow_clients": len(self.socks), "health_p50_ms": pct(self.health_ms, 0.5),
                "health_max_ms": max(self.health_ms) if self.health_ms else float("nan"),
                "health_failed": self.health_failed}


def run_load(base_url: str, model: str, prompts, clients: int, max_tokens: int,
             api_key: str | None, timeout: float, slow_clients: int = 0):
    base = urllib.parse.urlparse(base_url)
    before = scrape_metrics(base)
    hostile = Hostile(base, slow_clients) if slow_clients > 0 else None
    results = [None] * len(prompts)
    next_idx = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next_idx[0]
                if i >= len(prompts):
                    return
                next_idx[0] += 1
            results[i] = stream_completion(base, model, prompts[i], max_tokens, api_key, timeout)
            sys.stderr.write(".")
            sys.stderr.flush()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    sys.stderr.write("\n")
    if hostile:
        before["hostile"] = hostile.finish()
    after = scrape_metrics(base)
    return results, wall, before, after


def summarize(name, results, wall, before, after):
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.output_tokens for r in ok)
    itls = [x for r in ok for x in r.itls]
    row = {
        "server": name,
        "requests": len(results),
        "failed": len(results) - len(ok),
        "wall_s": wall,
        "req_per_s": len(ok) / wall if wall > 0 else 0.0,
        "out_tok_per_s": out_tokens / wall if wall > 0 else 0.0,
        "ttft_p50_ms": pct([r.ttft for r in ok], 0.5) * 1e3,
        "ttft_p90_ms": pct([r.ttft for r in ok], 0.9) * 1e3,
        "ttft_p99_ms": pct([r.ttft for r in ok], 0.99) * 1e3,
        "itl_p50_ms": pct(itls, 0.5) * 1e3,
        "itl_p90_ms": pct(itls, 0.9) * 1e3,
        "itl_p99_ms": pct(itls, 0.99) * 1e3,
        "e2e_p50_s": pct([r.e2e for r in ok], 0.5),
        "e2e_p90_s": pct([r.e2e for r in ok], 0.9),
    }
    q0 = metric(before, "prefix", "quer")
    q1 = metric(after, "prefix", "quer")
    h0 = metric(before, "prefix", "hit")
    h1 = metric(after, "prefix", "hit")
    if None not in (q0, q1, h0, h1) and q1 > q0:
        row["prefix_hit_rate"] = (h1 - h0) / (q1 - q0)
    row.update(before.get("hostile", {}))
    errors = sorted({r.error for r in results if not r.ok})
    if errors:
        row["errors"] = errors[:3]
    return row


def wait_ready(base_url: str, proc: subprocess.Popen, timeout: float = 300):
    base = urllib.parse.urlparse(base_url)
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        for path in ("/health", "/v1/models"):
            try:
                conn = http.client.HTTPConnection(base.hostname, base.port, timeout=2)
                conn.request("GET", path)
                r = conn.getresponse()
                r.read()
                conn.close()
                if r.status == 200:
                    return
            except Exception:
                pass
        time.sleep(0.5)
    raise RuntimeError("server did not become ready")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_folio(args, variant):
    port = free_port()
    cmd = [args.folio, "serve", "-m", args.model_file, "--host", "127.0.0.1", "--port", str(port),
           "-t", str(args.threads), "--max-seqs", str(args.clients), "-c", str(args.ctx_size),
           "--alias", args.model]
    if variant == "no-decode-first":
        cmd.append("--no-decode-first")
    elif variant != "default":
        cmd += variant.split()
    for a in args.folio_args:  # "--device vulkan" as one argument, or several
        cmd += a.split()
    log_path = f"/tmp/serve_bench_folio_{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}", " ".join(cmd), log_path


LLAMACPP_LAUNCHER = """
import sys
import llama_cpp.llama_cpp as low
_default = low.llama_model_default_params
def _plain():
    p = _default()
    p.use_extra_bufts = False
    return p
low.llama_model_default_params = _plain
from llama_cpp.server.__main__ import main
sys.argv[0] = "llama_cpp.server"
main()
"""


def start_llamacpp(args):
    port = free_port()
    # llama-cpp-python's server: one llama_context, requests served one at a
    # time. Its AMX / repacked weight path crashes on this machine (as in
    # bench/compare_llamacpp.py), so it runs on llama.cpp's plain CPU path.
    cmd = [args.llamacpp_python, "-c", LLAMACPP_LAUNCHER, "--model", args.model_file,
           "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(args.threads),
           "--n_threads_batch", str(args.threads), "--n_ctx", str(args.ctx_size)]
    log_path = f"/tmp/serve_bench_llamacpp_{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}", " ".join(cmd), log_path


def start_llama_server(args):
    port = free_port()
    # One slot per client, each holding the full context (llama-server splits
    # -c between its slots).
    cmd = [args.llama_server, "-m", args.model_file, "--host", "127.0.0.1", "--port", str(port),
           "-t", str(args.threads), "-np", str(args.clients),
           "-c", str(args.ctx_size * args.clients), "-a", args.model]
    cmd += args.llama_server_args.split()
    log_path = f"/tmp/serve_bench_llama_server_{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}", " ".join(cmd), log_path


def kv_lines(log_path):
    """The server log's lines about KV cache memory (both servers print one)."""
    try:
        with open(log_path, errors="replace") as f:
            return [l.strip() for l in f if re.search(r"KV (cache|self size|buffer)", l)][:4]
    except OSError:
        return []


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def print_table(rows):
    cols = ["server", "requests", "failed", "req_per_s", "out_tok_per_s", "ttft_p50_ms",
            "ttft_p90_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms", "e2e_p50_s",
            "prefix_hit_rate"]
    if any("slow_clients" in r for r in rows):
        cols += ["slow_clients", "health_p50_ms", "health_max_ms", "health_failed"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "")
            cells.append(f"{v:.3g}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", help="benchmark a running server instead of starting one")
    ap.add_argument("--model", default="default", help="model name sent in requests")
    ap.add_argument("--api-key")
    ap.add_argument("--model-file", help="GGUF file for servers this script starts")
    ap.add_argument("--folio", help="folio binary: start `folio serve` per variant")
    ap.add_argument("--folio-variants", default="default",
                    help="comma list: default, no-decode-first, or extra flags")
    ap.add_argument("--folio-args", nargs="*", default=[], help="extra flags for every folio run")
    ap.add_argument("--llamacpp-python", help="python with llama-cpp-python[server]: start its server")
    ap.add_argument("--llama-server", help="llama.cpp's llama-server binary: start it (-np CLIENTS)")
    ap.add_argument("--llama-server-args", default="", help="extra flags for llama-server, e.g. '-ngl 99'")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-c", "--ctx-size", type=int, default=4096)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--min-words", type=int, default=16)
    ap.add_argument("--max-words", type=int, default=256)
    ap.add_argument("--shared-prefix", type=int, default=0, help="words of a common prefix")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", action="store_true", help="also print one JSON line per run")
    ap.add_argument("--slow-clients", type=int, default=0,
                    help="also hold this many connections trickling a request head (a header "
                         "line every 2 s) and time GET /health every 100 ms during the load")
    args = ap.parse_args()

    prompts = make_prompts(args.requests, args.min_words, args.max_words, args.shared_prefix, args.seed)
    print(f"# workload: {args.requests} requests, {args.clients} concurrent clients, prompts "
          f"{args.min_words}-{args.max_words} words + {args.shared_prefix}-word shared prefix, "
          f"max_tokens {args.max_tokens}, greedy, streaming; threads {args.threads}; "
          f"load before: {os.getloadavg()[0]:.2f}")
    rows = []
    if args.base_url:
        res, wall, b, a = run_load(args.base_url, args.model, prompts, args.clients, args.max_tokens,
                                   args.api_key, args.timeout, args.slow_clients)
        rows.append(summarize(args.base_url, res, wall, b, a))
    def measure(label, started, log_name):
        """Waits for a started server, warms it up, runs the load, stops it."""
        proc, url, cmd, log_path = started
        try:
            print(f"# {label}: {cmd}")
            wait_ready(url, proc)
            run_load(url, args.model, prompts[:1], 1, 4, args.api_key, args.timeout)  # warmup
            res, wall, b, a = run_load(url, args.model, prompts, args.clients, args.max_tokens,
                                       args.api_key, args.timeout, args.slow_clients)
            rows.append(summarize(label, res, wall, b, a))
        finally:
            stop(proc)
        for line in kv_lines(log_path):
            print(f"#   {log_name} log: {line}")

    if args.folio:
        for variant in args.folio_variants.split(","):
            measure(f"folio {variant}", start_folio(args, variant), "folio")
    if args.llamacpp_python:
        measure("llama.cpp (python server)", start_llamacpp(args), "llama-cpp-python")
    if args.llama_server:
        measure("llama.cpp (llama-server)", start_llama_server(args), "llama-server")
    print_table(rows)
    if len(rows) >= 2 and rows[-1]["server"].startswith("llama.cpp"):
        ref = rows[-1]
        for r in rows[:-1]:
            if ref["out_tok_per_s"] > 0:
                print(f"# {r['server']} / llama.cpp output tok/s: "
                      f"{r['out_tok_per_s'] / ref['out_tok_per_s']:.2f}x")
    for r in rows:
        if r.get("errors"):
            print(f"# {r['server']} errors: {r['errors']}")
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0 if all(r["failed"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
