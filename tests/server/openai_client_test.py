#!/usr/bin/env python3
"""`folio serve` driven by the official `openai` Python client (PyPI).

Starts `folio serve` on a free loopback port with the tiny reference model
and an API key, then checks chat and completions, streaming and not: text,
finish reasons, usage, stop strings, n > 1, logprobs, and the errors the
client maps to exceptions (400, 401, 404).

Usage: openai_client_test.py --folio build/folio --model MODEL.gguf
Exit status: 0 pass, 1 fail (also when the openai package is missing:
scripts/setup.sh installs it into .venv, which ctest uses).
"""

import argparse
import json
import re
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

try:
    import openai
except ImportError:
    print("openai_client_test: the 'openai' package is not installed; run scripts/setup.sh "
          "(it creates .venv with it) and configure the build again")
    sys.exit(1)

API_KEY = "folio-test-key"
ARGS = None
SERVER = None  # (process, base_url, model id)


def start_server():
    proc = subprocess.Popen(
        [ARGS.folio, "--log-level", "warn", "serve", "-m", ARGS.model, "--port", "0",
         "--max-seqs", "4", "--kv-type", "f32", "-t", "2", "--api-key", API_KEY, "--alias", "tiny",
         *ARGS.serve_arg],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    deadline = time.time() + 30
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


def setUpModule():
    global SERVER
    SERVER = start_server()


def tearDownModule():
    # Idle keep-alive connections would hold the server's shutdown for its
    # keep-alive timeout: close them first.
    for c in CLIENTS.values():
        c.close()
    proc = SERVER[0]
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


CLIENTS = {}


def client(key=API_KEY):
    if key not in CLIENTS:
        CLIENTS[key] = openai.OpenAI(base_url=SERVER[1] + "/v1", api_key=key, max_retries=0,
                                     timeout=30)
    return CLIENTS[key]


def detokenize(tokens):
    req = urllib.request.Request(SERVER[1] + "/detokenize",
                                 data=json.dumps({"tokens": tokens}).encode(),
                                 headers={"Authorization": "Bearer " + API_KEY,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["content"]


MESSAGES = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Tell me a story."}]


class ModelsTest(unittest.TestCase):
    def test_list(self):
        models = client().models.list()
        self.assertEqual([m.id for m in models.data], ["tiny"])


class ChatTest(unittest.TestCase):
    def test_non_streaming(self):
        r = client().chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=12,
                                             temperature=0)
        self.assertEqual(r.object, "chat.completion")
        self.assertTrue(r.id.startswith("chatcmpl-"))
        self.assertEqual(len(r.choices), 1)
        c = r.choices[0]
        self.assertEqual(c.message.role, "assistant")
        self.assertIsInstance(c.message.content, str)
        self.assertIn(c.finish_reason, ("stop", "length"))
        self.assertGreater(r.usage.prompt_tokens, 0)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
        if c.finish_reason == "length":
            self.assertEqual(r.usage.completion_tokens, 12)

    def test_streaming_equals_non_streaming(self):
        cl = client()
        full = cl.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=16,
                                          temperature=0)
        stream = cl.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=16,
                                            temperature=0, stream=True,
                                            stream_options={"include_usage": True})
        text, roles, finish, usage, n_chunks = "", [], None, None, 0
        for chunk in stream:
            n_chunks += 1
            self.assertEqual(chunk.object, "chat.completion.chunk")
            if chunk.usage is not None:
                usage = chunk.usage
                self.assertEqual(chunk.choices, [])
                continue
            for c in chunk.choices:
                if c.delta.role:
                    roles.append(c.delta.role)
                text += c.delta.content or ""
                if c.finish_reason:
                    finish = c.finish_reason
        self.assertEqual(roles, ["assistant"])
        self.assertEqual(text, full.choices[0].message.content)
        self.assertEqual(finish, full.choices[0].finish_reason)
        self.assertIsNotNone(usage)
        self.assertEqual(usage.completion_tokens, full.usage.completion_tokens)
        self.assertEqual(usage.prompt_tokens, full.usage.prompt_tokens)
        self.assertGreater(n_chunks, 2)

    def test_n_and_logprobs(self):
        r = client().chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=5,
                                             temperature=0, n=2, logprobs=True, top_logprobs=3)
        self.assertEqual(len(r.choices), 2)
        self.assertEqual(r.choices[0].message.content, r.choices[1].message.content)
        for c in r.choices:
            if c.finish_reason == "length":
                self.assertEqual(len(c.logprobs.content), 5)
            else:
                self.assertLessEqual(len(c.logprobs.content), 5)
            for t in c.logprobs.content:
                self.assertLessEqual(t.logprob, 0.0)
                self.assertEqual(len(t.top_logprobs), 3)
                self.assertAlmostEqual(t.logprob, t.top_logprobs[0].logprob, places=5)
                self.assertIsInstance(t.bytes, list)

    def test_stop(self):
        cl = client()
        full = cl.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=30,
                                          temperature=0).choices[0].message.content
        m = re.search(r"[A-Za-z]{2}", full[4:])
        if m is None:
            self.skipTest("no ASCII letters in the output to stop at: %r" % full)
        stop = m.group(0)
        cut = full[:full.index(stop)]
        r = cl.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=30,
                                       temperature=0, stop=[stop])
        self.assertEqual(r.choices[0].message.content, cut)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        text = "".join(c.choices[0].delta.content or "" for c in
                       cl.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=30,
                                                  temperature=0, stop=stop, stream=True)
                       if c.choices)
        self.assertEqual(text, cut)


