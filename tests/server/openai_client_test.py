#!/usr/bin/env python3
"""`folio serve` driven by the official `openai` Python client (PyPI).

Starts `folio serve` on a free loopback port with the tiny reference model
and an API key, then checks chat and completions, streaming and not: text,
finish reasons, usage, stop strings, n > 1, logprobs, and the errors the
client maps to exceptions (400, 401, 404). Structured outputs: every schema
of the grammar corpus (tests/grammar/schemas) as response_format, the
answers validated by the `jsonschema` package; json_object; GBNF grammars.
Tool calls enforced by tool_choice (named, required) on a server with a
hermes template, parsed by the client. Reasoning split out of a reply on
servers with DeepSeek-R1's template. With --serve-arg (a device run) the
host-side classes (HOST_ONLY) are left to the plain run. Also on servers of their own:
SIGTERM with trickling clients, a port in use, the web chat page at /
in headless Chromium (its DOM against the API's answer, and a screenshot), and
/metrics' vLLM-named series read by prometheus_client's parser (what
Prometheus-fed routers and dashboards see) against the API's usage.

Usage: openai_client_test.py --folio build/folio --model MODEL.gguf
Exit status: 0 pass, 1 fail (also when the openai package is missing:
scripts/setup.sh installs it into .venv, which ctest uses).
"""

import argparse
import glob
import html.parser
import os
import json
import re
import signal
import socket
import subprocess
import sys
import time
import tempfile
import unittest
import urllib.error
import urllib.parse
import urllib.request
import zlib

try:
    import jsonschema
    import openai
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("openai_client_test: the 'openai', 'jsonschema' or 'prometheus_client' package is not "
          "installed; run scripts/setup.sh (it creates .venv with them) and configure the build "
          "again")
    sys.exit(1)

import serve_process  # noqa: E402  (beside this file)

API_KEY = "folio-test-key"
ARGS = None
SERVER = None  # (process, base_url, model id)


def start_server(api_key=API_KEY, extra=()):
    key_args = ["--api-key", api_key] if api_key else []
    key_args += list(extra)
    return serve_process.start(
        [ARGS.folio, "--log-level", "warn", "serve", "-m", ARGS.model, "--port", "0",
         "--max-seqs", "4", "--kv-type", "f32", "-t", "2", *key_args, "--alias", "tiny",
         *ARGS.serve_arg])


def setUpModule():
    global SERVER
    SERVER = start_server()


def tearDownModule():
    # Idle keep-alive connections would hold the server's shutdown for its
    # keep-alive timeout: close them first.
    for c in CLIENTS.values():
        c.close()
    serve_process.stop(SERVER[0])


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

    def test_retrieve(self):
        self.assertEqual(client().models.retrieve("tiny").id, "tiny")
        with self.assertRaises(openai.NotFoundError):
            client().models.retrieve("gpt-17")


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


SCHEMAS = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "grammar", "schemas", "*.json")))


def schema_validator(schema):
    """The oracle: jsonschema's validator for the schema's draft, with the
    format checkers (date, time, date-time, uuid) on."""
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


