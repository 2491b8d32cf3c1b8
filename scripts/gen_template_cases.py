#!/usr/bin/env python3
"""Generates tests/jinja/data/: expected chat-template renderings from Python's
jinja2, configured exactly as Hugging Face transformers configures it for
apply_chat_template (transformers/utils/chat_template_utils.py):

    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[AssistantTracker, loopcontrols])
    filters["tojson"]          = json.dumps(x, ensure_ascii=False, indent=None,
                                            separators=None, sort_keys=False)
    globals["raise_exception"] = raise TemplateError(message)
    globals["strftime_now"]    = datetime.now().strftime(format)

and rendered as transformers does: render(messages=..., tools=<list or None>,
documents=None, add_generation_prompt=..., **kwargs), kwargs holding the
special tokens (bos_token, eos_token) and any extra template arguments.

Determinism: strftime_now uses the fixed date FIXED_NOW instead of the clock
(folio's jinja::RenderOptions::now is the same override hook on the C++ side;
tests/jinja/template_corpus_test.cc passes the same date).

Run with the test venv (jinja2 3.1.6, and gguf for the vocabulary part;
transformers itself is not needed):
    /tmp/venvtest/bin/python scripts/gen_template_cases.py

Output:
    tests/jinja/data/snippets.json        small templates exercising one feature
                                          each (whitespace control, expressions,
                                          filters, tests, methods, errors), with
                                          their variables and expected result
    tests/jinja/data/conversations.json   the cases: name, messages, tools,
                                          add_generation_prompt, extra kwargs
    tests/jinja/data/gguf_chat.json       chat templates stored in the refdata
                                          vocabulary GGUF files, rendered with
                                          their BOS / EOS texts (checks
                                          chat::ChatTemplate::from_gguf)
    tests/jinja/data/expected/<template>.json
        {"template": file name, "fnv1a64": hex FNV-1a 64 of the template bytes,
         "results": {case name: {"output": text} or
                                {"error": {"type": exception class, "message": text}}}}
The templates are read from tests/data/templates/*.jinja.
"""

import copy
import glob
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "tests", "data", "templates")
OUT = os.path.join(ROOT, "tests", "jinja", "data")

# 2024-07-26 14:05:09 (a Friday), used by strftime_now in both renderers.
FIXED_NOW = datetime(2024, 7, 26, 14, 5, 9)
BOS = "<|bos|>"
EOS = "<|eos|>"