class CompletionsTest(unittest.TestCase):
    PROMPT = "Once upon a time"

    def test_non_streaming_and_streaming(self):
        cl = client()
        r = cl.completions.create(model="tiny", prompt=self.PROMPT, max_tokens=10, temperature=0)
        self.assertEqual(r.object, "text_completion")
        self.assertTrue(r.id.startswith("cmpl-"))
        text = r.choices[0].text
        self.assertIsInstance(text, str)
        self.assertIn(r.choices[0].finish_reason, ("stop", "length"))
        chunks = list(cl.completions.create(model="tiny", prompt=self.PROMPT, max_tokens=10,
                                            temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
        self.assertEqual("".join(c.choices[0].text for c in chunks if c.choices), text)
        self.assertEqual(chunks[-1].usage.completion_tokens, r.usage.completion_tokens)
        self.assertEqual(chunks[-1].usage.prompt_tokens, r.usage.prompt_tokens)

    def test_token_prompt_echo_and_n(self):
        cl = client()
        r = cl.completions.create(model="tiny", prompt=[[1, 2, 3], [4, 5]], max_tokens=4,
                                  temperature=0, n=2, echo=True)
        self.assertEqual(len(r.choices), 4)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2, 3])
        self.assertEqual(r.choices[0].text, r.choices[1].text)
        self.assertEqual(r.usage.prompt_tokens, 3 + 2)  # choices share their prompt
        for index, tokens in ((0, [1, 2, 3]), (2, [4, 5])):
            self.assertTrue(r.choices[index].text.startswith(detokenize(tokens)))

    def test_logprobs(self):
        r = client().completions.create(model="tiny", prompt=self.PROMPT, max_tokens=6,
                                        temperature=0, logprobs=2)
        lp = r.choices[0].logprobs
        self.assertEqual(len(lp.tokens), r.usage.completion_tokens)
        self.assertEqual(len(lp.token_logprobs), len(lp.tokens))
        self.assertEqual(len(lp.text_offset), len(lp.tokens))
        for top in lp.top_logprobs:
            self.assertLessEqual(len(top), 2)

    def test_seeded_sampling_repeats(self):
        cl = client()
        kw = dict(model="tiny", prompt=self.PROMPT, max_tokens=12, temperature=1.0, seed=99)
        self.assertEqual(cl.completions.create(**kw).choices[0].text,
                         cl.completions.create(**kw).choices[0].text)


class ErrorsTest(unittest.TestCase):
    def test_bad_parameter(self):
        with self.assertRaises(openai.BadRequestError) as e:
            client().completions.create(model="tiny", prompt="x", top_p=3)
        self.assertEqual(e.exception.status_code, 400)
        self.assertEqual(e.exception.body["param"], "top_p")

    def test_unknown_model(self):
        with self.assertRaises(openai.NotFoundError):
            client().chat.completions.create(model="gpt-17", messages=MESSAGES)

    def test_api_key(self):
        with self.assertRaises(openai.AuthenticationError):
            client("wrong").models.list()

    def test_too_long(self):
        with self.assertRaises(openai.APIStatusError) as e:
            client().completions.create(model="tiny", prompt="word " * 600, max_tokens=1)
        self.assertEqual(e.exception.status_code, 413)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--folio", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="an extra `folio serve` argument (repeatable), e.g. --device")
    ARGS, rest = parser.parse_known_args()
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
