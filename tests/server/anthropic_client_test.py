#!/usr/bin/env python3
"""`folio serve` /v1/messages driven by the official `anthropic` client
(PyPI), on the bundled chat model (SmolLM2 135M Instruct Q4_1).

Checks, against the server's own /v1/chat/completions (the same chat path):
`messages.create` at temperature 0 gives the chat answer's text, usage and
stop reason (end_turn / max_tokens), streamed (`messages.stream` and
create(stream=True): message_start, content_block_* and message_delta /
message_stop events whose text deltas add up to the final message) and
not; stop_sequences cut the answer where the first one starts, with
stop_reason stop_sequence; a tool forced by tool_choice {"type": "any"} (on
a server with a short hermes template, so the model's calls are parsed)
yields a tool_use block whose input validates against the tool's
input_schema, streamed (input_json_delta) and not, and its tool_result goes
back; `messages.count_tokens` equals the usage's input_tokens; the API key
(x-api-key) and bad input give the client's AuthenticationError /
BadRequestError, in Anthropic's error shape.

Usage: anthropic_client_test.py --folio build/folio [--model MODEL.gguf]
The model is models/SmolLM2-135M-Instruct-Q4_1.gguf (scripts/setup.sh
fetches it; FOLIO_SMOLLM2_GGUF names another copy); a missing model or
package fails.
"""

import argparse
import json
import os
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

try:
    import anthropic
    import jsonschema
    import openai
except ImportError:
    print("anthropic_client_test: the 'anthropic', 'openai' or 'jsonschema' package is not "
          "installed; run scripts/setup.sh (it creates .venv with them) and configure the build "
          "again")
    sys.exit(1)

import serve_process  # noqa: E402  (beside this file)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = None
SERVER = None  # (process, base url)
CLIENT = None  # anthropic
OAI = None     # openai, for the chat completions reference
MODEL = "smol"
API_KEY = "folio-test-key"

