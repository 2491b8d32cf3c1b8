#!/usr/bin/env python3
"""Generates tests/tokenizer/data/llamacpp_pre_splits.txt: how llama.cpp's own
code splits a fixed set of texts under the pre-tokenizers of NAMES, and the
defaults llama.cpp gives each name.

For each `tokenizer.ggml.pre` name in NAMES this script reads, from the
llama.cpp checkout the given build was configured from (src/llama-vocab.cpp),
  - the pre-type the name selects and the defaults set with it
    (clean_spaces, ignore_merges, add_bos; llama.cpp's BPE defaults are
    true / false / false), and
  - that pre-type's regex_exprs (the string literals of its `case` in
    llm_tokenizer_bpe's constructor),
then builds scripts/llama_pre_splits.cc against the build's libllama.so and
runs it: llama.cpp's unicode_regex_split (its custom splitters included,
e.g. kimi-k2's) splits each text under those regexes.
tests/tokenizer/pre_tokenizer_test.cc (LlamaCppSplits) checks folio's
pre_tokenizer_from_name and pre_tokenize against every line.

Texts tagged in TEXTS are left out for names whose llama.cpp splitter is
known to differ from the model's tokenizer.json regex there (folio follows
the regex; pre_tokenizer.h): minimax-m2's o200k regex (llama.cpp rewrites
its letter classes as "not a-z" / "not A-Z": non-ASCII cased letters and
marks), kimi-k2's (llama.cpp's splitter keeps a run of letters whole and
takes the CJK ideograph blocks for \\p{Han}), deepseek-coder's (llama.cpp
turns whitespace above U+007F into U+000B before its CJK regex
[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+, so U+3000 and U+2028, inside
the second range, are not taken as CJK there).

Format: one line per (name, text), tab separated:
    name  clean_spaces(0/1)  ignore_merges(0/1)  add_bos(0/1)  hex(text)  hex(piece) ...

For the names in REGEXES (where folio follows the tokenizer.json regex and
llama.cpp's splitter differs) it also writes
tests/tokenizer/data/regex_pre_splits.txt: every text of TEXTS split by
Perl's regex engine (backtracking, leftmost-first like Oniguruma and
fancy-regex; Unicode 14 in Perl 5.36, the version of folio's tables) under
the model's own regex, one line per (name, text):
    name  hex(text)  hex(piece) ...
(tests/tokenizer/pre_tokenizer_test.cc RegexSplits).

Usage (from the repository root; not run by the tests):
    python3 scripts/gen_pre_splits.py --llama-bin /path/to/llama.cpp/build
Needs: Python 3 (no packages), a C++17 compiler, a llama.cpp build
(bin/libllama.so), perl (5.36 or later).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "tokenizer" / "data" / "llamacpp_pre_splits.txt"
REGEX_OUT = REPO / "tests" / "tokenizer" / "data" / "regex_pre_splits.txt"
DRIVER = REPO / "scripts" / "llama_pre_splits.cc"

# Pre-tokenizer names of the architectures of issue 35 (and the families
# they share a splitter with).
NAMES = ["deepseek-v3", "hunyuan-dense", "joyai-llm", "deepseek-coder", "exaone", "exaone4",
         "hunyuan", "seed-coder", "minimax-m2", "kimi-k2"]

# (text, tags). Tags: "case" a word that changes case inside it, "cased" a
# non-ASCII upper or lower case letter, "marks" a combining mark,
# "han-extra" a Script=Han character outside the CJK ideograph blocks,
# "wide-space" whitespace in U+0800..U+4E00.
TEXTS = [
    ("Hello, world! 12345 \u4f60\u597d\u3053\u3093\u306b\u3061\u306f", []),
    ("don't STOP i'M here's we'll THEY'RE", []),
    ("camelCase HTTPServer iPhone", ["case"]),
    ("x  \n  \n y\r\n\tz", []),
    ("a;\n\nb (c) $d ...e", []),
    ("1234567 3.14159 \u0661\u0662\u0663\u0664", []),
    ("\u4fa1\u683c\u306f1000\u5186\u3067\u3059", []),
    ("\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4", []),
    ("\u00dcn\u00efc\u00f6d\u00e9 na\u00efve caf\u00e9 \u0391\u03b8\u03ae\u03bd\u03b1", ["cased"]),
    ("e\u0301t\u00e9 \u0915\u093f\u0924\u093e\u092c", ["marks", "cased"]),
    ("path/to/file.py://x // y", []),
    ("  leading and trailing  ", []),
    ("\u00abquote\u00bb \u2014 \u201csmart\u201d \u2018single\u2019", []),
    ("x\u3000y\u00a0z \u2028w", ["wide-space"]),
    ("def f(x):\n    return x**2  # comment\n", []),
    ("\u4eba\u3005\u306e\u6642\u4ee3 \u4e2d\u6587English\u6df7\u5408", ["han-extra"]),
    ("emoji \U0001f44d\U0001f3fd test!!\n\n", []),
    ("<tag attr=\"v\">text</tag>\n", []),
    (".NET's $100 + x #1", []),
    ("\u4e2d\u6587abc\u4e2d DEF\u6587 \u3042\u3044x", []),
    ("XMLHttpRequest getHTTPResponseCode \u00c9COLE \u00c9cole \u01c5a", ["case", "cased"]),
    ("\u0645\u0631\u062d\u0628\u0627 \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35 "
     "\u0928\u092e\u0938\u094d\u0924\u0947", ["marks"]),
]
SKIP_TAGS = {
    "minimax-m2": {"cased", "marks"},
    "kimi-k2": {"case", "cased", "marks", "han-extra"},
    "deepseek-coder": {"wide-space"},
}


# The tokenizer.json / tokenizer .py regexes, in Perl's syntax: UPPER and
# LOWER are o200k's letter classes; kimi-k2 (tokenization_kimi.py) takes
# Script=Han out of them ("&&[^\\p{Han}]") and matches Han runs first.
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_O200K_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
_O200K_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_NO_HAN = r"(?!\p{sc=Han})"
REGEXES = {
    "minimax-m2": (rf"[^\r\n\p{{L}}\p{{N}}]?{_O200K_UPPER}*{_O200K_LOWER}+{_CONTRACTION}?"
                   rf"|[^\r\n\p{{L}}\p{{N}}]?{_O200K_UPPER}+{_O200K_LOWER}*{_CONTRACTION}?"
                   r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "kimi-k2": (rf"\p{{sc=Han}}+"
                rf"|[^\r\n\p{{L}}\p{{N}}]?(?:{_NO_HAN}{_O200K_UPPER})*(?:{_NO_HAN}{_O200K_LOWER})+"
                rf"{_CONTRACTION}?"
                rf"|[^\r\n\p{{L}}\p{{N}}]?(?:{_NO_HAN}{_O200K_UPPER})+(?:{_NO_HAN}{_O200K_LOWER})*"
                rf"{_CONTRACTION}?"
                r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
}
# Reads hex texts, prints each text's matches (hex, space separated); the
# regex is the first argument.
PERL_SPLIT = r"""
use strict; use warnings;
my $re = qr/$ARGV[0]/;
binmode STDOUT, ':raw';
while (my $line = <STDIN>) {
  chomp $line;
  my $text = pack("H*", $line);
  utf8::decode($text) or die "not UTF-8: $line";
  my @pieces;
  my $end = 0;
  while ($text =~ /$re/g) {
    die "unmatched text at $end" if $-[0] != $end;
    push @pieces, $&;
    $end = $+[0];
  }
  die "unmatched tail" if $end != length($text);
  print join(" ", map { my $b = $_; utf8::encode($b); unpack("H*", $b) } @pieces), "\n";
}
"""


def regex_rows() -> list[str]:
    rows = []
    texts = [t for t, _ in TEXTS]
    stdin = "".join(t.encode().hex() + "\n" for t in texts)
    for name, pattern in REGEXES.items():
        res = subprocess.run(["perl", "-e", PERL_SPLIT, pattern], input=stdin,
                             capture_output=True, text=True, check=True)
        splits = res.stdout.splitlines()
        assert len(splits) == len(texts), (name, len(splits))
        for text, split in zip(texts, splits):
            rows.append("\t".join([name, text.encode().hex(), split]))
    return rows


def source_dir(build: Path) -> Path:
    """The llama.cpp checkout a build dir was configured from (CMakeCache.txt)."""
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:INTERNAL="):
            return Path(line.split("=", 1)[1])
    sys.exit(f"{build}/CMakeCache.txt: no CMAKE_HOME_DIRECTORY")


def c_literals(line: str) -> list[str]:
    """The C string literals on a line, unescaped."""
    out = []
    i = 0
    while True:
        i = line.find('"', i)
        if i < 0:
            return out
        i += 1
        s = []
        while line[i] != '"':
            if line[i] == "\\":
                i += 1
                s.append({"n": "\n", "r": "\r", "t": "\t"}.get(line[i], line[i]))
            else:
                s.append(line[i])
            i += 1
        out.append("".join(s))
        i += 1


def read_vocab_source(path: Path):
    """name -> (pre_type, clean_spaces, ignore_merges, add_bos) and
    pre_type -> regex_exprs, from llama-vocab.cpp."""
    lines = path.read_text().splitlines()
    names: dict[str, list] = {}
    pending: list[str] = []
    current: list[str] = []
    in_chain = False
    for line in lines:
        if "tokenizer_pre.empty()" in line:
            in_chain = True
            continue
        if not in_chain:
            continue
        if line.strip().startswith("} else {") and current == [] and not pending:
            break
        for m in re.finditer(r'tokenizer_pre == "([^"]+)"', line):
            pending.append(m.group(1))
        m = re.search(r"pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);", line)
        if m:
            current = pending
            pending = []
            for n in current:
                names[n] = [m.group(1), True, False, False]
            continue
        for key, idx in (("clean_spaces", 1), ("ignore_merges", 2), ("add_bos", 3)):
            m = re.search(rf"\b{key}\s*=\s*(true|false);", line)
            if m and current:
                for n in current:
                    names[n][idx] = m.group(1) == "true"
        if "} else if" in line or line.strip() == "} else {":
            current = []
        if line.strip() == "} else {":
            break
    regexes: dict[str, list[str]] = {}
    start = next(i for i, l in enumerate(lines) if "struct llm_tokenizer_bpe" in l)
    cases: list[str] = []
    collecting = False
    for line in lines[start:]:
        m = re.match(r"\s*case LLAMA_VOCAB_PRE_TYPE_(\w+):", line)
        if m:
            if collecting:
                cases = []
                collecting = False
            cases.append(m.group(1))
            continue
        stripped = line.strip()
        if stripped.startswith("regex_exprs = {"):
            collecting = True
            exprs: list[str] = []
            continue
        if collecting and stripped.startswith("};"):
            for c in cases:
                regexes[c] = exprs
            continue
        if collecting and stripped.startswith('"'):
            exprs.extend(c_literals(stripped))
        if stripped == "break;":
            cases = []
            collecting = False
        if stripped.startswith("default:"):
            break
    return names, regexes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-bin", required=True, type=Path,
                    help="llama.cpp build dir (bin/libllama.so)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    build = args.llama_bin.resolve()
    src = source_dir(build)
    names, regexes = read_vocab_source(src / "src" / "llama-vocab.cpp")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "llama_pre_splits"
        cxx = os.environ.get("CXX", "c++")
        subprocess.run([cxx, "-O1", "-std=c++17", "-o", str(exe), str(DRIVER),
                        f"-L{build / 'bin'}", "-lllama", f"-Wl,-rpath,{build / 'bin'}"],
                       check=True)
        for name in NAMES:
            if name not in names:
                sys.exit(f"{name}: not a tokenizer_pre name in llama-vocab.cpp")
            pre_type, clean, ignore, bos = names[name]
            exprs = regexes.get(pre_type)
            if not exprs:
                sys.exit(f"{name}: no regex_exprs for LLAMA_VOCAB_PRE_TYPE_{pre_type}")
            texts = [t for t, tags in TEXTS if not set(tags) & SKIP_TAGS.get(name, set())]
            stdin = "".join(t.encode().hex() + "\n" for t in texts)
            res = subprocess.run([str(exe)] + exprs, input=stdin, capture_output=True,
                                 text=True, check=True)
            splits = res.stdout.splitlines()
            assert len(splits) == len(texts), (name, len(splits), len(texts))
            for text, split in zip(texts, splits):
                rows.append("\t".join([name, str(int(clean)), str(int(ignore)), str(int(bos)),
                                       text.encode().hex(), split]))
            print(f"{name}: {pre_type}, {len(texts)} texts, regexes {exprs!r}", file=sys.stderr)
    with open(args.out, "w") as f:
        f.write(f"# generated by scripts/gen_pre_splits.py from {src.name} "
                f"(llama.cpp's unicode_regex_split)\n")
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(rows)} cases to {args.out}", file=sys.stderr)
    perl = subprocess.run(["perl", "-e", "printf('%vd', $^V)"], capture_output=True, text=True,
                          check=True).stdout
    rows = regex_rows()
    with open(REGEX_OUT, "w") as f:
        f.write(f"# generated by scripts/gen_pre_splits.py with perl {perl}'s regex engine\n")
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(rows)} cases to {REGEX_OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
