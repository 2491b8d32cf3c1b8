#!/usr/bin/env python3
"""`folio serve --kv-events` read by a subscriber as routers built for vLLM
read it: pyzmq SUB + msgpack (PyPI), independent of folio's encoder.

A random workload (shared prompt stems, concurrent requests, a KV pool small
enough to evict) runs against a server publishing on a loopback endpoint. The
subscriber checks the framing (empty topic, 8-byte big-endian sequence numbers
from 0 without gaps, [ts, events, 0] batches of maps with exactly vLLM's
keys), replays the events (a hash is stored only when absent, removed only
when present, a parent is a hash stored before) and, once the server is idle,
compares: the replayed set has exactly as many hashes as the engine holds
(folio:kv_cache_blocks_cached, every block being free), and every stored
chain's tokens, followed from the root, begin like the ids
/v1/completions/render gives for some prompt of the workload (the render
endpoints and vLLM's /tokenize agree with a chat completion's usage). Then the server
is restarted on the same endpoint: its stream starts again at sequence 0 with
AllBlocksCleared, and the replay matches the new engine. A second server on
an endpoint in use fails with a clear message.

Usage: kv_events_test.py --folio build/folio --model MODEL.gguf
"""

import argparse
import concurrent.futures
import json
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

try:
    import msgpack
    import zmq
except ImportError:
    print("kv_events_test: the 'pyzmq' or 'msgpack' package is not installed; run "
          "scripts/setup.sh (it creates .venv with them) and configure the build again")
    sys.exit(1)

import serve_process  # noqa: E402  (beside this file)

BLOCK = 16
STORED_KEYS = ["type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
               "medium", "lora_name"]