class StructuredOutputTest(unittest.TestCase):
    def test_json_schema_corpus(self):
        self.assertGreaterEqual(len(SCHEMAS), 25)
        finished = 0
        for i, path in enumerate(SCHEMAS):
            with open(path) as f:
                schema = json.load(f)["schema"]
            with self.subTest(schema=os.path.basename(path)):
                # A random model may write a string that never ends: a few
                # seeds, and what does end must validate.
                for seed in (1, 2, 3):
                    kw = dict(model="tiny", max_tokens=500, temperature=0.8, seed=seed,
                              messages=[{"role": "user", "content": "JSON, please."}],
                              response_format={"type": "json_schema",
                                               "json_schema": {"name": "s", "schema": schema}})
                    if (i + seed) % 2:
                        r = client().chat.completions.create(**kw)
                        text, finish = r.choices[0].message.content, r.choices[0].finish_reason
                    else:
                        text, finish = "", None
                        for chunk in client().chat.completions.create(stream=True, **kw):
                            for c in chunk.choices:
                                text += c.delta.content or ""
                                finish = c.finish_reason or finish
                    if finish == "stop":
                        schema_validator(schema).validate(json.loads(text))
                        finished += 1
                        break
                    self.assertEqual(finish, "length")
        self.assertGreaterEqual(finished, len(SCHEMAS) * 8 // 10)

    def test_json_object(self):
        for seed in range(4):
            r = client().chat.completions.create(
                model="tiny", messages=MESSAGES, max_tokens=300, temperature=0.7, seed=seed,
                response_format={"type": "json_object"})
            if r.choices[0].finish_reason == "stop":
                self.assertIsInstance(json.loads(r.choices[0].message.content), dict)

    def test_gbnf_grammar_on_completions(self):
        for seed in range(6):
            r = client().completions.create(
                model="tiny", prompt="Answer:", max_tokens=20, temperature=1.0, seed=seed,
                extra_body={"grammar": 'root ::= ("yes" | "no") ("!" | "")'})
            self.assertIn(r.choices[0].text, ["yes", "no", "yes!", "no!"])
            self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_bad_schema_and_grammar_are_400(self):
        with self.assertRaises(openai.BadRequestError) as e:
            client().chat.completions.create(
                model="tiny", messages=MESSAGES,
                response_format={"type": "json_schema", "json_schema": {
                    "name": "s", "schema": {"type": "object", "patternProperties": {"a": {}}}}})
        self.assertEqual(e.exception.body["param"], "response_format")
        with self.assertRaises(openai.BadRequestError) as e:
            client().completions.create(model="tiny", prompt="x",
                                        extra_body={"grammar": "root ::= undefined-rule"})
        self.assertEqual(e.exception.body["param"], "grammar")


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 12},
        "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"],
        "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "add", "parameters": {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}]


# A short ChatML template that teaches hermes tool calls (<tool_call>): the
# tiny model's 512-token context has no room for Qwen's long tool prompt.
HERMES_TEMPLATE = """{%- if tools %}<|im_start|>system
Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}. Call one as
<tool_call>{"name": ..., "arguments": {...}}</tool_call><|im_end|>
{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


class ToolCallTest(unittest.TestCase):
    """A server with a hermes tool-call template: tool_choice forces the
    tiny model's output into a call the client parses."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        template = os.path.join(cls.tmp.name, "hermes.jinja")
        with open(template, "w") as f:
            f.write(HERMES_TEMPLATE)
        cls.proc, base = start_server(api_key=None, extra=("--chat-template-file", template))
        cls.client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0,
                                   timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.proc.terminate()
        cls.proc.wait(timeout=10)
        cls.proc.stderr.close()
        cls.tmp.cleanup()

    def check_call(self, call):
        params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
        self.assertEqual(call.type, "function")
        self.assertTrue(call.id.startswith("call_"))
        schema_validator(params[call.function.name]).validate(json.loads(call.function.arguments))

    def test_named_function(self):
        for seed in range(3):
            r = self.client.chat.completions.create(
                model="tiny", messages=[{"role": "user", "content": "Weather in Oslo?"}],
                tools=TOOLS, max_tokens=200, temperature=0.8, seed=seed,
                tool_choice={"type": "function", "function": {"name": "get_weather"}},
                parallel_tool_calls=False)
            c = r.choices[0]
            if c.finish_reason == "length":
                continue
            self.assertEqual(c.finish_reason, "tool_calls")
            self.assertGreaterEqual(len(c.message.tool_calls), 1)
            for call in c.message.tool_calls:
                self.assertEqual(call.function.name, "get_weather")
                self.check_call(call)
            return
        self.fail("no seed finished a call within max_tokens")

    def test_required_streamed_single_call(self):
        for seed in range(3):
            stream = self.client.chat.completions.create(
                model="tiny", messages=[{"role": "user", "content": "Add 2 and 3."}],
                tools=TOOLS, max_tokens=200, temperature=0.8, seed=seed, stream=True,
                tool_choice="required", parallel_tool_calls=False)
            # OpenAI's shape: a call's first delta has its id, type and name,
            # the arguments come in fragments to concatenate.
            calls, finish, n_deltas = {}, None, 0
            for chunk in stream:
                for c in chunk.choices:
                    for d in c.delta.tool_calls or []:
                        n_deltas += 1
                        if d.index not in calls:
                            self.assertTrue(d.id and d.function.name, d)
                            calls[d.index] = d
                        else:
                            self.assertIsNone(d.id)
                            calls[d.index].function.arguments += d.function.arguments or ""
                    finish = c.finish_reason or finish
            if finish == "length":
                continue
            self.assertEqual(finish, "tool_calls")
            self.assertEqual(list(calls), [0])
            self.assertGreater(n_deltas, 2)  # streamed as decoded, not whole
            self.check_call(calls[0])
            return
        self.fail("no seed finished a call within max_tokens")