HERMES_TEMPLATE = """{%- if tools %}<|im_start|>system
Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}. Call one as
<tool_call>{"name": ..., "arguments": {...}}</tool_call><|im_end|>
{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

WEATHER = {"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}


def start_server(extra=()):
    return serve_process.start(
        [ARGS.folio, "--log-level", "warn", "serve", "-m", ARGS.model, "--port", "0",
         "--max-seqs", "2", "--kv-type", "f32", "-t", "2", "-c", "2048", "--alias", MODEL,
         *extra], timeout=60)


def setUpModule():
    global SERVER, CLIENT, OAI
    SERVER = start_server(("--api-key", API_KEY))
    CLIENT = anthropic.Anthropic(base_url=SERVER[1], api_key=API_KEY, max_retries=0, timeout=120)
    OAI = openai.OpenAI(base_url=SERVER[1] + "/v1", api_key=API_KEY, max_retries=0, timeout=120)


def tearDownModule():
    CLIENT.close()
    OAI.close()
    serve_process.stop(SERVER[0])


QUESTION = "What is the capital of France?"
# Greedy decoding, for answers that equal chat completions' (the current
# client has no temperature argument; the API still takes the field).
GREEDY = {"temperature": 0}
SYSTEM = "You are a helpful assistant."


def chat_reference(max_tokens, messages=None, **kw):
    msgs = [{"role": "system", "content": SYSTEM},
            *(messages or [{"role": "user", "content": QUESTION}])]
    return OAI.chat.completions.create(model=MODEL, messages=msgs, max_tokens=max_tokens,
                                       extra_body=GREEDY, **kw)


class MessagesTest(unittest.TestCase):
    def create(self, max_tokens=40, **kw):
        return CLIENT.messages.create(model=MODEL, max_tokens=max_tokens, system=SYSTEM,
                                      messages=[{"role": "user", "content": QUESTION}],
                                      extra_body=GREEDY, **kw)

    def test_non_streamed_equals_chat_completions(self):
        m = self.create()
        chat = chat_reference(40)
        self.assertTrue(m.id.startswith("msg_"))
        self.assertEqual(m.type, "message")
        self.assertEqual(m.role, "assistant")
        self.assertEqual(m.model, MODEL)
        self.assertEqual([b.type for b in m.content], ["text"])
        self.assertEqual(m.content[0].text, chat.choices[0].message.content)
        self.assertEqual(m.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(m.usage.output_tokens, chat.usage.completion_tokens)
        expected = {"stop": "end_turn", "length": "max_tokens"}[chat.choices[0].finish_reason]
        self.assertEqual(m.stop_reason, expected)
        self.assertIsNone(m.stop_sequence)
        short = self.create(max_tokens=2)
        self.assertEqual(short.stop_reason, "max_tokens")
        self.assertEqual(short.usage.output_tokens, 2)

    def test_streamed_equals_non_streamed(self):
        whole = self.create()
        with CLIENT.messages.stream(model=MODEL, max_tokens=40, system=SYSTEM, extra_body=GREEDY,
                                    messages=[{"role": "user", "content": QUESTION}]) as s:
            text = "".join(s.text_stream)
            final = s.get_final_message()
        self.assertEqual(text, whole.content[0].text)
        self.assertEqual(final.content[0].text, whole.content[0].text)
        self.assertEqual(final.stop_reason, whole.stop_reason)
        self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)
        events = list(self.create(stream=True))
        types = [e.type for e in events]
        self.assertEqual(types[0], "message_start")
        self.assertEqual(types[-2:], ["message_delta", "message_stop"])
        self.assertEqual(types.count("content_block_start"), 1)
        self.assertEqual(types.count("content_block_stop"), 1)
        self.assertEqual(events[0].message.usage.input_tokens, whole.usage.input_tokens)
        self.assertEqual("".join(e.delta.text for e in events if e.type == "content_block_delta"),
                         whole.content[0].text)

    def test_stop_sequences(self):
        whole = self.create()
        text = whole.content[0].text
        # Two words of the answer: the first to occur ends it.
        words = [w for w in text.split() if len(w) > 2][:3]
        self.assertGreaterEqual(len(words), 2, text)
        first = min(words[1:], key=text.find)
        m = self.create(stop_sequences=list(reversed(words[1:])))
        self.assertEqual(m.stop_reason, "stop_sequence")
        self.assertEqual(m.stop_sequence, first)
        self.assertEqual(m.content[0].text, text[:text.find(first)])

    def test_count_tokens(self):
        m = self.create(max_tokens=4)
        n = CLIENT.messages.count_tokens(model=MODEL, system=SYSTEM,
                                         messages=[{"role": "user", "content": QUESTION}])
        self.assertEqual(n.input_tokens, m.usage.input_tokens)

    def test_tool_with_auto_choice(self):
        # SmolLM2's own template has no tool-call format: a schema-valid message.
        m = self.create(tools=[WEATHER])
        self.assertIn(m.stop_reason, ("end_turn", "max_tokens", "tool_use"))
        for b in m.content:
            self.assertIn(b.type, ("text", "tool_use", "thinking"))

    def test_errors(self):
        bad = anthropic.Anthropic(base_url=SERVER[1], api_key="wrong", max_retries=0)
        with self.assertRaises(anthropic.AuthenticationError):
            bad.messages.create(model=MODEL, max_tokens=4,
                                messages=[{"role": "user", "content": "x"}])
        bad.close()
        for kw in (dict(extra_body={"temperature": 1.5}), dict(messages=[]),
                   dict(messages=[{"role": "user", "content": [{"type": "hologram"}]}]),
                   dict(tools=[{"name": "f"}]), dict(tool_choice={"type": "any"})):
            args = dict(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "x"}])
            args.update(kw)
            with self.subTest(kw=kw), self.assertRaises(anthropic.BadRequestError) as e:
                CLIENT.messages.create(**args)
            self.assertEqual(e.exception.body["type"], "error")
            self.assertEqual(e.exception.body["error"]["type"], "invalid_request_error")
        with self.assertRaises(anthropic.NotFoundError):
            CLIENT.messages.create(model="claude-elsewhere", max_tokens=4,
                                   messages=[{"role": "user", "content": "x"}])
        # max_tokens is required, as Anthropic's API has it (the client
        # demands it too, so the request goes out by hand).
        req = urllib.request.Request(
            SERVER[1] + "/v1/messages",
            data=json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}]})
            .encode(),
            headers={"Content-Type": "application/json", "x-api-key": API_KEY,
                     "anthropic-version": "2023-06-01"})
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        self.assertEqual(e.exception.code, 400)
        body = json.loads(e.exception.read())
        self.assertEqual(body["error"]["type"], "invalid_request_error")
        self.assertIn("max_tokens", body["error"]["message"])


class MessagesToolTest(unittest.TestCase):
    """A server with a hermes template: tool_choice any makes the model's
    reply a call, which the client reads as a tool_use block."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        template = os.path.join(cls.tmp.name, "hermes.jinja")
        with open(template, "w") as f:
            f.write(HERMES_TEMPLATE)
        cls.proc, base = start_server(("--chat-template-file", template))
        cls.client = anthropic.Anthropic(base_url=base, api_key="none", max_retries=0,
                                         timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        serve_process.stop(cls.proc)
        cls.tmp.cleanup()

    QUESTION = [{"role": "user", "content": "What is the weather in Oslo?"}]

    def check_tool_use(self, block):
        self.assertEqual(block.type, "tool_use")
        self.assertEqual(block.name, "get_weather")
        self.assertTrue(block.id)
        jsonschema.validate(block.input, WEATHER["input_schema"])

    def test_forced_tool_use_and_result(self):
        m = self.client.messages.create(model=MODEL, max_tokens=200, extra_body=GREEDY,
                                        tools=[WEATHER],
                                        tool_choice={"type": "any", "disable_parallel_tool_use": True},
                                        messages=self.QUESTION)
        self.assertEqual(m.stop_reason, "tool_use")
        uses = [b for b in m.content if b.type == "tool_use"]
        self.assertEqual(len(uses), 1, m.content)
        self.check_tool_use(uses[0])
        follow = self.client.messages.create(
            model=MODEL, max_tokens=24, extra_body=GREEDY, tools=[WEATHER],
            messages=[*self.QUESTION, {"role": "assistant", "content": m.content},
                      {"role": "user", "content": [{"type": "tool_result",
                                                    "tool_use_id": uses[0].id,
                                                    "content": "Sunny, 21 C"}]}])
        self.assertIn(follow.stop_reason, ("end_turn", "max_tokens", "tool_use"))
        self.assertTrue(follow.content)

    def test_named_tool_streamed(self):
        whole = self.client.messages.create(model=MODEL, max_tokens=200, extra_body=GREEDY,
                                            tools=[WEATHER],
                                            tool_choice={"type": "tool", "name": "get_weather",
                                                         "disable_parallel_tool_use": True},
                                            messages=self.QUESTION)
        with self.client.messages.stream(model=MODEL, max_tokens=200, extra_body=GREEDY,
                                         tools=[WEATHER],
                                         tool_choice={"type": "tool", "name": "get_weather",
                                                         "disable_parallel_tool_use": True},
                                         messages=self.QUESTION) as s:
            kinds = [e.type for e in s]
            final = s.get_final_message()
        self.assertIn("content_block_start", kinds)
        self.assertEqual(final.stop_reason, "tool_use")
        uses = [b for b in final.content if b.type == "tool_use"]
        self.assertEqual(len(uses), 1)
        self.check_tool_use(uses[0])
        self.assertEqual(uses[0].input,
                         next(b for b in whole.content if b.type == "tool_use").input)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", default=os.environ.get("FOLIO_SMOLLM2_GGUF") or os.path.join(
        REPO, "models", "SmolLM2-135M-Instruct-Q4_1.gguf"))
    ARGS, rest = ap.parse_known_args()
    if not os.path.isfile(ARGS.model):
        print(f"anthropic_client_test: {ARGS.model}: the chat model is missing; scripts/setup.sh "
              "fetches it (or set FOLIO_SMOLLM2_GGUF)")
        return 1
    prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