REMOVED_KEYS = ["type", "block_hashes", "medium"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def metric(base, name):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


class Replay:
    """The router's view: hash -> (parent, tokens of the block)."""

    def __init__(self):
        self.blocks = {}
        self.ever = {}  # every hash stored, for parents and chains
        self.next_seq = 0
        self.batches = 0
        self.stored = self.removed = self.cleared = 0

    def apply(self, frames, fail):
        if len(frames) != 3:
            fail(f"{len(frames)} frames, expected 3")
        topic, seq, payload = frames
        if topic != b"":
            fail(f"topic {topic!r}")
        if len(seq) != 8:
            fail("sequence number is not 8 bytes")
        seq = int.from_bytes(seq, "big")
        if seq == 0 and self.next_seq != 0:  # a restarted publisher
            self.next_seq = 0
        if seq != self.next_seq:
            fail(f"sequence {seq}, expected {self.next_seq}")
        self.next_seq += 1
        self.batches += 1
        batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        if not (isinstance(batch, list) and len(batch) == 3):
            fail(f"batch is not [ts, events, rank]: {batch!r}")
        ts, events, rank = batch
        if not isinstance(ts, float) or abs(ts - time.time()) > 600:
            fail(f"timestamp {ts!r}")
        if rank != 0:
            fail(f"data_parallel_rank {rank!r}")
        if seq == 0 and (not events or events[0] != {"type": "AllBlocksCleared"}):
            fail(f"sequence 0 does not start with AllBlocksCleared: {events[:1]!r}")
        for e in events:
            if not isinstance(e, dict) or list(e)[:1] != ["type"]:
                fail(f"event is not a map with 'type' first: {e!r}")
            kind = e["type"]
            if kind == "BlockStored":
                if list(e) != STORED_KEYS:
                    fail(f"BlockStored keys {list(e)}")
                if e["block_size"] != BLOCK or e["medium"] != "GPU" or e["lora_id"] is not None:
                    fail(f"BlockStored fields {e!r}")
                hashes, tokens = e["block_hashes"], e["token_ids"]
                if not hashes or len(tokens) != BLOCK * len(hashes):
                    fail(f"{len(hashes)} hashes for {len(tokens)} tokens")
                parent = e["parent_block_hash"]
                if parent is not None and parent not in self.ever:
                    fail(f"parent {parent} was never stored")
                for i, h in enumerate(hashes):
                    if not isinstance(h, int) or not 0 <= h < 2**64:
                        fail(f"hash {h!r} is not a uint64")
                    if h in self.blocks:
                        fail(f"hash {h} stored twice")
                    self.blocks[h] = self.ever[h] = (parent, tokens[i * BLOCK:(i + 1) * BLOCK])
                    parent = h
                self.stored += 1
            elif kind == "BlockRemoved":
                if list(e) != REMOVED_KEYS or e["medium"] != "GPU":
                    fail(f"BlockRemoved {e!r}")
                for h in e["block_hashes"]:
                    if h not in self.blocks:
                        fail(f"hash {h} removed but not held")
                    del self.blocks[h]
                self.removed += 1
            elif kind == "AllBlocksCleared":
                if e != {"type": "AllBlocksCleared"}:
                    fail(f"AllBlocksCleared {e!r}")
                self.blocks.clear()
                self.cleared += 1
            else:
                fail(f"unknown event type {kind!r}")

    def prefix(self, h):
        out = []
        while h is not None:
            parent, tokens = self.ever[h]
            out[:0] = tokens
            h = parent
        return out


def wait_connected(monitor, fail, timeout=10.0):
    """Waits for the SUB's handshake with the (re)started publisher: PUB sends
    nothing to a subscriber before its subscription arrives (ZMQ's slow
    joiner), and a late one would see a gap."""
    from zmq.utils.monitor import recv_monitor_message
    deadline = time.time() + timeout
    while time.time() < deadline:
        if monitor.poll(100):
            if recv_monitor_message(monitor)["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                time.sleep(0.05)  # the subscription follows the handshake
                return
    fail("the subscriber did not connect to the publisher")


def drain(sub, replay, fail, quiet=0.5):
    """Reads until no message came for `quiet` seconds."""
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    while poller.poll(int(quiet * 1000)):
        replay.apply(sub.recv_multipart(), fail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", required=True)
    args = ap.parse_args()

    def fail(msg):
        print("kv_events_test: FAIL:", msg)
        sys.exit(1)

    endpoint = f"tcp://127.0.0.1:{free_port()}"
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.RECONNECT_IVL, 10)
    monitor = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    sub.connect(endpoint)  # before the server binds: ZMQ connects when it does
    cmd = [args.folio, "--log-level", "warn", "serve", "-m", args.model, "--port", "0",
           "--max-seqs", "4", "--kv-type", "f32", "-t", "2", "-c", "512", "--kv-blocks", "40",
           "--kv-events", endpoint]
    rng = random.Random(7)
    stems = [" ".join(rng.choice(["alpha", "beta", "gamma", "delta", "omega"]) for _ in range(40))
             for _ in range(3)]

    def workload(base, n):
        prompts = [rng.choice(stems) + " " + " ".join(str(rng.randint(0, 99))
                                                       for _ in range(rng.randint(0, 30)))
                   for _ in range(n)]
        lengths = [rng.randint(1, 24) for _ in range(n)]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda pl: post(base, "/v1/completions",
                                          {"prompt": pl[0], "max_tokens": pl[1],
                                           "temperature": 0}), zip(prompts, lengths)))
        rendered = post(base, "/v1/completions/render", {"prompt": prompts})
        if len(rendered) != n:
            fail(f"render gave {len(rendered)} lists for {n} prompts")
        return [r["token_ids"] for r in rendered]

    def check(base, replay, prompt_ids):
        deadline = time.time() + 10
        while metric(base, "folio:num_requests_running") or metric(base, "folio:kv_cache_blocks_used"):
            if time.time() > deadline:
                fail("the server did not go idle")
            time.sleep(0.05)
        drain(sub, replay, fail)
        cached = metric(base, "folio:kv_cache_blocks_cached")
        if len(replay.blocks) != cached:
            fail(f"replayed {len(replay.blocks)} hashes, the engine holds {cached:.0f}")
        for h in replay.blocks:
            p = replay.prefix(h)
            if not any(ids[:len(p)] == p[:len(ids)] for ids in prompt_ids):
                fail(f"stored chain of {len(p)} tokens begins like no prompt")

    replay = Replay()
    proc, base = serve_process.start(cmd)
    try:
        wait_connected(monitor, fail)
        ids = workload(base, 40)
        check(base, replay, ids)
        # What routers ask every replica for: the ids generation is fed.
        msgs = [{"role": "user", "content": stems[0][:60]}]
        chat_ids = post(base, "/v1/chat/completions/render", {"messages": msgs})["token_ids"]
        tok = post(base, "/tokenize", {"messages": msgs})
        usage = post(base, "/v1/chat/completions",
                     {"messages": msgs, "max_tokens": 1, "temperature": 0})["usage"]
        if tok["tokens"] != chat_ids or tok["count"] != len(chat_ids) or \
                usage["prompt_tokens"] != len(chat_ids):
            fail(f"chat render {len(chat_ids)} ids, /tokenize {tok['count']}, "
                 f"usage {usage['prompt_tokens']}")
        if post(base, "/tokenize", {"prompt": stems[1]})["tokens"] != \
                post(base, "/v1/completions/render", {"prompt": stems[1]})[0]["token_ids"]:
            fail("/tokenize and /v1/completions/render disagree")
        # Bad requests to them are clear errors (and the server keeps serving).
        for path, body, code in [("/v1/completions/render", {"prompt": "x", "model": "nope"}, 404),
                                 ("/v1/chat/completions/render", {"messages": "x"}, 400),
                                 ("/v1/completions/render", {"prompt": 5}, 400),
                                 ("/tokenize", {"prompt": ["a", "b"]}, 400),
                                 ("/tokenize", {"messages": [{"role": 1}]}, 400)]:
            try:
                post(base, path, body)
                fail(f"{path} {body} was answered 200")
            except urllib.error.HTTPError as e:
                err = json.loads(e.read())
                if e.code != code or not err.get("error", {}).get("message"):
                    fail(f"{path} {body}: {e.code} {err}")
        # A second server cannot bind the endpoint: it says so and exits.
        clash = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if clash.returncode == 0 or "--kv-events: cannot bind" not in clash.stderr:
            fail(f"a second server on the same endpoint: {clash.returncode} {clash.stderr!r}")
    finally:
        serve_process.stop(proc)
    print(f"first server: {replay.batches} batches, {replay.stored} stored, {replay.removed} "
          f"removed events, {len(replay.blocks)} blocks held at the end")
    if replay.removed == 0 or replay.stored == 0:
        fail("the workload neither stored nor evicted")
    drain(sub, replay, fail)

    # The same endpoint, a new engine: its stream starts over.
    batches = replay.batches
    proc, base = serve_process.start(cmd)
    try:
        wait_connected(monitor, fail)
        ids = workload(base, 6)
        check(base, replay, ids)
    finally:
        serve_process.stop(proc)
    if replay.batches == batches or replay.cleared < 2:
        fail("the restarted server's stream did not start with AllBlocksCleared")
    print(f"restarted server: {replay.batches - batches} batches, {len(replay.blocks)} blocks held")
    sub.disable_monitor()
    monitor.close()
    sub.close()
    ctx.term()
    print("kv_events_test: OK")


if __name__ == "__main__":
    main()
