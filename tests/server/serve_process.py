"""Starts a `folio serve` process for the server tests and waits until it answers.

start(cmd, timeout) runs cmd (a `folio ... serve ... --port 0` command line),
reads the port from its "listening on" log line, polls /health until it
answers 200 (503 while loading) and returns (process, base URL). The caller
stops it with stop(process).
"""

import re
import subprocess
import time
import urllib.error
import urllib.request


def start(cmd, timeout=30.0):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    port = None
    while port is None and time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
    if port is None:
        proc.kill()
        raise RuntimeError("folio serve did not report its port")
    base = f"http://127.0.0.1:{port}"
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base
        except urllib.error.HTTPError as e:
            if e.code != 503:
                raise
        except urllib.error.URLError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("folio serve did not become ready")


def stop(proc, timeout=10.0):
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
    proc.stderr.close()