class ReasoningTest(unittest.TestCase):
    """Servers with DeepSeek-R1's template (its generation prompt opens
    <think>), one splitting the reasoning out (the default) and one with
    --reasoning-format none: the client reads message.reasoning_content and
    delta.reasoning_content, and the split reply is the unsplit one."""

    TEMPLATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "data", "templates", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja")

    @classmethod
    def setUpClass(cls):
        cls.servers = {}
        for name, extra in (("auto", ()), ("none", ("--reasoning-format", "none"))):
            proc, base = start_server(
                api_key=None, extra=("--chat-template-file", cls.TEMPLATE, *extra))
            cls.servers[name] = (proc, openai.OpenAI(base_url=base + "/v1", api_key="none",
                                                     max_retries=0, timeout=60))

    @classmethod
    def tearDownClass(cls):
        for proc, c in cls.servers.values():
            c.close()
            serve_process.stop(proc)

    def ask(self, name, **kw):
        return self.servers[name][1].chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "Why is the sky blue?"}],
            max_tokens=24, temperature=0, **kw)

    def test_reasoning_content_streamed_and_not(self):
        plain = self.ask("none").choices[0].message
        self.assertIsNone((plain.model_extra or {}).get("reasoning_content"))
        raw = plain.content
        self.assertNotIn("</think>", raw)  # the tiny model never closed the block
        split = self.ask("auto").choices[0].message
        self.assertEqual(split.model_extra["reasoning_content"], raw.strip())
        self.assertEqual(split.content, "")
        reasoning, content = "", ""
        for chunk in self.ask("auto", stream=True):
            for c in chunk.choices:
                reasoning += (c.delta.model_extra or {}).get("reasoning_content") or ""
                content += c.delta.content or ""
        self.assertEqual(reasoning, raw.strip())
        self.assertEqual(content, "")

    def test_reasoning_sent_back_and_bad_effort(self):
        r = self.servers["auto"][1].chat.completions.create(
            model="tiny", max_tokens=4, temperature=0, reasoning_effort="low",
            messages=[{"role": "user", "content": "2+2?"},
                      {"role": "assistant", "content": "4", "reasoning_content": "Sum."},
                      {"role": "user", "content": "3+3?"}])
        self.assertEqual(r.choices[0].finish_reason, "length")
        with self.assertRaises(openai.BadRequestError) as e:
            self.servers["auto"][1].chat.completions.create(
                model="tiny", max_tokens=4, reasoning_effort="extreme",
                messages=[{"role": "user", "content": "2+2?"}])
        self.assertIn("reasoning_effort", str(e.exception))


