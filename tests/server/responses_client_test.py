#!/usr/bin/env python3
"""`folio serve` /v1/responses driven by the official `openai` client's
`client.responses.create` (PyPI), on the bundled chat model (SmolLM2 135M
Instruct Q4_1).

Checks, against the server's own /v1/chat/completions (the same chat path):
a greedy answer is the same text through both APIs; streamed, its typed
events (sequence numbers in order, output_text deltas adding up to the
done text and to response.completed's output) give the non-streamed text;
a function tool forced by tool_choice "required" (on a server with a short
hermes template, so the model's calls are parsed) yields a function_call
whose arguments validate against the tool's schema, streamed and not, and
its function_call_output goes back through previous_response_id;
previous_response_id carries the conversation (store: false keeps none);
bad input is the client's BadRequestError / NotFoundError.

Usage: responses_client_test.py --folio build/folio [--model MODEL.gguf]
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

try:
    import jsonschema
    import openai
except ImportError:
    print("responses_client_test: the 'openai' or 'jsonschema' package is not installed; run "
          "scripts/setup.sh (it creates .venv with them) and configure the build again")
    sys.exit(1)

import serve_process  # noqa: E402  (beside this file)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = None
SERVER = None  # (process, base url)
CLIENT = None
MODEL = "smol"

# A short ChatML template that teaches hermes tool calls (<tool_call>).
HERMES_TEMPLATE = """{%- if tools %}<|im_start|>system
Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}. Call one as
<tool_call>{"name": ..., "arguments": {...}}</tool_call><|im_end|>
{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}


def start_server(extra=()):
    return serve_process.start(
        [ARGS.folio, "--log-level", "warn", "serve", "-m", ARGS.model, "--port", "0",
         "--max-seqs", "2", "--kv-type", "f32", "-t", "2", "-c", "2048", "--alias", MODEL,
         *extra], timeout=60)


def setUpModule():
    global SERVER, CLIENT
    SERVER = start_server()
    CLIENT = openai.OpenAI(base_url=SERVER[1] + "/v1", api_key="none", max_retries=0, timeout=120)


def tearDownModule():
    CLIENT.close()
    serve_process.stop(SERVER[0])


QUESTION = "What is the capital of France?"