class AssistantTracker(Extension):
    """transformers' {% generation %} tag; outside assistant-mask tracking it
    renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# ---------------------------------------------------------------------------
# The conversation corpus.

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. \"Paris\" or 'Zürich'"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                             "description": "Temperature unit"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_web",
            "description": "Search the web and return the top results.\nUse sparingly.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Search query"},
                    "max_results": {"type": "integer", "description": "How many results", "default": 5},
                    "filters": {"type": "array", "items": {"type": "string"},
                                "description": "Optional site filters"},
                    "safe": {"type": "boolean"},
                    "threshold": {"type": "number", "minimum": 0.5},
                },
                "required": ["query", "max_results"],
            },
        },
    },
]

SYSTEM = "You are a helpful assistant."
UNICODE_SYSTEM = "Tu es un assistant serviable. Réponds en français — 你好, мир! 🌍"
TRICKY = ("Line one\nLine two with \"double\" and 'single' quotes,\na backslash \\ and a tab\t"
          "<tag> & {{ not_jinja }} {% raw %} 😀 ünïcödé\n")

WEATHER_CALL = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
SEARCH_CALL = {"id": "call_2", "type": "function",
               "function": {"name": "search_web",
                            "arguments": {"query": "best café in Paris", "max_results": 3,
                                          "filters": ["yelp.com", "tripadvisor.com"], "safe": True,
                                          "threshold": 0.75}}}


def string_args(call):
    c = copy.deepcopy(call)
    c["function"]["arguments"] = json.dumps(c["function"]["arguments"], ensure_ascii=False)
    return c


def conversations():
    """(name, messages, tools, extra kwargs) tuples; each is rendered with
    add_generation_prompt false and true."""
    u, a, s = "user", "assistant", "system"

    def m(role, content, **kw):
        d = {"role": role, "content": content}
        d.update(kw)
        return d

    tool_turns = [
        m(u, "What's the weather in Paris?"),
        m(a, "", tool_calls=[WEATHER_CALL]),
        m("tool", "{\"temperature\": 21, \"condition\": \"sunny\"}", tool_call_id="call_1",
          name="get_weather"),
        m(a, "It is 21 °C and sunny in Paris."),
        m(u, "Thanks! Any good café nearby?"),
    ]
    cases = [
        ("user_only", [m(u, "Hello!")], None, {}),
        ("system_user", [m(s, SYSTEM), m(u, "What is 2 + 2?")], None, {}),
        ("multi_turn", [m(s, SYSTEM), m(u, "Hi there."), m(a, "Hello! How can I help you today?"),
                        m(u, "Tell me a joke.")], None, {}),
        ("ends_with_assistant", [m(u, "Hi."), m(a, "Hello."), m(u, "Bye."), m(a, "Goodbye!")], None, {}),
        ("unicode_quotes", [m(s, UNICODE_SYSTEM), m(u, TRICKY), m(a, "Sûr ! « Voilà » — \"ok\" 'ok' \\n"),
                            m(u, "  leading and trailing spaces  \n\n")], None, {}),
        ("empty_system", [m(s, ""), m(u, "Hello?")], None, {}),
        ("think_in_content", [m(u, "Why is the sky blue?"),
                              m(a, "<think>\nRayleigh scattering.\n</think>\n\nBecause of Rayleigh scattering."),
                              m(u, "And sunsets?")], None, {}),
        ("reasoning_content", [m(u, "2+2?"),
                               m(a, "4", reasoning_content="Simple arithmetic: 2+2=4."),
                               m(u, "3+3?")], None, {}),
        # Earlier reasoning sent back by a client, in the field each template
        # family reads: reasoning_content above, gpt-oss's `thinking`, and
        # `reasoning` (folio copies reasoning_content into the template's own
        # field, chat/chat_format.h).
        ("reasoning_thinking", [m(u, "2+2?"),
                                m(a, "4", reasoning_content="Simple arithmetic: 2+2=4.",
                                  thinking="Simple arithmetic: 2+2=4."),
                                m(u, "3+3?")], None, {}),
        ("reasoning_reasoning", [m(u, "2+2?"),
                                 m(a, "4", reasoning_content="Simple arithmetic: 2+2=4.",
                                   reasoning="Simple arithmetic: 2+2=4."),
                                 m(u, "3+3?")], None, {}),
        # Reasoning before a tool call in the current turn, which templates
        # that drop past turns' reasoning still render.
        ("tool_reasoning_content",
         [m(u, "What's the weather in Paris?"),
          m(a, "", tool_calls=[WEATHER_CALL], reasoning_content="Need the weather tool."),
          m("tool", "{\"temperature\": 21}", tool_call_id="call_1", name="get_weather")],
         TOOLS, {}),
        ("tool_reasoning_thinking",
         [m(u, "What's the weather in Paris?"),
          m(a, "", tool_calls=[WEATHER_CALL], reasoning_content="Need the weather tool.",
            thinking="Need the weather tool."),
          m("tool", "{\"temperature\": 21}", tool_call_id="call_1", name="get_weather")],
         TOOLS, {}),
        ("tool_reasoning_reasoning",
         [m(u, "What's the weather in Paris?"),
          m(a, "", tool_calls=[WEATHER_CALL], reasoning_content="Need the weather tool.",
            reasoning="Need the weather tool."),
          m("tool", "{\"temperature\": 21}", tool_call_id="call_1", name="get_weather")],
         TOOLS, {}),
        ("thinking_off", [m(s, SYSTEM), m(u, "Quick answer: capital of France?")], None,
         {"enable_thinking": False}),
        ("thinking_on", [m(u, "Solve x^2 = 4.")], None, {"enable_thinking": True}),
        ("tools_user", [m(u, "What's the weather in Paris?")], TOOLS, {}),
        ("tools_system", [m(s, SYSTEM), m(u, "What's the weather in Paris?")], TOOLS, {}),
        ("tool_call_roundtrip", [m(s, SYSTEM)] + tool_turns, TOOLS, {}),
        ("tool_call_string_args",
         [m(u, "What's the weather in Paris?"),
          m(a, None, tool_calls=[string_args(WEATHER_CALL)]),
          m("tool", "{\"temperature\": 21}", tool_call_id="call_1", name="get_weather"),
          m(a, "21 °C.")], TOOLS, {}),
        ("parallel_tool_calls",
         [m(u, "Weather in Paris, and find a café."),
          m(a, "Let me check both.", tool_calls=[WEATHER_CALL, SEARCH_CALL]),
          m("tool", "{\"temperature\": 21}", tool_call_id="call_1", name="get_weather"),
          m("tool", "[\"Café de Flore\", \"Les Deux Magots\"]", tool_call_id="call_2", name="search_web")],
         TOOLS, {}),
        ("content_parts", [m(u, [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]),
                           m(a, "A short description."), m(u, [{"type": "text", "text": "More?"}])],
         None, {}),
        ("image_part", [m(u, [{"type": "image"}, {"type": "text", "text": "What is in the image?"}])],
         None, {}),
        ("system_only", [m(s, SYSTEM)], None, {}),
        ("assistant_first", [m(a, "I speak first."), m(u, "Okay.")], None, {}),
        ("two_users", [m(u, "First."), m(u, "Second.")], None, {}),
        ("no_messages", [], None, {}),
        ("developer_role", [m("developer", "Answer tersely."), m(u, "Hi.")], None, {}),
        ("system_parts", [m(s, [{"type": "text", "text": "Be brief."}]), m(u, "Hi.")], None, {}),
        ("tools_thinking_off", [m(u, "Weather in Paris?")], TOOLS, {"enable_thinking": False}),
        ("reasoning_effort", [m(s, SYSTEM), m(u, "Think hard: 17 * 23?")], None,
         {"reasoning_effort": "high"}),
        ("tool_call_no_content_key",
         [m(u, "Weather?"), {"role": "assistant", "tool_calls": [WEATHER_CALL]},
          m("tool", "sunny", tool_call_id="call_1")], TOOLS, {}),
        ("two_tool_rounds",
         [m(s, SYSTEM), m(u, "Weather in Paris, then find a café."),
          m(a, None, tool_calls=[WEATHER_CALL]),
          m("tool", "{\"temperature\": 21}", tool_call_id="call_1", name="get_weather"),
          m(a, "Now searching.", tool_calls=[SEARCH_CALL], reasoning_content="Need a café."),
          m("tool", "[\"Café de Flore\"]", tool_call_id="call_2", name="search_web"),
          m(a, "Café de Flore, 21 °C."), m(u, "Great.")], TOOLS, {}),
        # gpt-oss's harmony template: its built-in tools (browser, python)
        # beside function tools, and a model identity line.
        ("builtin_tools", [m(u, "Look up today's news.")], TOOLS,
         {"builtin_tools": ["browser", "python"], "model_identity": "You are a tiny test model."}),
        ("documents", [m(u, "Summarise the documents.")], None,
         {"documents": [{"title": "Doc A", "text": "Paris is the capital of France."},
                        {"title": "Doc B", "text": "Café culture\nis old."}]}),
    ]
    by_name = {c[0]: c for c in cases}
    for name, source, options in GENERIC_CASES:
        cases.append((name, generic_messages(by_name[source][1], TOOLS, **options), None, {}))
    for name, source in PHI4_CASES:
        cases.append((name, phi4_messages(by_name[source][1], TOOLS), None, {}))
    return cases


# ---------------------------------------------------------------------------
# The generic tool format (src/chat/generic_tools.h), written again here as
# the reference its C++ rewrite is tested against: the tools described in a
# system message (or the first user message), earlier calls as JSON content,
# tool results as user messages, consecutive user messages joined.

def generic_tools_text(tools, allow_response, only_tool, parallel):
    name = only_tool or "<tool name>"
    call = '{"name": "%s", "arguments": {<arguments>}}' % name
    example = '{"tool_calls": [%s, ...]}' % call if parallel else '{"tool_call": %s}' % call
    lines = []
    for t in tools:
        f = t.get("function", t)
        d = {"name": f.get("name", "")}
        if "description" in f:
            d["description"] = f["description"]
        d["parameters"] = f.get("parameters", {})
        lines.append(json.dumps(d, ensure_ascii=False))
    s = "You can call these tools:\n" + "".join(line + "\n" for line in lines)
    s += "\nAnswer with one JSON object"
    if allow_response:
        s += ': %s to call %s, or {"response": "<your answer>"} to answer the user.' % (
            example, "tools" if parallel else "a tool")
    elif only_tool:
        s += " that calls %s: %s." % (only_tool, example)
    else:
        s += " that calls %s: %s." % ("tools" if parallel else "a tool", example)
    s += '\nTool results come back as {"tool_response": {"tool": "<tool name>", "content": ...}}.'
    return s


def generic_messages(messages, tools, allow_response=True, only_tool="", parallel=True,
                     system_in_user=False):
    out, names = [], {}
    text = lambda c: c is None or isinstance(c, str)  # noqa: E731
    for m in copy.deepcopy(messages):
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m.pop("tool_calls"):
                f = c.get("function", c)
                args = f.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                call = {"name": f.get("name", ""), "arguments": args}
                if isinstance(c.get("id"), str):
                    call["id"] = c["id"]
                    names[c["id"]] = call["name"]
                calls.append(call)
            written = {"tool_call": calls[0]} if not parallel and len(calls) == 1 else {"tool_calls": calls}
            m["content"] = json.dumps(written, ensure_ascii=False)
        elif role == "tool":
            call_id = m.get("tool_call_id") if isinstance(m.get("tool_call_id"), str) else ""
            name = m.get("name") if isinstance(m.get("name"), str) else ""
            r = {"tool": name or names.get(call_id, "")}
            if call_id:
                r["tool_call_id"] = call_id
            r["content"] = m.get("content", "")
            m = {"role": "user", "content": json.dumps({"tool_response": r}, ensure_ascii=False)}
        if (m.get("role") == "user" and out and out[-1].get("role") == "user"
                and text(out[-1]["content"]) and text(m["content"])):
            out[-1]["content"] = (out[-1]["content"] or "") + "\n\n" + (m["content"] or "")
            continue
        out.append(m)
    t = generic_tools_text(tools, allow_response, only_tool, parallel)
    if not system_in_user:
        if out and out[0].get("role") == "system" and text(out[0]["content"]):
            out[0]["content"] = (out[0]["content"] + "\n\n" + t) if out[0]["content"] else t
        else:
            out.insert(0, {"role": "system", "content": t})
        return out
    for m in out:
        if m.get("role") == "user" and text(m["content"]):
            m["content"] = t + "\n\n" + (m["content"] or "")
            return out
    out.append({"role": "user", "content": t})
    return out


# (case name, source conversation, options): rendered with tools=None, as
# folio renders the rewritten conversation.
GENERIC_CASES = [
    ("generic_tools", "tool_call_roundtrip", {}),
    ("generic_tools_required", "parallel_tool_calls",
     {"allow_response": False, "parallel": False, "system_in_user": True}),
    ("generic_tools_named", "two_tool_rounds",
     {"allow_response": False, "only_tool": "get_weather"}),
]


# ---------------------------------------------------------------------------
# Phi-4-mini's tools (src/chat/phi4_tools.h), written again here as the
# reference its C++ rewrite is tested against: the tools' function objects
# as the system message's "tools" JSON text, earlier calls appended to the
# assistant's content between <|tool_call|> and <|/tool_call|>.

PHI4_SYSTEM = "You are a helpful assistant with some tools."


def phi4_messages(messages, tools):
    out = []
    for m in copy.deepcopy(messages):
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m.pop("tool_calls"):
                f = c.get("function", c)
                args = f.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                calls.append({"name": f.get("name", ""), "arguments": args})
            text = m.get("content") if isinstance(m.get("content"), str) else ""
            m["content"] = text + "<|tool_call|>" + json.dumps(calls, ensure_ascii=False) + "<|/tool_call|>"
        out.append(m)
    functions = []
    for t in tools:
        f = t.get("function", t)
        d = {"name": f.get("name", "")}
        if "description" in f:
            d["description"] = f["description"]
        d["parameters"] = f.get("parameters", {})
        functions.append(d)
    text = json.dumps(functions, ensure_ascii=False)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["tools"] = text
    else:
        out.insert(0, {"role": "system", "content": PHI4_SYSTEM, "tools": text})
    return out


# (case name, source conversation): rendered with tools=None, as folio
# renders the rewritten conversation.
PHI4_CASES = [
    ("phi4_tools", "tool_call_roundtrip"),
    ("phi4_tools_parallel", "parallel_tool_calls"),
    ("phi4_tools_no_system", "tools_user"),
]


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def render_case(template, case, agp):
    name, messages, tools, kwargs = case
    args = dict(messages=copy.deepcopy(messages), tools=copy.deepcopy(tools), documents=None,
                add_generation_prompt=agp, bos_token=BOS, eos_token=EOS)
    args.update(copy.deepcopy(kwargs))
    try:
        return {"output": template.render(**args)}
    except Exception as e:  # noqa: BLE001 - every failure is a recorded expectation
        return {"error": {"type": type(e).__name__, "message": str(e)}}


# ---------------------------------------------------------------------------
# Feature snippets: (name, template, variables).

V = {"s": "Hello World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 2, "a": 1, "C": 3},
     "u": "héllo wörld ΣΑΣ", "e": "", "none": None, "t": True,
     "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
              {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}],
     "users": [{"name": "bob", "age": 30}, {"name": "Alice", "age": 25}, {"name": "carl", "age": 30}]}

SNIPPETS = [
    # whitespace control, trim_blocks, lstrip_blocks
    ("ws_trim_blocks", "{% if t %}\nyes\n{% endif %}\nend", V),
    ("ws_lstrip", "  {% if t %}\n  x\n  {% endif %}\n", V),
    ("ws_minus", "a  {%- if t -%}  b  {%- endif -%}  c", V),
    ("ws_var_minus", "a \n {{- s -}} \n b", V),
    ("ws_plus", "  {%+ if t +%}\nx\n  {%+ endif %}", V),
    ("ws_comment", "a\n  {# note #}\nb {#- x -#} c", V),
    ("ws_var_no_lstrip", "  {{ s }}\n{{ n }}\n", V),
    ("ws_crlf", "a\r\n{% if t %}\r\nb\r\n{% endif %}\r\n", V),
    ("ws_trailing_newline", "x\n", V),
    ("ws_raw", "{% raw %}{{ not }} {% if %}{% endraw %}", V),
    ("ws_tab_lstrip", "\t {% if t %}x{% endif %}", V),
    ("ws_mid_line_block", "a {% if t %}b{% endif %} c", V),
    ("ws_unicode_space", "a\u00a0{%- if t %}b{% endif %}", V),
    # literals and printing
    ("print_types", "{{ 1 }} {{ 1.0 }} {{ 1e20 }} {{ 0.1 }} {{ 1.5e-7 }} {{ true }} {{ none }} {{ 'x' }}", V),
    ("print_containers", "{{ [1, 'a', none, true, 2.5] }} {{ {'k': [1, (2, 3)], 'q': 'it\\'s'} }} {{ (1,) }}", V),
    ("print_repr_quotes", "{{ ['a\"b', \"c'd\", 'e\\nf', 'tab\\t', 'uni é ☃'] }}", V),
    ("print_undefined", "[{{ missing }}][{{ d.missing }}]", V),
    ("string_escapes", "{{ 'a\\tb\\x41\\u00e9\\\\ \\d' }}", V),
    ("string_concat_literals", "{{ 'a' 'b' \"c\" }}", V),
    ("int_literals", "{{ 0x1f }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1_0.5 }}", V),
    # arithmetic
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7 / 2 }} {{ 6 / 2 }} {{ 1 + 2.5 }} {{ true + 1 }}", V),
    ("arith_float", "{{ 0.1 + 0.2 }} {{ 5.5 // 2 }} {{ -5.5 % 2 }} {{ 10 / 4 }} {{ 1e16 * 10 }} {{ 2.0 ** 0.5 }}", V),
    ("concat_tilde", "{{ 1 ~ 'a' ~ none ~ true ~ [1] ~ missing }}", V),
    ("string_mul", "{{ 'ab' * 3 }}{{ 2 * 'x' }}{{ [1, 2] * 2 }}{{ 'x' * -1 }}", V),
    ("list_add", "{{ [1] + [2, 3] }}{{ (1,) + (2,) }}", V),
    ("unary", "{{ -n }} {{ +f }} {{ -(-3) }} {{ not t }} {{ not e }}", V),
    ("compare_chain", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }}", V),
    ("in_ops", "{{ 'ell' in s }} {{ 2 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ 1 in [1.0] }} {{ missing in l }}", V),
    ("and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ e or none or 'last' }} {{ n and 0 }}", V),
    ("condexpr", "{{ 'y' if t else 'n' }} {{ 'y' if e else 'n' }} [{{ 'y' if e }}] {{ 1 if false else 2 if true else 3 }}", V),
    ("condexpr_undefined_use", "{{ (1 if false) + 1 }}", V),
    # subscripts and slicing
    ("subscripts", "{{ l[0] }} {{ l[-1] }} {{ s[1] }} {{ s[-1] }} {{ d['a'] }} {{ d.b }} {{ msgs[1].content }} {{ l.0 }}", V),
    ("slices", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ s[::2] }} {{ s[-5:] }} {{ u[1:4] }} {{ l[5:] }} {{ s[:100] }}", V),
    ("slice_step_zero", "{{ l[::0] }}", V),
    ("index_out_of_range", "[{{ l[10] }}]", V),
    ("index_oob_attr", "{{ l[10].x }}", V),
    ("getattr_methods_vs_keys", "{{ d.items is defined }} {{ d['items'] is defined }} {{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }}", V),
    ("undefined_attr_chain", "{{ missing.attr }}", V),
    ("dict_missing_attr_chain", "{{ d.nope.deeper }}", V),
    ("none_attr", "{{ none.x }}", V),
    ("none_item", "{{ none[0] }}", V),
    # statements
    ("for_loop_vars", "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", V),
    ("for_prev_next", "{% for x in l %}[{{ loop.previtem }},{{ loop.nextitem }}]{% endfor %}", V),
    ("for_cycle", "{% for x in l %}{{ loop.cycle('a', 'b') }}{% endfor %}", V),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}", V),
    ("for_filter", "{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}", V),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", V),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", V),
    ("for_string", "{% for c in 'héy' %}[{{ c }}]{% endfor %}", V),
    ("for_nested_loop", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", V),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", V),
    ("for_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}", V),
    ("for_none", "{% for x in none %}{% endfor %}", V),
    ("for_int", "{% for x in 5 %}{% endfor %}", V),
    ("for_unpack_bad", "{% for a, b in [1] %}{% endfor %}", V),
    ("for_changed", "{% for x in [1, 1, 2] %}{{ loop.changed(x) }}{% endfor %}", V),
    ("for_recursive", "{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}]}] recursive %}{{ item.n }}({{ loop.depth }}){{ loop(item.c) }}{% endfor %}", V),
    ("if_elif", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %}{% endfor %}", V),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", V),
    ("set_block", "{% set x %}Hello {{ n }}{% endset %}[{{ x }}]", V),
    ("set_block_filter", "{% set x | upper %}hello{% endset %}{{ x }}", V),
    ("namespace", "{% set ns = namespace(a=1, l=[]) %}{% for i in [1, 2] %}{% set ns.a = ns.a + i %}{% set ns.l = ns.l + [i] %}{% endfor %}{{ ns.a }}{{ ns.l }}{{ ns }}", V),
    ("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns.c is defined }}", V),
    ("namespace_assign_non_ns", "{% set x = 1 %}{% set x.y = 2 %}", V),
    ("macro_basic", "{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|{{ m(b=5, a=4) }}", V),
    ("macro_missing_arg", "{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}", V),
    ("macro_too_many", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", V),
    ("macro_bad_kwarg", "{% macro m(a) %}{% endmacro %}{{ m(1, z=2) }}", V),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", V),
    ("macro_closure", "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}", V),
    ("macro_recursion", "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}", V),
    ("macro_default_refers_param", "{% macro m(a, b=a * 2) %}{{ a }}{{ b }}{% endmacro %}{{ m(3) }}", V),
    ("macro_repr", "{% macro m() %}{% endmacro %}{{ m }}", V),
    ("macro_returns_str", "{% macro m() %}x{% endmacro %}{{ m() ~ 'y' }}{{ m() is string }}", V),
    ("call_block", "{% macro wrap(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call wrap('b') %}inner {{ n }}{% endcall %}", V),
    ("call_block_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}[{{ v }}]{% endcall %}", V),
    ("filter_block", "{% filter upper %}hello {{ s }}{% endfilter %}", V),
    ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", V),
    ("generation_tag", "{% generation %}gen {{ n }}{% endgeneration %}", V),
    ("print_tag", "{% print 'a', 1 %}", V),
    # filters
    ("f_length", "{{ l|length }} {{ s|length }} {{ d|length }} {{ u|length }} {{ missing|length }} {{ l|count }}", V),
    ("f_length_int", "{{ n|length }}", V),
    ("f_default", "{{ missing|default('x') }} {{ e|default('y') }} {{ e|default('z', true) }} {{ none|d('w') }} {{ missing|d }}", V),
    ("f_join", "{{ l|join(', ') }} {{ users|join('/', attribute='name') }} {{ [1, none, 'a']|join }}", V),
    ("f_map_select", "{{ users|map(attribute='name')|list }} {{ users|selectattr('age', 'equalto', 30)|map(attribute='name')|join(',') }} {{ users|rejectattr('age', '==', 30)|list }} {{ l|select('odd')|list }} {{ l|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }}", V),
    ("f_map_filter", "{{ ['a', 'B']|map('upper')|list }} {{ [1.5, 2.5]|map('round')|list }} {{ users|map(attribute='x', default='?')|list }}", V),
    ("f_generator_tojson", "{{ users|map(attribute='name')|tojson }}", V),
    ("f_generator_length", "{{ users|map(attribute='name')|length }}", V),
    ("f_selectattr_truthy", "{{ msgs|selectattr('tool_calls')|list|length }} {{ msgs|selectattr('role', 'in', ['user', 'system'])|list|length }}", V),
    ("f_tojson", "{{ d|tojson }} {{ msgs|tojson }} {{ 'é\"\\n'|tojson }} {{ [1.0, 1e-7, none, true]|tojson }}", V),
    ("f_tojson_args", "{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ [1, [2, {}]]|tojson(indent=1) }}|{{ d|tojson(separators=(',', ':')) }}", V),
    ("f_tojson_undefined", "{{ missing|tojson }}", V),
    ("f_tojson_key_types", "{{ {1: 'a', none: 'b', true: 'c', 2.5: 'd'}|tojson }}", V),
    ("f_trim_strip", "[{{ '  a b  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ ' \u3000a\n'|trim }}]", V),
    ("f_case", "{{ s|upper }} {{ s|lower }} {{ 'hello wORLD'|capitalize }} {{ 'hello-world foo(bar)'|title }} {{ u|upper }} {{ 'ΣΑΣ ΟΔΟΣ'|lower }}", V),
    ("f_replace", "{{ s|replace('o', '0') }} {{ s|replace('o', '0', 1) }} {{ 'aaa'|replace('', '-') }}", V),
    ("f_string_int_float", "{{ 5|string }} {{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(9) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ '2.5'|float }} {{ 'a'|float }} {{ 3|float }}", V),
    ("f_first_last", "{{ l|first }} {{ l|last }} {{ s|first }} [{{ []|first }}] {{ d|first }}", V),
    ("f_items_dictsort", "{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value', reverse=true) }}", V),
    ("f_items_non_mapping", "{% for k, v in l|items %}{% endfor %}", V),
    ("f_sort_unique", "{{ l|sort }} {{ l|sort(reverse=true) }} {{ users|sort(attribute='name')|map(attribute='name')|list }} {{ ['b', 'A', 'a', 'B']|unique|list }} {{ ['b', 'A', 'a']|sort }} {{ users|sort(attribute='age,name')|map(attribute='name')|join }}", V),
    ("f_min_max_sum", "{{ l|min }} {{ l|max }} {{ l|sum }} {{ users|sum(attribute='age') }} {{ users|max(attribute='age') }} {{ ['b', 'A']|min }}", V),
    ("f_reverse", "{{ s|reverse }} {{ l|reverse|list }}", V),
    ("f_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(0, 'floor') }} {{ 7|round }}", V),
    ("f_indent", "{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent('> ', blank=true) }}", V),
    ("f_safe_markup", "{{ ('<a>'|safe) + '<b>' }} {{ '<b>' + ('x'|safe) }} {{ ('<'|safe) ~ '<' }} {{ '<&>'|escape }} {{ ('a'|safe) is string }}", V),
    ("f_list_string", "{{ 'abc'|list }} {{ d|list }} {{ none|string }} {{ [1]|string }}", V),
    ("f_batch_slice", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3, 4, 5]|batch(2, 0)|list }} {{ [1, 2, 3, 4, 5]|slice(2)|list }}", V),
    ("f_wordcount_truncate_center", "{{ 'a b  c_d'|wordcount }} {{ 'foo bar baz qux'|truncate(9) }} {{ 'foo bar baz qux'|truncate(9, true) }} [{{ 'ab'|center(6) }}]", V),
    ("f_format", "{{ '%s-%d-%.2f-%5s-%-4d|%x'|format('a', 3, 2.5, 'r', 7, 255) }}", V),
    ("f_attr", "{{ d|attr('items') is defined }} {{ d|attr('a') is defined }}", V),
    ("f_unknown_in_if", "{% if false %}{{ x|nosuchfilter }}{% endif %}ok", V),
    ("f_unknown_in_if_runs", "{% if true %}{{ x|nosuchfilter }}{% endif %}", V),
    ("f_unknown_toplevel", "{{ x|nosuchfilter }}", V),
    # tests
    ("tests_types", "{{ s is string }} {{ n is number }} {{ t is number }} {{ n is integer }} {{ t is integer }} {{ f is float }} {{ t is boolean }} {{ none is none }} {{ d is mapping }} {{ l is sequence }} {{ s is sequence }} {{ d is sequence }} {{ n is sequence }}", V),
    ("tests_iterable", "{{ l is iterable }} {{ s is iterable }} {{ n is iterable }} {{ missing is iterable }} {{ missing is sequence }} {{ (l|map('string')) is iterable }} {{ (l|map('string')) is sequence }}", V),
    ("tests_defined", "{{ missing is defined }} {{ missing is undefined }} {{ d.a is defined }} {{ d.zz is defined }} {{ none is defined }} {{ missing is not defined }}", V),
    ("tests_values", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ t is true }} {{ 1 is true }} {{ false is false }} {{ 2 is eq 2 }} {{ 2 is ne 3 }} {{ 2 is gt 1 }} {{ 2 is lt 1 }} {{ 'a' is in 'abc' }} {{ 'ABC' is upper }} {{ 'abc' is lower }} {{ d.get is callable }} {{ l is sameas l }}", V),
    ("tests_escaped_filter", "{{ ('x'|safe) is escaped }} {{ 'x' is escaped }} {{ 'upper' is filter }} {{ 'nope' is test }}", V),
    # methods
    ("m_str", "{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ ' a'.lstrip() }}|{{ 'a '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'a\nb\r\nc'.splitlines() }}", V),
    ("m_str2", "{{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ 'hello'.capitalize() }} {{ s.replace('l', 'L', 2) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }} {{ s.swapcase() }}", V),
    ("m_str3", "{{ 'abc'.index('c') }} {{ 'x'.center(5, '*') }} {{ 'x'.ljust(3, '.') }} {{ 'x'.rjust(3) }} {{ '42'.zfill(5) }} {{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.removeprefix('a') }} {{ 'abc'.removesuffix('c') }} {{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'aB'.islower() }}", V),
    ("m_str_format", "{{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} {{ '{:>5}|{:<4}|{:^6}|{:05d}|{:.3f}|{:,}|{:x}|{:#b}|{:+d}|{:.2%}|{:e}|{:g}'.format('a', 'b', 'c', 42, 3.14159, 1234567, 255, 5, 3, 0.25, 12345.678, 0.0001) }} {{ '{{}}'.format() }} {{ '{!r}'.format('q') }} {{ '{0[a]} {1.b}'.format({'a': 1}, {'b': 2}) }}", V),
    ("m_str_format_errors", "{{ '{} {}'.format(1) }}", V),
    ("m_str_percent", "{{ '%s is %d years' % ('bob', 30) }} {{ '%(a)s-%(b)05.1f' % {'a': 'x', 'b': 2.25} }} {{ '%%' % () }} {{ '%r' % 'q' }}", V),
    ("m_dict", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.items()|length }} {{ 'a' in d.keys() }}", V),
    ("m_dict_views_print", "{{ d.items() }} {{ d.keys() }}", V),
    ("m_list", "{{ l.index(1) }} {{ l.count(3) }} {{ [1, 2].copy() }}", V),
    ("m_list_append_unsafe", "{% set x = [] %}{{ x.append(1) }}", V),
    ("m_dict_pop_unsafe", "{{ d.pop('a') }}", V),
    ("m_unsafe_defined", "{{ l.append is defined }} {{ d.update is defined }}", V),
    ("m_not_callable", "{{ s() }}", V),
    # errors and undefined
    ("err_raise_exception", "{{ raise_exception('Custom failure: ' ~ n) }}", V),
    ("err_add_str_int", "{{ 'a' + 1 }}", V),
    ("err_add_int_str", "{{ 1 + 'a' }}", V),
    ("err_add_none", "{{ none + 'a' }}", V),
    ("err_add_list_str", "{{ [1] + 'a' }}", V),
    ("err_compare_types", "{{ 'a' < 1 }}", V),
    ("err_undefined_add", "{{ missing + 1 }}", V),
    ("err_in_string_int", "{{ 1 in 'abc' }}", V),
    ("err_in_none", "{{ 'a' in none }}", V),
    ("err_div_zero", "{{ 1 / 0 }}", V),
    ("err_floordiv_zero", "{{ 1 // 0 }}", V),
    ("err_mod_zero", "{{ 1 % 0 }}", V),
    ("err_call_undefined", "{{ missing() }}", V),
    ("err_iterate_undefined_attr", "{% for x in d.nope %}{% endfor %}ok", V),
    ("err_unary_str", "{{ -'a' }}", V),
    ("err_range_too_big", "{{ range(100001)|length }}", V),
    ("range_ok", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }}", V),
    ("err_unhashable_key", "{{ {[1]: 2} }}", V),
    ("strftime", "{{ strftime_now('%Y-%m-%d %H:%M:%S %a %b %d %B %A %j %%') }}", V),
    ("dict_global", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {{ dict({'k': 'v'}, z=0) }}", V),
    ("cycler_joiner", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{% set j = joiner('|') %}{% for x in l %}{{ j() }}{{ x }}{% endfor %}", V),
    ("unicode_passthrough", "{{ u }} {{ u|length }} {{ u[0] }} {{ u.split(' ') }} {{ u|tojson }} {{ u|tojson(ensure_ascii=true) }}", V),
    ("emoji_astral", "{{ '😀a'|length }} {{ '😀a'[0] }} {{ '😀'|tojson(ensure_ascii=true) }} {{ ['😀'] }}", V),
    # lexer / parser edge cases
    ("lex_string_with_delims", "{{ '}}' ~ \"%}\" ~ '{{' }}|{{ {'a': {'b': 1}} }}", V),
    ("lex_raw_ws", "x  {%- raw -%}  a {{ b }}  {%- endraw -%}  y", V),
    ("lex_comment_lstrip_line_start", "{# c #}\n  {# d #}\nA\n    {%- if t %}\n B{% endif %}", V),
    ("lex_block_after_minus_end", "{% if t -%}\n\n   {% if t %}x{% endif %}\n{%- endif %}", V),
    ("lex_trailing_commas", "{{ [1, 2,] }} {{ {'a': 1,} }} {{ (1, 2,) }} {{ d.get('a',) }}", V),
    ("lex_names_keywords", "{{ True }} {{ False }} {{ None }} {% set in_x = 1 %}{{ in_x }} {% set not_y = 2 %}{{ not_y }}", V),
    ("prec_unary_filter", "{{ -1|abs }} {{ -n|string }} {{ not missing is defined }} {{ n is not none and t }} {{ 1 + 2|string ~ 'x' }}", V),
    ("prec_tests_args", "{{ 9 is divisibleby 3 }} {{ none is sameas none }} {{ n is eq 7 and t }} {{ (n is gt 3) or false }}", V),
    ("prec_pow_unary", "{{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ (-2) ** 2 }}", V),
    ("prec_concat_math", "{{ 1 + 2 ~ 3 * 2 }} {{ 'a' ~ 1 + 2 }}", V),
    ("condexpr_filter_chain", "{% set x = missing | default('a') if t else 'b' %}{{ x }} {{ (none|default(none)) is none }}", V),
    ("cmp_misc", "{{ missing == none }} {{ missing != 1 }} {{ none == none }} {{ [] == [] }} {{ [1] == (1,) }} {{ {'a': 1} == {'a': 1.0} }} {{ 'é' > 'z' }} {{ 2 > 1.5 }}", V),
    ("float_repr_more", "{{ 1e-5 }} {{ 0.0001 }} {{ 123456789012345678.0 }} {{ -0.0 }} {{ 'nan'|float }} {{ 'inf'|float }} {{ 1.0e16 }} {{ 9999999999999998.0 }} {{ 2.5e-300 * 1e-300 }}", V),
    ("float_div_misc", "{{ 10 // 3.0 }} {{ -7.5 // 2 }} {{ 7 % 2.5 }} {{ 2 ** 0.5 * 2 ** 0.5 }} {{ 1 / 3 }}", V),
    ("round_misc", "{{ 2.5|round(0) }} {{ 0.125|round(2) }} {{ 1234.5678|round(-2) }} {{ 5|round(2) }}", V),
    ("loop_depth_nonrecursive", "{% for x in [1] %}{{ loop.depth }}{{ loop.depth0 }}{{ loop }}{% endfor %}", V),
    ("set_in_if_in_for", "{% for x in [1, 2] %}{% if x == 1 %}{% set y = 'one' %}{% endif %}[{{ y }}]{% endfor %}[{{ y }}]", V),
    ("macro_calls_later_macro", "{% macro a() %}A{{ b() }}{% endmacro %}{% macro b() %}B{% endmacro %}{{ a() }}", V),
    ("macro_no_caller", "{% macro m() %}[{{ caller() }}]{% endmacro %}{{ m() }}", V),
    ("macro_in_loop_scope", "{% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}", V),
    ("macro_sets_dont_leak", "{% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}", V),
    ("macro_namespace_mutation", "{% set ns = namespace(c=0) %}{% macro inc() %}{% set ns.c = ns.c + 1 %}{% endmacro %}{{ inc() }}{{ inc() }}{{ ns.c }}", V),
    ("range_slice", "{{ range(10)[2:5] }} {{ range(-3, 3)|list }} {{ range(3)|join(',') }}", V),
    ("join_ints_dictsort_first", "{{ [1, 2, 3]|join(',') }} {{ d|dictsort|first }} {{ d|dictsort|last }}", V),
    ("percent_misc", "{{ '%s' % [1, 2] }} {{ '%s|%s' % ('a', none) }} {{ '%5.1f|%-6s|%03d' % (3.14159, 'ab', 7) }}", V),
    ("percent_not_enough", "{{ '%s %s' % ('a',) }}", V),
    ("percent_too_many", "{{ '%s' % ('a', 'b') }}", V),
    ("format_misc", "{{ '{:10}|{:<10}|{:*^9}|{:=+8.2f}'.format(3, 'x', 'mid', 2.5) }} {{ '{:.1f}'.format(0.05) }} {{ '{}'.format(none) }} {{ '{}'.format([1]) }} {{ '{:.0f}'.format(2.5) }}", V),
    ("str_methods_unicode", "{{ 'ÉCOLE'.lower() }} {{ 'straße'.upper() }} {{ 'ǆ'.upper() }} {{ 'ß'.title() }} {{ '  é  '.strip() }} {{ 'a\u2003b'.split() }}", V),
    ("startswith_tuple_bounds", "{{ 'abcdef'.startswith('cd', 2) }} {{ 'abcdef'.endswith('cd', 0, 4) }} {{ 'abc'.startswith(('x', 'a')) }} {{ ''.startswith('') }}", V),
    ("split_maxsplit_ws", "{{ '  a  b  c  '.split(none, 1) }} {{ '  a  b  c  '.rsplit(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ''.split() }} {{ ''.split(',') }}", V),
    ("replace_count_unicode", "{{ 'ééé'.replace('é', 'e', 2) }} {{ 'abc'.replace('', '|') }} {{ 'aaa'.replace('a', 'b', 0) }}", V),
    ("find_unicode_index", "{{ 'héllo'.find('l') }} {{ 'héllo'.index('o') }} {{ 'héllo'.rfind('l') }} {{ 'héllo'.find('l', 3) }} {{ 'héllo'.find('', 10) }}", V),
    ("tojson_special_floats", "{{ ['nan'|float, 'inf'|float, '-inf'|float, 1e100, 0.1]|tojson }}", V),
    ("tojson_markup_tuple", "{{ ('<x>'|safe)|tojson }} {{ (1, 'a')|tojson }} {{ {'k': (1,)}|tojson }}", V),
    ("tojson_control_chars", "{{ '\\x00\\x1f\\x7f\\u2028\\t'|tojson }} {{ '\\x7f\\u2028'|tojson(ensure_ascii=true) }}", V),
    ("tojson_indent_string_zero", "{{ [1, {'a': []}]|tojson(indent='\\t') }}|{{ [1, 2]|tojson(indent=0) }}", V),
    ("undefined_ops", "{{ missing|length }} {{ missing|list }} {{ missing|join }} {{ missing|string }}[{{ missing|trim }}] {{ missing|upper }} {{ missing is iterable }}", V),
    ("undefined_int", "{{ missing|int }}", V),
    ("undefined_iter_items", "{% for k, v in missing|items %}x{% endfor %}ok", V),
    ("undefined_call_method", "{{ d.nope.strip() }}", V),
    ("undefined_getitem_on_undefined", "{{ missing['x'] }}", V),
    ("undefined_compare", "{{ missing < 1 }}", V),
    ("undefined_in", "{{ 1 in missing }} {{ missing in [1] }}", V),
    ("tuple_index_key", "{% set t = {(1, 2): 'pair'} %}{{ t[1, 2] }} {{ t[(1, 2)] }}", V),
    ("dict_int_keys", "{% set m = {1: 'a', True: 'b', 1.0: 'c'} %}{{ m }} {{ m[1] }} {{ m|length }}", V),
    ("items_method_vs_filter", "{{ d.items()|list == d|items|list }} {{ (d|items) is sequence }}", V),
    ("loop_items_after_filter", "{% for x in users|selectattr('age', 'gt', 26) %}{{ x.name }}{{ loop.last }}{% endfor %}", V),
    ("generator_single_pass", "{% set g = l|map('string') %}{{ g|list }}{{ g|list }}", V),
    ("selectattr_missing_attr", "{{ msgs|selectattr('tool_calls', 'defined')|list|length }} {{ msgs|rejectattr('tool_calls')|map(attribute='role')|join(',') }}", V),
    ("map_nested_attr", "{{ msgs|selectattr('tool_calls', 'defined')|map(attribute='tool_calls.0.function.name')|list }}", V),
    ("unique_attr", "{{ users|unique(attribute='age')|map(attribute='name')|list }}", V),
    ("string_multiline_literal", "{{ 'line1\nline2' }}|{{ \"a\\\nb\" }}", V),
    # syntax errors (message and line are compared)
    ("syn_unclosed_if", "a\n{% if t %}\nb", V),
    ("syn_unknown_tag", "{% frobnicate %}", V),
    ("syn_unbalanced_end", "{% for x in l %}{% endif %}", V),
    ("syn_stray_end", "text\n\n{% endfor %}", V),
    ("syn_bad_expression", "{{ 1 + }}", V),
    ("syn_unclosed_paren", "{{ (1 + 2 }}", V),
    ("syn_unclosed_var", "line1\n{{ x", V),
    ("syn_unclosed_comment", "{# never closed", V),
    ("syn_unclosed_string", "{{ 'abc }}", V),
    ("syn_bad_char", "{{ a ! b }}", V),
    ("syn_for_missing_in", "{% for x l %}{% endfor %}", V),
    ("syn_tag_name_expected", "{% 'x' %}", V),
    ("syn_chained_is", "{{ x is defined is defined }}", V),
    ("syn_set_const", "{% set 1 = 2 %}", V),
    ("syn_macro_default_order", "{% macro m(a=1, b) %}{% endmacro %}", V),
    ("syn_unknown_test", "{{ x is frob }}", V),
    ("syn_unknown_filter_in_loop_in_if", "{% if t %}{% for x in l %}{{ x|frob }}{% endfor %}{% endif %}", V),
    ("syn_bad_escape", "{{ '\\x4' }}", V),
    ("syn_mismatched_bracket", "{{ [1, 2) }}", V),
    # more whitespace, unpacking, calls and casing
    ("ws_lstrip_minus_mix", "a\n  {%- if true %}\n  b\n  {%- endif %}\nc", V),
    ("ws_trailing_spaces_after_tag", "{% if true %}  \n  x{% endif %}", V),
    ("ws_comment_then_var", "  {# c #}  \n  {{ 1 }}\n", V),
    ("ws_minus_plus_mix", "{%- for i in [1,2] -%}\n  {{ i }}\n{%- endfor %}\n  {%+ if true %}y{% endif +%}\nz", V),
    ("ws_raw_minus", "{% raw -%}\n  {{ x }}\n  {%- endraw %}!", V),
    ("ws_tabs", "\t{% if true %}\t\n\tx\n\t{% endif %}\t\n", V),
    ("ws_macro_def_lines", "line\n{% macro m() %}\n  body\n{% endmacro %}\n{{ m() }}|", V),
    ("ws_set_block_lines", "{% set x %}\n  a\n  {% if true %}b{% endif %}\n{% endset %}[{{ x }}]", V),
    ("ws_var_plus", "{{- 'a' -}}\n\n{{- 'b' }}  {{+ 'c' }}", V),
    ("for_nested_unpack", "{% for a, (b, c) in [(1, (2, 3))] %}{{ a }}{{ b }}{{ c }}{% endfor %}", V),
    ("macro_star_args", "{% macro m(x) -%}\n[{{ x }}]\n{%- endmacro %}{{ m(1) }}{{ m(x=2) }}{{ m(*[3]) }}{{ m(**{'x': 4}) }}", V),
    ("format_nested_spec", "{{ '{0:>{1}}'.format('a', 4) }}", V),
    ("tuple_methods", "{% set t = (1, 2) %}{{ t[0] }}{{ t|list }}{{ t is sequence }}{{ t.index(2) }}{{ t.count(1) }}", V),
    ("slices_negative", "{{ [1, 2, 3][-5:-1] }} {{ 'abcdef'[-3:] }} {{ 'abcdef'[10:20] }} {{ [1,2,3][::-2] }} {{ 'abc'[1:-1:1] }}", V),
    ("case_special", "{{ 'é'|upper }} {{ 'ÿ'|upper }} {{ 'Σ'|lower }} {{ 'İ'|lower|length }} {{ 'ǈ'|lower }} {{ 'ﬁ'|upper }}", V),
    ("range_slices", "{{ range(10)[::-3] }} {{ range(0, 20, 3)[1:5:2] }} {{ range(5)[10:] }} {{ range(3) }} {{ range(1, 2, 3) }}", V),
    ("range_tojson", "{{ range(3)|tojson }}", V),
    ("strftime_long", "{{ strftime_now('%c' * 40)|length }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%-d %B') }}", V),
    ("sum_start_truncate_leeway", "{{ [1,2,3]|sum(start=10) }} {{ [0.1, 0.2]|sum }} {{ 'hello world'|truncate(8, leeway=0) }}", V),
    ("percent_conversions", "{{ '%.3s|%5.2f%%|%c|%o|%#x|%+.1e' % ('abcdef', 12.345, 65, 8, 255, 12345.678) }}", V),
    ("format_conversions", "{{ '{:^10.3}|{:08.3f}|{:,.2f}|{:_d}|{:X}|{:o}|{:c}'.format('abcdef', -3.14159, 1234567.891, 1000000, 255, 8, 65) }}", V),
    ("title_apostrophes", "{{ 'a-b_c d'.title() }} {{ 'a-b_c d'|title }} {{ \"they're bill's\"|title }} {{ \"they're\".title() }}", V),
    ("float_inf_nan_ops", "{{ '' ~ 1.5e300 * 1e300 }} {{ -1.5e300 * 1e300 }} {{ (1.5e300 * 1e300) - (1.5e300 * 1e300) }}", V),
    ("int_div_mod_signs", "{{ 7 // -2 }} {{ 7 % -2 }} {{ -7.0 // 2 }} {{ 7.0 % -2 }} {{ 2 ** 62 }} {{ (-2) ** 63 }}", V),
    ("loop_outside", "{{ loop }}{% for x in [1] %}{{ loop.length }}{% endfor %}{{ loop is defined }}", V),
    ("name_before_set_in_loop", "{{ x }}{% set x = 'a' %}{% for i in [1] %}{{ x }}{% set x = 'b' %}{{ x }}{% endfor %}{{ x }}", V),
    ("message_loop", "{% for m in msgs %}<{{ m.role }}>{{ m['content'] }}{% if m.tool_calls is defined %}{% for tc in m.tool_calls %}[{{ tc.function.name }}({{ tc.function.arguments|tojson }})]{% endfor %}{% endif %}\n{% endfor %}", V),
]


def render_snippet(env, source, variables):
    try:
        template = env.from_string(source)
    except jinja2.TemplateSyntaxError as e:
        return {"error": {"type": type(e).__name__, "message": e.message, "line": e.lineno}}
    except Exception as e:  # noqa: BLE001
        return {"error": {"type": type(e).__name__, "message": str(e)}}
    try:
        return {"output": template.render(**copy.deepcopy(variables))}
    except Exception as e:  # noqa: BLE001
        return {"error": {"type": type(e).__name__, "message": str(e)}}


GGUF_VOCABS = ["qwen2", "phi-3", "llama-bpe"]
GGUF_CASES = ["multi_turn", "tool_call_roundtrip"]


def gguf_chat_cases(env, cases):
    """Renders the chat template of each refdata vocabulary (none for
    llama-bpe: the fallback) with the vocabulary's BOS / EOS token texts."""
    import gguf  # the test venv has it; only this part needs it

    out = []
    for vocab in GGUF_VOCABS:
        path = os.path.join(TEMPLATES, "..", "tokenizer", f"ggml-vocab-{vocab}.gguf")
        reader = gguf.GGUFReader(path)

        def field_str(f, i=0):
            return bytes(f.parts[f.data[i]]).decode("utf-8")

        tokens = reader.fields["tokenizer.ggml.tokens"]

        def token_text(key):
            f = reader.fields.get(key)
            if f is None:
                return ""
            return field_str(tokens, int(f.parts[-1][0]))

        bos, eos = token_text("tokenizer.ggml.bos_token_id"), token_text("tokenizer.ggml.eos_token_id")
        tmpl_field = reader.fields.get("tokenizer.chat_template")
        entry = {"vocab": vocab, "has_template": tmpl_field is not None, "results": {}}
        if tmpl_field is not None:
            template = env.from_string(field_str(tmpl_field))
            for name, messages, tools, kwargs in cases:
                if name not in GGUF_CASES:
                    continue
                args = dict(messages=copy.deepcopy(messages), tools=copy.deepcopy(tools), documents=None,
                            add_generation_prompt=True, bos_token=bos, eos_token=eos)
                try:
                    entry["results"][name] = {"output": template.render(**args)}
                except Exception as e:  # noqa: BLE001
                    entry["results"][name] = {"error": {"type": type(e).__name__, "message": str(e)}}
        out.append(entry)
    return out