class EmbeddingsTest(unittest.TestCase):
    """/v1/embeddings on the tiny random-weight BERT (tests/engine/refdata):
    the vectors the openai client gets (base64 by default, and float) are
    llama.cpp's (llama-embedding, mean pooling, L2-normalised)."""

    @classmethod
    def setUpClass(cls):
        refdata = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine",
                               "refdata")
        with open(os.path.join(refdata, "tiny-bert.json")) as f:
            cls.ref = json.load(f)
        proc = subprocess.Popen(
            [ARGS.folio, "--log-level", "warn", "serve", "-m",
             os.path.join(refdata, "tiny-bert-f32.gguf"), "--port", "0", "-t", "2",
             "--alias", "bert", *ARGS.serve_arg],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        cls.proc = proc
        base = None
        deadline = time.time() + 30
        while base is None and time.time() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if m:
                base = m.group(1)
        assert base, "folio serve did not report its port"
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.HTTPError, urllib.error.URLError):
                time.sleep(0.05)
        cls.client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.proc.terminate()
        cls.proc.wait(timeout=10)
        cls.proc.stderr.close()

    def test_vectors_match_llama_cpp(self):
        texts = [e["text"] for e in self.ref["embed"]]
        want = self.ref["embeddings"]["mean"]["normalized"]
        # The client asks for base64 unless told otherwise, and decodes it.
        for kw in ({}, {"encoding_format": "float"}):
            r = self.client.embeddings.create(model="bert", input=texts, **kw)
            self.assertEqual([d.index for d in r.data], list(range(len(texts))))
            self.assertEqual(r.usage.prompt_tokens, sum(len(e["tokens"]) for e in self.ref["embed"]))
            for d, w in zip(r.data, want):
                self.assertEqual(len(d.embedding), len(w))
                self.assertLess(max(abs(a - b) for a, b in zip(d.embedding, w)), 1e-4)
        # Token ids in, one input alone: the same vector.
        r = self.client.embeddings.create(model="bert", input=self.ref["embed"][1]["tokens"])
        self.assertLess(max(abs(a - b) for a, b in zip(r.data[0].embedding, want[1])), 1e-4)

    def test_errors(self):
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.embeddings.create(model="bert", input=[])
        self.assertEqual(e.exception.body["param"], "input")
        with self.assertRaises(openai.APIStatusError) as e:
            self.client.embeddings.create(model="bert", input="word " * 200)
        self.assertEqual(e.exception.status_code, 413)
        with self.assertRaises(openai.BadRequestError):
            self.client.embeddings.create(model="bert", input="x", dimensions=8)
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model="bert", messages=MESSAGES)
        # A generative model has no embeddings.
        with self.assertRaises(openai.BadRequestError) as e:
            client().embeddings.create(model="tiny", input="x")
        self.assertEqual(e.exception.body["param"], "model")


