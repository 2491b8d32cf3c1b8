#!/usr/bin/env python3
"""What big request bodies cost `folio serve` before admission.

Starts `folio serve` on a model, sends N concurrent POST /tokenize bodies of
SIZE MiB each and, while they are being prepared, small /tokenize requests
one after another. Prints the server's peak RSS (VmHWM) before and after, the
growth per big body, and the small requests' latencies (median, max) next to
their latency on the idle server.

Usage: prep_memory_bench.py --folio build/folio --model models/X.gguf
       [--n 4] [--mib 10] [--no-punctuation] [-- EXTRA SERVE FLAGS]
Standard library only.
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "server"))
import serve_process  # noqa: E402


def hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def post(base, path, body, timeout=300):
    req = urllib.request.Request(base + path, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    except (urllib.error.URLError, ConnectionError):
        # Refused from its Content-Length (413) while urllib was still
        # sending the body: the server closed the connection.
        status = "closed"
    return status, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--mib", type=float, default=10)
    ap.add_argument("--no-punctuation", action="store_true",
                    help="words and spaces only: no place where the tokenizer may cut a long "
                         "text into chunks (the worst case for its memory)")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    proc, base = serve_process.start(
        [a.folio, "--log-level", "warn", "serve", "-m", a.model, "--port", "0", "-t", "2",
         "-c", "1024", "--max-seqs", "2"] + a.extra, timeout=60)
    try:
        small = json.dumps({"content": "hello world"}).encode()
        idle = [post(base, "/tokenize", small)[1] for _ in range(20)]
        sentence = ("the quick brown fox jumps over the lazy dog " if a.no_punctuation
                    else "The quick brown fox jumps over the lazy dog. ")
        text = sentence * int(a.mib * (1 << 20) / len(sentence))
        big = json.dumps({"content": text}).encode()
        del text
        base_kib = hwm_kib(proc.pid)
        results = []
        threads = [threading.Thread(target=lambda: results.append(post(base, "/tokenize", big)))
                   for _ in range(a.n)]
        for t in threads:
            t.start()
        loaded = []
        time.sleep(0.2)
        while any(t.is_alive() for t in threads):
            status, s = post(base, "/tokenize", small)
            loaded.append(s)
        for t in threads:
            t.join()
        peak_kib = hwm_kib(proc.pid)
        print(f"big bodies: {a.n} x {len(big) / (1 << 20):.1f} MiB, statuses "
              f"{sorted(str(r[0]) for r in results)}, slowest {max(r[1] for r in results):.2f} s")
        print(f"peak RSS: {base_kib / 1024:.0f} MiB idle -> {peak_kib / 1024:.0f} MiB "
              f"(+{(peak_kib - base_kib) / 1024 / a.n:.0f} MiB per big body)")
        during = (f"median {statistics.median(loaded) * 1000:.1f} ms, max "
                  f"{max(loaded) * 1000:.1f} ms over {len(loaded)} requests" if loaded
                  else "none sent (the big ones ended first)")
        print(f"small /tokenize: idle median {statistics.median(idle) * 1000:.1f} ms; during the "
              f"big ones {during}")
    finally:
        serve_process.stop(proc)


if __name__ == "__main__":
    main()
