#!/usr/bin/env python3
"""The `folio` command as a user meets it: usage and --version, flags
checked before any model loads (errors name the flag), --log-level anywhere
and honoured by the loading lines, warnings for accepted-but-inert llama.cpp
flags, prompts from -p (escapes), -f and stdin, `run -cnv` as chat,
`batch` keeping line numbers, and a KV pool smaller than one context refused
at startup.

Usage: cli_test.py --folio build/folio --model tiny-llama-f32.gguf
Standard library only.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def folio(*args, stdin=None, check_rc=None):
    p = subprocess.run([ARGS.folio, *args], input=stdin, capture_output=True, text=True,
                       timeout=120)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(f"folio {' '.join(args)}: exit {p.returncode}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


GEN = ["-n", "6", "--temp", "0", "-t", "1"]


class Cli(unittest.TestCase):
    def test_usage_and_version(self):
        p = folio(check_rc=0)
        self.assertIn("Subcommands", p.stdout)
        self.assertIn("serve", p.stdout)
        p = folio("--version", check_rc=0)
        self.assertRegex(p.stdout, r"^folio \d+\.\d+\.\d+ \(commit ")

    def test_values_are_checked_before_loading(self):
        missing = "/nonexistent/model.gguf"
        for flags, name in [(["--temp", "-1"], "--temp"), (["-n", "-5"], "--n-predict"),
                            (["--top-p", "2"], "--top-p"), (["--min-p", "nan"], "--min-p"),
                            (["--kv-type", "q4"], "--kv-type"), (["-c", "-3"], "--ctx-size"),
                            (["--kv-block-size", "12"], "--kv-block-size"),
                            (["-t", "-2"], "--threads"), (["-fa", "maybe"], "--flash-attn")]:
            p = folio("run", "-m", missing, "-p", "x", *flags)
            self.assertNotEqual(p.returncode, 0, flags)
            self.assertIn(name, p.stderr, flags)
            self.assertNotIn("cannot open", p.stderr, flags)  # never got to the model

    def test_serve_chat_flags_are_checked_before_loading(self):
        missing = "/nonexistent/model.gguf"
        for flags, name, says in [
                (["--chat-format", "chatml"], "--chat-format", "TOOLS[+REASONING]"),
                (["--chat-format", "hermes+thinking"], "--chat-format", "REASONING one of"),
                (["--reasoning-format", "deepseek-legacy"], "--reasoning-format", "deepseek"),
                (["--reasoning-budget", "-2"], "--reasoning-budget", "got -2"),
                (["--reasoning-budget", "lots"], "--reasoning-budget", "got lots")]:
            p = folio("serve", "-m", missing, *flags)
            self.assertNotEqual(p.returncode, 0, flags)
            self.assertIn(name, p.stderr, flags)
            self.assertIn(says, p.stderr, flags)
            self.assertNotIn("cannot open", p.stderr, flags)  # never got to the model

    def test_bench_isa_names_are_checked(self):
        # An unknown tier, and a tier of the other architecture's ladder: a
        # clear error before any work, never a crash or a silent scalar run.
        info = folio("info", check_rc=0).stdout
        other = "avx2" if "neon" in info.split("active isa")[1].split("\n")[0] else "neon"
        model = ARGS.model
        p = folio("bench", "-m", model, "--isa", "sse9", "-p", "8", "-n", "4", "-r", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("'sse9' is not scalar|neon|neon_dotprod|neon_i8mm|avx2|avx2_vnni|avx512|amx", p.stderr)
        p = folio("bench", "-m", model, "--isa", other, "-p", "8", "-n", "4", "-r", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"this CPU does not support {other}", p.stderr)

    def test_a_missing_model_is_the_only_error_line(self):
        p = folio("run", "-m", "/nonexistent/model.gguf", "-p", "x")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.strip().count("\n"), 0, p.stderr)
        self.assertIn("cannot open", p.stderr)

    def test_log_level_anywhere_silences_loading(self):
        for args in (["--log-level", "off", "run", "-m", ARGS.model, "-p", "Hello", *GEN],
                     ["run", "-m", ARGS.model, "-p", "Hello", *GEN, "--log-level", "off"]):
            p = folio(*args, check_rc=0)
            self.assertEqual(p.stderr, "", args)
            self.assertNotEqual(p.stdout.strip(), "")
        p = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, check_rc=0)
        self.assertIn("loading", p.stderr)

    def test_inert_llama_flags_warn(self):
        too_many = str((os.cpu_count() or 1) + 1)
        p = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN[:4], "-t", too_many, "-ngl", "99",
                  "-fa", "off", "--jinja", "--log-level", "warn", check_rc=0)
        self.assertIn(f"-t {too_many}", p.stderr)
        self.assertIn("-ngl 99", p.stderr)
        self.assertIn("-fa off", p.stderr)
        self.assertNotIn("loading", p.stderr)

    def test_devices(self):
        # `folio info` lists the Vulkan device (lavapipe where no GPU exists).
        p = folio("info", check_rc=0)
        self.assertRegex(p.stdout, r"device +: vulkan:\d+ ", p.stdout)
        # Every layer on the device: the same greedy text as the CPU (this
        # F32 model's logits agree to 1e-5), and every command takes it.
        cpu = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, check_rc=0).stdout
        for dev in (["--device", "vulkan"], ["-dev", "vulkan", "-ngl", "1"],
                    ["--device", "vulkan", "-ngl", "99"]):
            p = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, *dev, check_rc=0)
            self.assertEqual(p.stdout, cpu, dev)
            self.assertIn("offloaded", p.stderr, dev)
        # An explicit device that does not exist is an error naming it.
        p = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, "--device", "vulkan:99")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--device vulkan:99", p.stderr)
        p = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, "--device", "metal")
        self.assertEqual(p.returncode, 1)
        self.assertIn("unknown device", p.stderr)
        # Device memory that runs out names the tensor and the remedy.
        env = dict(os.environ, FOLIO_VULKAN_MEMORY_MIB="1")
        p = subprocess.run([ARGS.folio, "run", "-m", ARGS.model, "-p", "Hello", *GEN,
                            "--device", "vulkan"], capture_output=True, text=True, timeout=120,
                           env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("out of device memory", p.stderr)
        self.assertIn("-ngl", p.stderr)

    def test_hybrid_and_batch_on_device(self):
        # A hybrid model (gated DeltaNet state on the device) and `folio
        # batch` over the scheduler on the device: the CPU's greedy text.
        hybrid = os.path.join(os.path.dirname(ARGS.model), "tiny-qwen35-f32.gguf")
        cpu = folio("run", "-m", hybrid, "-p", "Hello", *GEN, check_rc=0).stdout
        p = folio("run", "-m", hybrid, "-p", "Hello", *GEN, "--device", "vulkan", check_rc=0)
        self.assertEqual(p.stdout, cpu)
        self.assertIn("4 of 4 layers offloaded", p.stderr)
        self.assertNotIn("runs on the CPU", p.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("Hello\nThe sky is\nOnce upon a time\n")
        try:
            for model in (ARGS.model, hybrid):
                want = folio("batch", "-m", model, "--prompts", f.name, *GEN, "-np", "3",
                             check_rc=0).stdout
                got = folio("batch", "-m", model, "--prompts", f.name, *GEN, "-np", "3",
                            "--device", "vulkan", check_rc=0).stdout
                self.assertEqual(got, want, model)
        finally:
            os.unlink(f.name)
        # A draft with sliding-window layers (Gemma 3) proposes whole
        # drafts: its cache has room for the proposal fork beside each
        # draft sequence (more draft tokens than verifications).
        gemma = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                             "gemma-3-270m-q4_k_m.gguf")
        self.assertTrue(os.path.exists(gemma), "the default model is missing: scripts/setup.sh")
        p = folio("run", "-m", gemma, "-p", "1, 2, 3, 4, 5, 6,", "-n", "12", "--temp", "0",
                  "-t", "2", "-md", gemma, "--draft-max", "4", check_rc=0)
        m = re.search(r"(\d+) of (\d+) draft tokens accepted \(100\.0%\) in (\d+) verif",
                      p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertGreater(int(m.group(2)), int(m.group(3)), p.stderr)

    def test_draft_model_on_device(self):
        # -devd / -ngld place the draft as --device / -ngl place the target:
        # a draft on the Vulkan device (target on the CPU, and both on the
        # device) drafts what the CPU draft drafts (the model drafting for
        # itself: every draft accepted) and the output is the target's; a
        # device that does not exist is an error naming the draft and flag.
        gen = ["-n", "12", "--temp", "0", "-t", "1", "--spec-min-accept", "0"]
        want = folio("run", "-m", ARGS.model, "-p", "Once upon a time", *gen, check_rc=0).stdout
        for dev in (["-devd", "vulkan"], ["--device-draft", "vulkan", "-ngld", "99"],
                    ["-devd", "vulkan", "--device", "vulkan"]):
            p = folio("run", "-m", ARGS.model, "-p", "Once upon a time", *gen, "-md", ARGS.model,
                      *dev, check_rc=0)
            self.assertEqual(p.stdout, want, dev)
            self.assertRegex(p.stderr, r"draft model \S+ on Vulkan\d", dev)
            m = re.search(r"speculation \(draft\): (\d+) of (\d+) draft tokens", p.stderr)
            self.assertIsNotNone(m, p.stderr)
            self.assertGreater(int(m.group(2)), 0)
            self.assertEqual(m.group(1), m.group(2), dev)
        p = folio("run", "-m", ARGS.model, "-p", "x", *gen, "-md", ARGS.model, check_rc=0)
        self.assertRegex(p.stderr, r"draft model \S+ on cpu-")
        p = folio("run", "-m", ARGS.model, "-p", "x", *gen, "-md", ARGS.model, "-devd", "vulkan:99")
        self.assertEqual(p.returncode, 1)
        self.assertIn("draft model '" + ARGS.model + "'", p.stderr)
        self.assertIn("--device-draft vulkan:99", p.stderr)
        p = folio("run", "-m", "/nonexistent/model.gguf", "-p", "x", "-md", ARGS.model,
                  "-ngld", "-2")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--n-gpu-layers-draft", p.stderr)
        self.assertNotIn("cannot open", p.stderr)

    def test_no_vulkan_driver(self):
        # No driver: one line, the CPU path; an error only when a device is demanded.
        env = dict(os.environ, VK_DRIVER_FILES="/nonexistent.json",
                   VK_ICD_FILENAMES="/nonexistent.json")

        def run(*args):
            return subprocess.run([ARGS.folio, *args], capture_output=True, text=True,
                                  timeout=120, env=env)
        p = run("info")
        self.assertEqual(p.returncode, 0)
        self.assertIn("vulkan: no device", p.stdout)
        cpu = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, check_rc=0).stdout
        p = run("run", "-m", ARGS.model, "-p", "Hello", *GEN, "-ngl", "99")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, cpu)
        self.assertEqual(p.stderr.count("no GPU found"), 1, p.stderr)
        p = run("run", "-m", ARGS.model, "-p", "Hello", *GEN, "--device", "vulkan")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--device vulkan", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_prompt_sources_agree(self):
        want = folio("run", "-m", ARGS.model, "-p", "One\\ttwo", *GEN, check_rc=0).stdout
        self.assertNotEqual(want.strip(), "")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("One\ttwo")
        try:
            self.assertEqual(folio("run", "-m", ARGS.model, "-f", f.name, *GEN,
                                   check_rc=0).stdout, want)
        finally:
            os.unlink(f.name)
        self.assertEqual(folio("run", "-m", ARGS.model, *GEN, stdin="One\ttwo",
                               check_rc=0).stdout, want)
        raw = folio("run", "-m", ARGS.model, "-p", "One\\ttwo", "--no-escape", *GEN,
                    check_rc=0).stdout
        self.assertNotEqual(raw, want)  # the backslash reached the model

    def test_speculation(self):
        # Flags checked before loading; output equal with and without
        # speculation (greedy), the acceptance line printed; hybrid models
        # too (their recurrent state restored after rejected drafts).
        missing = "/nonexistent/model.gguf"
        for cmd in ("run", "batch", "serve", "chat"):
            for flags, name in [(["--spec-type", "eagle"], "--spec-type"),
                                (["--draft-max", "0"], "--spec-draft-n-max"),
                                (["--spec-min-accept", "2"], "--spec-min-accept")]:
                extra = ["-p", "x"] if cmd == "run" else []
                p = folio(cmd, "-m", missing, *extra, *flags)
                self.assertNotEqual(p.returncode, 0, (cmd, flags))
                self.assertIn(name, p.stderr, (cmd, flags))
                self.assertNotIn("cannot open", p.stderr, (cmd, flags))
        p = folio("run", "-m", missing, "-p", "x", "--spec", "ngram", "--spec-ngram-n-min", "4",
                  "--spec-ngram-n-max", "2")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--spec-ngram-n-max", p.stderr)
        self.assertNotIn("cannot open", p.stderr)
        prompt = "1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2,"
        gen = ["-n", "24", "--temp", "0", "-t", "1"]
        want = folio("run", "-m", ARGS.model, "-p", prompt, *gen, check_rc=0).stdout
        p = folio("run", "-m", ARGS.model, "-p", prompt, *gen, "--spec-type", "ngram",
                  "--spec-min-accept", "0", check_rc=0)
        self.assertEqual(p.stdout, want)
        self.assertRegex(p.stderr, r"speculation \(ngram\): \d+ of \d+ draft tokens accepted")
        hybrid = os.path.join(os.path.dirname(ARGS.model), "tiny-qwen35-f32.gguf")
        for cmd in (["run", "-p", prompt], ["chat"]):
            want = folio(cmd[0], "-m", hybrid, *cmd[1:], *gen, stdin="hi\n", check_rc=0).stdout
            p = folio(cmd[0], "-m", hybrid, *cmd[1:], *gen, "--spec-type", "ngram",
                      "--spec-min-accept", "0", stdin="hi\n", check_rc=0)
            self.assertEqual(p.stdout, want, cmd)
            if cmd[0] == "run":
                self.assertRegex(p.stderr, r"speculation \(ngram\): \d+ of \d+ draft tokens accepted")

    def test_draft_model(self):
        # -md (llama.cpp's name) implies --spec-type draft; a draft that does
        # not load, or draft flags that do not go together, stop every
        # command with the reason; the output is the target's, every draft
        # accepted when the model drafts for itself, for run, chat and batch.
        missing = "/nonexistent/draft.gguf"
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("1, 2, 3, 4, 1, 2,\nOnce upon a time\n")
        try:
            for cmd in (["run", "-p", "x"], ["chat"], ["batch", "--prompts", f.name],
                        ["serve", "--port", "0"]):
                p = folio(cmd[0], "-m", ARGS.model, *cmd[1:], "-md", missing, stdin="hi\n")
                self.assertNotEqual(p.returncode, 0, cmd)
                self.assertIn("draft model '" + missing + "'", p.stderr, cmd)
            p = folio("run", "-m", ARGS.model, "-p", "x", "--spec-type", "draft")
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("needs a draft model (-md FILE)", p.stderr)
            p = folio("run", "-m", ARGS.model, "-p", "x", "--spec", "ngram", "-md", ARGS.model)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("--spec-type draft", p.stderr)
            gen = ["-n", "24", "--temp", "0", "-t", "1"]
            hybrid = os.path.join(os.path.dirname(ARGS.model), "tiny-qwen35-f32.gguf")
            for cmd in (["run", "-p", "Once upon a time"], ["chat"],
                        ["batch", "--prompts", f.name, "-np", "2"]):
                want = folio(cmd[0], "-m", ARGS.model, *cmd[1:], *gen, stdin="hi\n",
                             check_rc=0).stdout
                for draft in (ARGS.model, hybrid):
                    p = folio(cmd[0], "-m", ARGS.model, *cmd[1:], *gen, "-md", draft,
                              "--spec-min-accept", "0", stdin="hi\n", check_rc=0)
                    self.assertEqual(p.stdout, want, (cmd, draft))
                    if cmd[0] == "run" and draft == ARGS.model:
                        m = re.search(r"speculation \(draft\): (\d+) of (\d+) draft tokens", p.stderr)
                        self.assertIsNotNone(m, p.stderr)
                        self.assertGreater(int(m.group(2)), 0)
                        self.assertEqual(m.group(1), m.group(2))
        finally:
            os.unlink(f.name)

    def test_mtp(self):
        # --spec mtp: the model's own MTP head drafts; a file without one
        # stops every command before anything runs, naming the file; the
        # output is the target's for run, chat and batch (a qwen35 hybrid and
        # a glm4moe MoE file), and bench reports it identical.
        import json
        refdata = os.path.join(os.path.dirname(ARGS.model), "..", "..", "model", "refdata")
        files = [os.path.join(refdata, "tiny-qwen35-mtp-f32.gguf"),
                 os.path.join(refdata, "tiny-glm4moe-f32.gguf")]
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("1, 2, 3, 4, 1, 2,\nOnce upon a time\n")
        try:
            for cmd in (["run", "-p", "x"], ["chat"], ["batch", "--prompts", f.name],
                        ["serve", "--port", "0"]):
                p = folio(cmd[0], "-m", ARGS.model, *cmd[1:], "--spec", "mtp", stdin="hi\n")
                self.assertNotEqual(p.returncode, 0, cmd)
                self.assertIn("--spec-type mtp: '" + ARGS.model + "'", p.stderr, cmd)
                self.assertIn("no MTP blocks", p.stderr, cmd)
            gen = ["-n", "16", "--temp", "0", "-t", "1"]
            for model in files:
                for cmd in (["run", "-p", "Once upon a time"], ["chat"],
                            ["batch", "--prompts", f.name, "-np", "2"]):
                    want = folio(cmd[0], "-m", model, *cmd[1:], *gen, stdin="hi\n",
                                 check_rc=0).stdout
                    p = folio(cmd[0], "-m", model, *cmd[1:], *gen, "--spec", "mtp",
                              "--draft-max", "3", "--spec-min-accept", "0", stdin="hi\n",
                              check_rc=0)
                    self.assertEqual(p.stdout, want, (model, cmd))
                    if cmd[0] == "run":
                        self.assertIn("MTP head", p.stderr)
                        m = re.search(r"speculation \(mtp\): (\d+) of (\d+) draft tokens", p.stderr)
                        self.assertIsNotNone(m, p.stderr)
                        self.assertGreater(int(m.group(2)), 0)
                p = folio("bench", "-m", model, "--spec", "mtp", "-f", f.name, "-n", "16", "-r",
                          "1", "-t", "1", "--spec-min-accept", "0", "--json", check_rc=0)
                rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
                self.assertEqual(len(rows), 1, p.stdout)
                self.assertEqual(rows[0]["spec_type"], "mtp")
                self.assertTrue(rows[0]["identical"])
                self.assertGreater(rows[0]["draft_tokens"], 0)
        finally:
            os.unlink(f.name)

    def test_bench_spec(self):
        # `bench --spec`: its flags refused in the wrong company before any
        # model loads; a run reports both speeds, the acceptance and that
        # the output was the same with and without speculation (JSON and
        # table), every draft accepted when the model drafts for itself.
        import json
        missing = "/nonexistent/model.gguf"
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,")
        try:
            for flags, says in [(["-f", f.name], "-f (prompt files) goes with --spec"),
                                (["--spec", "ngram"], "give -f FILE"),
                                (["--spec", "ngram", "-f", f.name, "-p", "8"], "-p does not apply"),
                                (["--spec", "ngram", "-f", f.name, "--seqs", "2"], "--seqs"),
                                (["--spec", "draft", "-f", f.name], "needs a draft model")]:
                p = folio("bench", "-m", missing, *flags)
                self.assertNotEqual(p.returncode, 0, flags)
                self.assertIn(says, p.stderr, flags)
                self.assertNotIn("cannot open", p.stderr, flags)
            run = ["-f", f.name, "-n", "16", "-r", "1", "-t", "1", "--spec-min-accept", "0"]
            p = folio("bench", "-m", ARGS.model, "--spec", "ngram", *run, "--json", check_rc=0)
            rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
            self.assertEqual(len(rows), 1, p.stdout)
            r = rows[0]
            self.assertEqual(r["test"], "spec")
            self.assertEqual(r["spec_type"], "ngram")
            self.assertEqual(r["prompt"], os.path.basename(f.name))
            self.assertEqual(r["repetitions"], 1)
            self.assertTrue(r["identical"])
            self.assertGreater(r["base_tokens_per_s"], 0)
            self.assertGreater(r["spec_tokens_per_s"], 0)
            self.assertGreater(r["draft_tokens"], 0)
            self.assertAlmostEqual(r["speedup"], r["spec_tokens_per_s"] / r["base_tokens_per_s"])
            p = folio("bench", "-m", ARGS.model, "-md", ARGS.model, *run, check_rc=0)
            self.assertIn("t/s without", p.stdout)
            row = [line for line in p.stdout.splitlines() if os.path.basename(f.name) in line]
            self.assertEqual(len(row), 1, p.stdout)
            m = re.search(r"\| +100\.0% of (\d+) \| yes +\|", row[0])
            self.assertIsNotNone(m, row[0])
            self.assertGreater(int(m.group(1)), 0)
        finally:
            os.unlink(f.name)

    def test_conversation_mode_is_chat(self):
        p = folio("run", "-m", ARGS.model, "-cnv", "-p", "You are terse.", "-n", "4", "--temp",
                  "0", "-t", "1", stdin="/exit\n", check_rc=0)
        self.assertIn("chat", p.stderr)

    def test_kv_pool_must_hold_one_context(self):
        # A pool smaller than one full context is refused at startup by every
        # command that generates (serve and batch build a scheduler), saying
        # what it holds and what would do. Blocks of 16: 15 usable hold 240.
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("Hello\n")
        try:
            for cmd in (["run", "-p", "Hello", *GEN], ["batch", "--prompts", f.name, *GEN],
                        ["serve", "--port", "0", "-t", "1"]):
                p = folio(cmd[0], "-m", ARGS.model, *cmd[1:], "-c", "256", "--kv-blocks", "16")
                self.assertEqual(p.returncode, 1, cmd)
                self.assertIn("the KV pool holds 240 tokens (15 usable blocks of 16), less than "
                              "one full context of 256 tokens", p.stderr, cmd)
                self.assertIn("use a smaller -c (at most 240)", p.stderr, cmd)
                self.assertIn("--kv-blocks 17", p.stderr, cmd)
                self.assertIn("--kv-memory", p.stderr, cmd)
                self.assertNotIn("ready", p.stderr, cmd)
        finally:
            os.unlink(f.name)
        # Exactly one context (16 usable blocks) is enough.
        p = folio("run", "-m", ARGS.model, "-p", "Hello", *GEN, "-c", "256", "--kv-blocks", "17",
                  check_rc=0)
        self.assertNotEqual(p.stdout.strip(), "")

    def test_kv_memory_suggestion_pays_for_the_windows(self):
        # At -c 4096 Gemma 3's local layers (window 512) get pages of their own;
        # the --kv-memory a refusal suggests covers them and one full context
        # of the global layers, exactly: it starts, one MiB less does not.
        gemma = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                             "gemma-3-270m-q4_k_m.gguf")
        self.assertTrue(os.path.exists(gemma), "the default model is missing: scripts/setup.sh")
        p = folio("run", "-m", gemma, "-p", "Hello", *GEN, "-c", "4096", "--kv-blocks", "16")
        self.assertEqual(p.returncode, 1)
        m = re.search(r"--kv-memory (\d+)\)", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        mib = int(m.group(1))
        p = folio("run", "-m", gemma, "-p", "Hello", *GEN, "-c", "4096", "--kv-memory",
                  str(mib), check_rc=0)
        self.assertIn("sliding-window (512 tokens) layers", p.stderr)
        p = folio("run", "-m", gemma, "-p", "Hello", *GEN, "-c", "4096", "--kv-memory",
                  str(mib - 1))
        self.assertEqual(p.returncode, 1)
        self.assertIn("less than one full context of 4096 tokens", p.stderr)

    def test_batch_keeps_line_numbers(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("Hello\n\nThe sky is\n")
        try:
            p = folio("batch", "-m", ARGS.model, "--prompts", f.name, *GEN, "-np", "2",
                      check_rc=0)
        finally:
            os.unlink(f.name)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("[1] "), p.stdout)
        self.assertTrue(any(l.startswith("[3] ") for l in lines), p.stdout)
        self.assertFalse(any(l.startswith("[2] ") for l in lines), p.stdout)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