class ProcessTest(unittest.TestCase):
    """Signals and ports, each on a `folio serve` of its own."""

    def test_sigterm_is_bounded_with_trickling_clients(self):
        proc, base = start_server()
        port = int(base.rsplit(":", 1)[1])
        tricklers = []
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            tricklers.append(s)
        time.sleep(0.2)
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        for i, s in enumerate(tricklers):  # keep trickling while it stops
            try:
                s.sendall(f"X-Slow-{i}: 1\r\n".encode())
            except OSError:
                pass
        try:
            code = proc.wait(timeout=8)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail("folio serve did not exit within 8 s of SIGTERM")
        proc.stderr.close()
        self.assertEqual(code, 0)
        self.assertLess(time.time() - t0, 5.0)
        for s in tricklers:
            s.close()

    def test_port_in_use_fails_clearly(self):
        port = int(SERVER[1].rsplit(":", 1)[1])
        r = subprocess.run([ARGS.folio, "serve", "-m", ARGS.model, "--port", str(port)],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already in use", r.stderr)


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB / RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
            depth, color = body[8], body[9]
            assert depth == 8 and color in (2, 6), f"unsupported PNG (depth {depth}, color {color})"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


class BubbleText(html.parser.HTMLParser):
    """The text of each `.msg` element of a dumped DOM, without its .stats."""

    def __init__(self):
        super().__init__()
        self.msgs, self.depth, self.skip = [], 0, 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if self.depth:
            self.depth += 1
            if "stats" in cls.split():
                self.skip = self.depth
        elif "msg" in cls.split():
            self.msgs.append({"class": cls, "finish": dict(attrs).get("data-finish"), "text": ""})
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            if self.skip == self.depth:
                self.skip = 0
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.msgs[-1]["text"] += data


class WebChatPageTest(unittest.TestCase):
    """GET / in headless Chromium (Debian's chromium): the page sends
    ?prompt=, streams the reply, and shows what the API answers."""

    CHROMIUM = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=900,700", "--virtual-time-budget=20000"]

    def test_page_streams_the_api_answer(self):
        proc, base = start_server(api_key=None)
        try:
            prompt = "Tell me a story."
            query = urllib.parse.urlencode({"prompt": prompt, "temperature": 0, "max_tokens": 8})
            url = f"{base}/?{query}"
            dom = subprocess.run(self.CHROMIUM + ["--dump-dom", url], capture_output=True,
                                 text=True, timeout=120).stdout
            parser = BubbleText()
            parser.feed(dom)
            self.assertEqual([m["class"] for m in parser.msgs], ["msg user", "msg assistant"], dom)
            self.assertEqual(parser.msgs[0]["text"], prompt)
            req = urllib.request.Request(
                base + "/v1/chat/completions",
                data=json.dumps({"messages": [{"role": "user", "content": prompt}],
                                 "temperature": 0, "max_tokens": 8}).encode(),
                headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                expected = json.loads(r.read())["choices"][0]
            self.assertEqual(parser.msgs[1]["text"], expected["message"]["content"])
            self.assertEqual(parser.msgs[1]["finish"], expected["finish_reason"])

            with tempfile.TemporaryDirectory() as tmp:
                png = f"{tmp}/chat.png"
                subprocess.run(self.CHROMIUM + [f"--screenshot={png}", url], capture_output=True,
                               timeout=120, check=True)
                width, height, rows = read_png(png)
            self.assertEqual((width, height), (900, 700))
            # The user's bubble (#2f5fd0) in the conversation's top right,
            # and the reply's white bubble below it on the grey background.
            def count(color, x0, x1, y0, y1):
                return sum(1 for y in range(y0, y1) for x in range(x0, x1)
                           if all(abs(a - b) <= 8 for a, b in zip(rows[y][x], color)))
            self.assertGreater(count((0x2f, 0x5f, 0xd0), 450, 900, 60, 200), 300)
            self.assertGreater(count((255, 255, 255), 0, 450, 100, 300), 300)
            self.assertGreater(count((0xf6, 0xf7, 0xf9), 0, 900, 300, 600), 100000)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stderr.close()


class VllmMetricsTest(unittest.TestCase):
    """/metrics on a server of its own, parsed by prometheus_client: the
    series vLLM-built routers read by name, with vLLM's types and labels,
    add up to what the API answered."""

    def scrape(self, base):
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            text = r.read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        samples = {}
        for f in families.values():
            for smp in f.samples:
                if smp.name.startswith("vllm:"):
                    labels = dict(smp.labels)
                    if "le" not in labels:
                        self.assertEqual(labels.pop("model_name"), "tiny", smp)
                        self.assertEqual(labels.pop("engine"), "0", smp)
                    samples[(smp.name, tuple(sorted(labels.items())))] = smp.value
        return families, samples

    def test_vllm_series_add_up(self):
        proc, base = start_server(api_key=None)
        try:
            c = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=30)
            prompt = "The quick brown fox jumps over the lazy dog. " * 6
            usages, reasons = [], []
            for i in range(3):  # the same prompt: the second and third hit the prefix cache
                r = c.completions.create(model="tiny", prompt=prompt, max_tokens=4 + i,
                                         temperature=0)
                usages.append(r.usage)
                reasons.append(r.choices[0].finish_reason)
            r = c.completions.create(model="tiny", prompt="Hello", max_tokens=16, temperature=0,
                                     n=2, stop=[" ", "e", "a", "o", "i"])
            usages.append(r.usage)
            reasons += [ch.finish_reason for ch in r.choices]
            c.close()
            # The gauges follow the scheduler's next loop after the last
            # answer went out (until then a request that finished within one
            # step can still show as waiting, counted when it was submitted):
            # wait for it.
            deadline = time.time() + 10
            while True:
                families, v = self.scrape(base)
                idle = (v[("vllm:num_requests_running", ())] == 0
                        and v[("vllm:num_requests_waiting", ())] == 0)
                if idle or time.time() > deadline:
                    break
                time.sleep(0.02)
        finally:
            serve_process.stop(proc)

        types = {"vllm:num_requests_running": "gauge", "vllm:num_requests_waiting": "gauge",
                 "vllm:kv_cache_usage_perc": "gauge", "vllm:prefix_cache_queries": "counter",
                 "vllm:prefix_cache_hits": "counter", "vllm:prompt_tokens": "counter",
                 "vllm:generation_tokens": "counter", "vllm:request_success": "counter",
                 "vllm:num_preemptions": "counter", "vllm:cache_config_info": "gauge",
                 "vllm:time_to_first_token_seconds": "histogram",
                 "vllm:inter_token_latency_seconds": "histogram",
                 "vllm:e2e_request_latency_seconds": "histogram",
                 "vllm:request_prompt_tokens": "histogram",
                 "vllm:request_generation_tokens": "histogram"}
        for name, kind in types.items():
            self.assertIn(name, families)
            self.assertEqual(families[name].type, kind, name)
        self.assertEqual(v[("vllm:num_requests_running", ())], 0)
        self.assertEqual(v[("vllm:num_requests_waiting", ())], 0)
        self.assertTrue(0 <= v[("vllm:kv_cache_usage_perc", ())] <= 1)
        prompt_tokens = sum(u.prompt_tokens for u in usages)
        completion_tokens = sum(u.completion_tokens for u in usages)
        self.assertEqual(v[("vllm:prompt_tokens_total", ())], prompt_tokens)
        self.assertEqual(v[("vllm:generation_tokens_total", ())], completion_tokens)
        self.assertEqual(v[("vllm:request_prompt_tokens_sum", ())], prompt_tokens)
        self.assertEqual(v[("vllm:request_generation_tokens_sum", ())], completion_tokens)
        self.assertEqual(v[("vllm:request_prompt_tokens_count", ())], 4)
        self.assertEqual(v[("vllm:e2e_request_latency_seconds_count", ())], 4)
        self.assertEqual(v[("vllm:time_to_first_token_seconds_count", ())], 4)
        # Every admission looks its whole prompt up (n = 2 admits two choices);
        # the repeated prompt's full blocks hit.
        self.assertGreaterEqual(v[("vllm:prefix_cache_queries_total", ())], prompt_tokens)
        self.assertGreater(v[("vllm:prefix_cache_hits_total", ())], 0)
        self.assertEqual(v[("vllm:num_preemptions_total", ())], 0)
        for reason in ("stop", "length", "abort", "error"):
            want = sum(1 for x in reasons if x == reason)
            self.assertEqual(v[("vllm:request_success_total", (("finished_reason", reason),))],
                             want, reason)
        info = [k for k in v if k[0] == "vllm:cache_config_info"]
        self.assertEqual(len(info), 1)
        self.assertIn(("block_size", "16"), info[0][1])
        self.assertIn(("enable_prefix_caching", "True"), info[0][1])


# Host-side features (grammar masks, tool-call parsing, the page, signals):
# a --serve-arg (device) run leaves them to the plain run.
HOST_ONLY = {"StructuredOutputTest", "ToolCallTest", "ReasoningTest", "WebChatPageTest",
             "ProcessTest", "VllmMetricsTest"}


def load_tests(loader, tests, pattern):
    if not ARGS.serve_arg:
        return tests
    suite = unittest.TestSuite()
    for group in tests:
        for case in group:
            if type(case).__name__ not in HOST_ONLY:
                suite.addTest(case)
    return suite


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
