#!/usr/bin/env python3
"""folio replicas behind a real router: routing policies compared on a
multi-turn, shared-prefix chat workload (a benchmark, not a test).

For each policy the script starts N fresh `folio serve` replicas on loopback
ports (each publishing KV-cache events with --kv-events) and vllm-router
(PyPI `vllm-router`, `scripts/setup.sh --router` installs it into .venv) in
front of them, then runs the workload through the router's OpenAI API:
U users talk at once, each for T turns; a user's conversation starts with a
long system prompt of its own after a preamble every user shares, and every
turn resends the whole conversation, so a turn reuses the previous turn's
KV blocks only on the replica that served it. Reported per policy: the
replicas' prefix-cache hit rate (vllm:prefix_cache_hits_total /
vllm:prefix_cache_queries_total summed over replicas), time to first token
(p50, p99, streamed), completion tokens per second and requests per second
over the run's wall time, and how the requests spread over the replicas.

Policies: round_robin; cache_aware (the router's own prefix tree over the
token ids it gets from each replica's /v1/chat/completions/render);
kv_aware (the router indexes the replicas' KV events, --kv-event-source).

--fault: with kv_aware, a replica is killed (SIGKILL) while it streams an
answer; the client must get an error or the end of its stream within 10 s
(never hang), later requests must succeed through the other replica, and
after the replica restarts on the same ports (its event stream starting
over at sequence 0) requests must be routed to it again.

Usage: scripts/bench_router.py --folio build/folio \\
         --model models/SmolLM2-135M-Instruct-Q4_1.gguf [--replicas 2] [--users 8] \\
         [--turns 4] [--threads 1] [--policies round_robin,cache_aware,kv_aware] [--fault]
Prints a Markdown table (and the CPU) for BENCHMARKS.md.
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "server"))
import serve_process  # noqa: E402

WORDS = ("river stone cloud garden lamp window paper orange silver market bridge winter "
         "engine forest candle harbor pencil meadow rocket violin").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def metrics(base):
    out = {}
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
            if m and "le=" not in (m.group(2) or ""):
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


class Replica:
    def __init__(self, args, port=None, events_port=None):
        self.args = args
        self.port = port or free_port()
        self.events_port = events_port or free_port()
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def events(self):
        return f"tcp://127.0.0.1:{self.events_port}"

    def start(self):
        cmd = [self.args.folio, "--log-level", "warn", "serve", "-m", self.args.model,
               "--port", str(self.port), "--alias", "model", "-t", str(self.args.threads),
               "--max-seqs", "4", "-c", str(self.args.ctx), "--kv-events", self.events]
        self.proc, base = serve_process.start(cmd, timeout=120)
        assert base == self.url, (base, self.url)

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()
        self.proc = None

    def stop(self):
        if self.proc is not None:
            serve_process.stop(self.proc)
            self.proc = None


class Router:
    def __init__(self, args, policy, replicas):
        self.port = free_port()
        cmd = [args.router, "--host", "127.0.0.1", "--port", str(self.port),
               "--worker-urls", *[r.url for r in replicas], "--policy", policy,
               "--worker-startup-check-interval", "1", "--health-check-interval-secs", "1",
               "--prometheus-port", str(free_port()), "--log-level", "warning"]
        if policy == "kv_aware":
            for r in replicas:
                cmd += ["--kv-event-source", f"{r.url}={r.events}"]
            cmd += ["--kv-event-block-size", "16", "--kv-event-model", "folio-bench"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("vllm-router did not become healthy")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def stream_chat(url, messages, max_tokens, timeout=300):
    """Streams a chat completion; returns (ttft, text, completion tokens)."""
    body = {"model": "model", "messages": messages, "max_tokens": max_tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.time()
    ttft, text, tokens = None, "", 0
    with urllib.request.urlopen(req, timeout=timeout) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for c in chunk.get("choices", []):
                piece = c.get("delta", {}).get("content") or ""
                if piece and ttft is None:
                    ttft = time.time() - t0
                text += piece
    return (ttft if ttft is not None else time.time() - t0), text, tokens


def conversations(args):
    rng = random.Random(args.seed)
    preamble = "You are a helpful assistant of the folio routing benchmark. " + " ".join(
        rng.choice(WORDS) for _ in range(args.preamble_words))
    users = []
    for u in range(args.users):
        persona = f"User {u} profile: " + " ".join(rng.choice(WORDS)
                                                   for _ in range(args.user_words))
        questions = [f"Question {t} from user {u}: tell me about the "
                     f"{rng.choice(WORDS)} and the {rng.choice(WORDS)}." for t in range(args.turns)]
        users.append((preamble + "\n" + persona, questions))
    return users


def run_workload(url, args):
    def user(conv):
        system, questions = conv
        messages = [{"role": "system", "content": system}]
        out = []
        for q in questions:
            messages.append({"role": "user", "content": q})
            ttft, text, tokens = stream_chat(url, messages, args.max_tokens)
            messages.append({"role": "assistant", "content": text})
            out.append((ttft, tokens))
        return out

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.users) as pool:
        results = [r for u in pool.map(user, conversations(args)) for r in u]
    return results, time.time() - t0


def percentile(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def bench_policy(args, policy):
    replicas = [Replica(args) for _ in range(args.replicas)]
    router = None
    try:
        for r in replicas:
            r.start()
        router = Router(args, policy, replicas)
        results, wall = run_workload(router.url, args)
        per = [metrics(r.url) for r in replicas]
    finally:
        if router is not None:
            router.stop()
        for r in replicas:
            r.stop()
    hits = sum(m.get("vllm:prefix_cache_hits_total", 0) for m in per)
    queries = sum(m.get("vllm:prefix_cache_queries_total", 0) for m in per)
    ttfts = [t for t, _ in results]
    tokens = sum(n for _, n in results)
    spread = "/".join(str(int(m.get("vllm:request_success_total", 0))) for m in per)
    return {"policy": policy, "requests": len(results), "hit_rate": hits / max(queries, 1),
            "ttft_p50": percentile(ttfts, 50), "ttft_p99": percentile(ttfts, 99),
            "tok_s": tokens / wall, "req_s": len(results) / wall, "spread": spread}


def fault_check(args):
    """Kills a replica mid-stream behind kv_aware; see the module comment."""
    replicas = [Replica(args) for _ in range(args.replicas)]
    router = None
    report = []
    try:
        for r in replicas:
            r.start()
        router = Router(args, "kv_aware", replicas)
        system = "You are a storyteller. " + " ".join(WORDS * 3)
        msgs = [{"role": "system", "content": system},
                {"role": "user", "content": "Tell me a very long story."}]
        stream_chat(router.url, msgs, 4)  # warms one replica's cache with this prefix
        victim = max(replicas, key=lambda r: metrics(r.url).get("vllm:prefix_cache_queries_total", 0))
        body = {"model": "model", "messages": msgs, "max_tokens": 400, "temperature": 0,
                "stream": True, "ignore_eos": True}
        req = urllib.request.Request(router.url + "/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        got, done, finish = 0, False, None
        t_kill = None
        outcome = None
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                for raw in resp:
                    if raw.startswith(b"data: {"):
                        got += 1
                        for c in json.loads(raw[6:]).get("choices", []):
                            finish = c.get("finish_reason") or finish
                    done |= raw.strip() == b"data: [DONE]"
                    if got == 5 and t_kill is None:
                        victim.kill()
                        t_kill = time.time()
        except Exception as e:  # noqa: BLE001  (any clean error is the point)
            outcome = f"client error: {type(e).__name__}: {str(e)[:80]}"
        if outcome is None:
            outcome = ("the stream completed ([DONE])" if done else
                       f"the stream was cut: no [DONE], finish_reason {finish}")
        waited = time.time() - t_kill if t_kill else float("nan")
        report.append(f"- killed the replica streaming the answer after {got} chunks: "
                      f"{outcome}, {waited:.2f} s after the kill (bound: 10 s)")
        print(report[-1], file=sys.stderr)
        if not (waited < 10):
            raise SystemExit("fault check: the client waited too long")
        ok = 0
        for i in range(4):
            ttft, text, n = stream_chat(router.url, [{"role": "user", "content": f"Hello {i}"}], 4)
            ok += n > 0
        report.append(f"- with the replica down: {ok} of 4 new requests answered")
        print(report[-1], file=sys.stderr)
        if ok != 4:
            raise SystemExit("fault check: requests failed with one replica down")
        victim.start()  # same HTTP and event ports: its event stream starts over at 0
        time.sleep(3)  # two health checks (1 s) bring it back
        before = metrics(victim.url).get("vllm:request_success_total", 0)
        # At once: kv_aware breaks equal costs by worker order, so only load
        # (requests in flight) spreads requests without a cached prefix.
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda i: stream_chat(
                router.url, [{"role": "user", "content": f"Again {i}: " + " ".join(WORDS)}], 16),
                range(6)))
        after = metrics(victim.url).get("vllm:request_success_total", 0)
        report.append(f"- after restarting it on the same ports: it served {after - before:.0f} "
                      f"of 6 new concurrent requests")
        if after - before == 0:
            raise SystemExit("fault check: the restarted replica got no requests")
    finally:
        if router is not None:
            router.stop()
        for r in replicas:
            r.stop()
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--router", default=os.path.join(HERE, "..", ".venv", "bin", "vllm-router"))
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="threads per replica")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--preamble-words", type=int, default=150)
    ap.add_argument("--user-words", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--policies", default="round_robin,cache_aware,kv_aware")
    ap.add_argument("--fault", action="store_true", help="also run the fault check")
    args = ap.parse_args()
    if not os.path.exists(args.router):
        sys.exit(f"bench_router: {args.router} not found; run scripts/setup.sh --router")

    rows = []
    for policy in args.policies.split(","):
        print(f"bench_router: {policy} ...", file=sys.stderr, flush=True)
        rows.append(bench_policy(args, policy))
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; {args.replicas} replicas x "
          f"{args.threads} thread(s), {args.users} users x {args.turns} turns, "
          f"{args.max_tokens} tokens a turn, model {os.path.basename(args.model)}")
    print()
    print("| policy | requests | prefix-cache hit rate | TTFT p50 | TTFT p99 | completion tok/s "
          "| req/s | requests per replica |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['policy']} | {r['requests']} | {100 * r['hit_rate']:.1f}% | "
              f"{1000 * r['ttft_p50']:.0f} ms | {1000 * r['ttft_p99']:.0f} ms | "
              f"{r['tok_s']:.1f} | {r['req_s']:.2f} | {r['spread']} |")
    if args.fault:
        print()
        print("Fault check (kv_aware):")
        for line in fault_check(args):
            print(line)


if __name__ == "__main__":
    main()