def main():
    env = make_env()
    cases = conversations()
    os.makedirs(os.path.join(OUT, "expected"), exist_ok=True)
    corpus = []
    generic = {name: (source, options) for name, source, options in GENERIC_CASES}
    phi4 = dict(PHI4_CASES)
    for name, messages, tools, kwargs in cases:
        for agp in (False, True):
            entry = {"name": f"{name}{'+agp' if agp else ''}", "messages": messages, "tools": tools,
                     "add_generation_prompt": agp, "kwargs": kwargs}
            if name in generic:
                # What the messages were rewritten from, for the C++ rewrite's test.
                source, options = generic[name]
                entry["generic"] = {"source": f"{source}{'+agp' if agp else ''}", "tools": TOOLS,
                                    "options": options}
            if name in phi4:
                entry["phi4"] = {"source": f"{phi4[name]}{'+agp' if agp else ''}", "tools": TOOLS}
            corpus.append(entry)
    snippets = []
    names = set()
    for name, source, variables in SNIPPETS:
        assert name not in names, name
        names.add(name)
        snippets.append({"name": name, "template": source, "vars": variables,
                         "expected": render_snippet(env, source, variables)})
    with open(os.path.join(OUT, "snippets.json"), "w", encoding="utf-8") as f:
        json.dump({"now": FIXED_NOW.strftime("%Y-%m-%dT%H:%M:%S"), "snippets": snippets}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(OUT, "conversations.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token": BOS, "eos_token": EOS,
                   "now": FIXED_NOW.strftime("%Y-%m-%dT%H:%M:%S"), "cases": corpus},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")

    with open(os.path.join(OUT, "gguf_chat.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": gguf_chat_cases(env, cases)}, f, ensure_ascii=False, indent=1)
        f.write("\n")

    total = errors = 0
    for path in sorted(glob.glob(os.path.join(TEMPLATES, "*.jinja"))):
        with open(path, encoding="utf-8", newline="") as f:
            source = f.read()
        results = {}
        try:
            template = env.from_string(source)
        except Exception as e:  # noqa: BLE001
            sys.exit(f"{path}: does not compile: {e}")
        for case in cases:
            for agp in (False, True):
                key = f"{case[0]}{'+agp' if agp else ''}"
                results[key] = render_case(template, case, agp)
                total += 1
                errors += "error" in results[key]
        out = {"template": os.path.basename(path),
               "fnv1a64": fnv1a64(source.encode("utf-8")),
               "results": results}
        base = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(OUT, "expected", base + ".json"), "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"{total} renders, {errors} expected errors, {len(cases) * 2} cases per template; "
          f"{len(snippets)} snippets")


if __name__ == "__main__":
    main()