class ResponsesTest(unittest.TestCase):
    def test_non_streamed_equals_chat_completions(self):
        r = CLIENT.responses.create(model=MODEL, input=QUESTION, max_output_tokens=40,
                                    temperature=0)
        chat = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": QUESTION}], max_tokens=40,
            temperature=0)
        self.assertTrue(r.id.startswith("resp_"))
        self.assertEqual(r.object, "response")
        self.assertEqual(r.model, MODEL)
        self.assertEqual([o.type for o in r.output], ["message"])
        self.assertEqual(r.output[0].role, "assistant")
        self.assertEqual(r.output[0].content[0].type, "output_text")
        self.assertTrue(r.output_text)
        self.assertEqual(r.output_text, chat.choices[0].message.content)
        self.assertEqual(r.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(r.usage.output_tokens, chat.usage.completion_tokens)
        self.assertEqual(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens)
        finish = chat.choices[0].finish_reason
        self.assertEqual(r.status, "completed" if finish == "stop" else "incomplete")

    def test_instructions_are_a_system_message(self):
        r = CLIENT.responses.create(model=MODEL, input=QUESTION, instructions="Answer in French.",
                                    max_output_tokens=24, temperature=0)
        chat = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "system", "content": "Answer in French."},
                                   {"role": "user", "content": QUESTION}],
            max_tokens=24, temperature=0)
        self.assertEqual(r.output_text, chat.choices[0].message.content)
        self.assertEqual(r.instructions, "Answer in French.")

    def test_streamed_events(self):
        whole = CLIENT.responses.create(model=MODEL, input=QUESTION, max_output_tokens=40,
                                        temperature=0)
        events = list(CLIENT.responses.create(model=MODEL, input=QUESTION, max_output_tokens=40,
                                              temperature=0, stream=True))
        types = [e.type for e in events]
        self.assertEqual(types[:2], ["response.created", "response.in_progress"])
        self.assertIn(types[-1], ("response.completed", "response.incomplete"))
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        for t in ("response.output_item.added", "response.content_part.added",
                  "response.output_text.done", "response.content_part.done",
                  "response.output_item.done"):
            self.assertEqual(types.count(t), 1, t)
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        done = next(e for e in events if e.type == "response.output_text.done")
        self.assertEqual(deltas, done.text)
        self.assertEqual(deltas, whole.output_text)
        final = events[-1].response
        self.assertEqual(final.output_text, whole.output_text)
        self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)
        self.assertEqual(final.status, whole.status)

    def test_previous_response_id(self):
        first = CLIENT.responses.create(model=MODEL, input="My name is Ada. Say hello.",
                                        max_output_tokens=16, temperature=0)
        second = CLIENT.responses.create(model=MODEL, input="What is my name?",
                                         previous_response_id=first.id, max_output_tokens=16,
                                         temperature=0)
        self.assertEqual(second.previous_response_id, first.id)
        # The same conversation written out as chat messages.
        chat = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "My name is Ada. Say hello."},
                                   {"role": "assistant", "content": first.output_text},
                                   {"role": "user", "content": "What is my name?"}],
            max_tokens=16, temperature=0)
        self.assertEqual(second.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(second.output_text, chat.choices[0].message.content)
        # Streamed responses are kept too.
        events = list(CLIENT.responses.create(model=MODEL, input="Again?", stream=True,
                                              previous_response_id=second.id,
                                              max_output_tokens=8, temperature=0))
        third = CLIENT.responses.create(model=MODEL, input="And?", max_output_tokens=4,
                                        previous_response_id=events[-1].response.id)
        self.assertGreater(third.usage.input_tokens, second.usage.input_tokens)

    def test_store_false_keeps_nothing(self):
        r = CLIENT.responses.create(model=MODEL, input="Hi", max_output_tokens=4, store=False)
        self.assertFalse(r.store)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.create(model=MODEL, input="Hi", previous_response_id=r.id,
                                    max_output_tokens=4)

    def test_tool_auto_on_smollm2(self):
        # SmolLM2's own template has no tool-call format: the answer is a
        # message (or a call, should the server learn one), schema-valid.
        r = CLIENT.responses.create(model=MODEL, input="Weather in Oslo?", tools=[WEATHER],
                                    max_output_tokens=24, temperature=0)
        self.assertTrue(r.output)
        for item in r.output:
            self.assertIn(item.type, ("message", "function_call", "reasoning"))
        self.assertEqual(r.tools[0].name, "get_weather")

    def test_bad_requests(self):
        for kw in (dict(input=5), dict(input=[{"type": "item_reference", "id": "x"}]),
                   dict(input="x", max_output_tokens=0),
                   dict(input="x", tools=[{"type": "web_search"}]),
                   dict(input="x", tool_choice="required"),
                   dict(input="x", top_p=5)):
            with self.subTest(kw=kw), self.assertRaises(openai.BadRequestError) as e:
                CLIENT.responses.create(model=MODEL, **kw)
            self.assertEqual(e.exception.status_code, 400)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.create(model="another", input="x")
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.create(model=MODEL, input="x", previous_response_id="resp_nope")


class ResponsesToolTest(unittest.TestCase):
    """A server with a hermes template: tool_choice "required" makes the
    model's reply a call, which the client reads as a function_call item."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        template = os.path.join(cls.tmp.name, "hermes.jinja")
        with open(template, "w") as f:
            f.write(HERMES_TEMPLATE)
        cls.proc, base = start_server(("--chat-template-file", template))
        cls.client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0,
                                   timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        serve_process.stop(cls.proc)
        cls.tmp.cleanup()

    def check_call(self, item):
        self.assertEqual(item.type, "function_call")
        self.assertEqual(item.name, "get_weather")
        self.assertTrue(item.call_id)
        jsonschema.validate(json.loads(item.arguments), WEATHER["parameters"])

    def test_required_call_and_its_output(self):
        r = self.client.responses.create(model=MODEL, input="What is the weather in Oslo?",
                                         tools=[WEATHER], tool_choice="required",
                                         parallel_tool_calls=False, max_output_tokens=200,
                                         temperature=0)
        calls = [o for o in r.output if o.type == "function_call"]
        self.assertEqual(len(calls), 1, r.output)
        self.check_call(calls[0])
        self.assertEqual(r.status, "completed")
        # The call's result goes back; the model answers in text.
        follow = self.client.responses.create(
            model=MODEL, previous_response_id=r.id, tools=[WEATHER], max_output_tokens=24,
            temperature=0, input=[{"type": "function_call_output", "call_id": calls[0].call_id,
                                   "output": "Sunny, 21 C"}])
        self.assertTrue(follow.output)
        # The same conversation sent whole, without the store.
        whole = self.client.responses.create(
            model=MODEL, tools=[WEATHER], max_output_tokens=24, temperature=0,
            input=[{"role": "user", "content": "What is the weather in Oslo?"},
                   {"type": "function_call", "call_id": calls[0].call_id,
                    "name": calls[0].name, "arguments": calls[0].arguments},
                   {"type": "function_call_output", "call_id": calls[0].call_id,
                    "output": "Sunny, 21 C"}])
        self.assertEqual(whole.usage.input_tokens, follow.usage.input_tokens)
        self.assertEqual(whole.output_text, follow.output_text)

    def test_required_call_streamed(self):
        whole = self.client.responses.create(model=MODEL, input="Weather in Paris?",
                                             tools=[WEATHER], tool_choice="required",
                                             parallel_tool_calls=False, max_output_tokens=200,
                                             temperature=0)
        events = list(self.client.responses.create(
            model=MODEL, input="Weather in Paris?", tools=[WEATHER], tool_choice="required",
            parallel_tool_calls=False, max_output_tokens=200, temperature=0, stream=True))
        self.assertEqual(events[-1].type, "response.completed")
        deltas = "".join(e.delta for e in events
                         if e.type == "response.function_call_arguments.delta")
        done = [e for e in events if e.type == "response.function_call_arguments.done"]
        self.assertEqual(len(done), 1)
        self.assertEqual(deltas, done[0].arguments)
        item = next(e.item for e in events if e.type == "response.output_item.done"
                    and e.item.type == "function_call")
        self.check_call(item)
        whole_call = next(o for o in whole.output if o.type == "function_call")
        self.assertEqual(item.arguments, whole_call.arguments)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", default=os.environ.get("FOLIO_SMOLLM2_GGUF") or os.path.join(
        REPO, "models", "SmolLM2-135M-Instruct-Q4_1.gguf"))
    ARGS, rest = ap.parse_known_args()
    if not os.path.isfile(ARGS.model):
        print(f"responses_client_test: {ARGS.model}: the chat model is missing; scripts/setup.sh "
              "fetches it (or set FOLIO_SMOLLM2_GGUF)")
        return 1
    prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
