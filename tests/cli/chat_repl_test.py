#!/usr/bin/env python3
"""`folio chat` end to end, the way a person uses it.

Runs the real binary with the tiny reference model (greedy, --temp 0) inside a
pseudo-terminal (Python's pty module) and types at it: /help, an unknown
command, history recall with the Up arrow, multi-line input ("\\" and a
\"\"\" block), Ctrl-C during a reply and at the prompt, context shifting
with a tiny context, Ctrl-D. Then pipes a script of lines into it (stdin not
a terminal). Standard library only.

Usage: chat_repl_test.py --folio build/folio --model MODEL.gguf
"""

import argparse
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import unittest

ARGS = None
STATS = re.compile(r"\[(\d+) tokens, [\d.]+ tokens/s([^\]]*)\]\r?\n")
TIMEOUT = 60


class PtyChat:
    """A `folio chat` process on a pseudo-terminal: what it draws and what we type."""

    def __init__(self, *extra):
        argv = [ARGS.folio, "--log-level", "warn", "chat", "-m", ARGS.model, "--temp", "0",
                "-t", "2", *extra]
        pid, fd = pty.fork()
        if pid == 0:  # the child: never return into the test runner
            try:
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        # A wide terminal: libedit then never wraps the lines typed here.
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
        self.out = ""   # everything the terminal showed
        self.pos = 0    # where the next expect() starts looking
        self.status = None

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            raise EOFError
        self.out += data.decode("utf-8", "replace")
        return True

    def expect(self, pattern, timeout=TIMEOUT, flags=0):
        """Waits for `pattern` after the last match; returns the match."""
        rx = re.compile(pattern, flags)
        deadline = time.time() + timeout
        while True:
            m = rx.search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {pattern!r}; screen:\n{self.tail()}")
            try:
                self._read(min(left, 0.5))
            except EOFError:
                raise AssertionError(f"folio ended while waiting for {pattern!r}:\n{self.tail()}")

    def since(self, start):
        return self.out[start:self.pos]

    def quiet(self, seconds):
        """Reads whatever arrives for `seconds`; returns it."""
        start = len(self.out)
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                self._read(deadline - time.time())
            except EOFError:
                break
        return self.out[start:]

    def send(self, text):
        os.write(self.fd, text.encode())

    def prompt(self):
        self.expect(r"(?:^|\n)> $", flags=re.M)
        # libedit draws the prompt and then switches the terminal to editing
        # mode; a key sent in between is read in the terminal's cooked mode
        # (Ctrl-D, Ctrl-C handled by the line discipline). A person never
        # types that fast; the test waits as long as a person would at least.
        time.sleep(0.05)

    def turn(self, line):
        """Types a message; returns (reply region, stats match) once the prompt is back."""
        start = self.pos
        self.send(line + "\r")
        m = self.expect(STATS.pattern)
        self.prompt()
        return self.since(start), m

    def wait_exit(self, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                self._read(0.2)
            except EOFError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while True:  # what it wrote last
                    try:
                        if not self._read(0.1):
                            break
                    except EOFError:
                        break
                self.status = status
                return os.waitstatus_to_exitcode(status)
        raise AssertionError(f"folio did not exit; screen:\n{self.tail()}")

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        os.close(self.fd)

    def tail(self, n=3000):
        return self.out[-n:]


class ChatOnTerminal(unittest.TestCase):
    def start(self, *extra):
        chat = PtyChat(*extra)
        self.addCleanup(chat.close)
        chat.expect(r"chat ready")
        chat.prompt()
        return chat

    def test_commands_history_and_multi_line(self):
        chat = self.start("-n", "8")
        start = chat.pos
        chat.send("/help\r")
        chat.expect(r"/reset")
        chat.expect(r"/exit")
        chat.prompt()
        self.assertNotRegex(chat.since(start), STATS.pattern, "/help reached the model")

        start = chat.pos
        chat.send("/frobnicate now\r")
        chat.expect(r"unknown command /frobnicate \(try /help\)")
        chat.prompt()
        self.assertNotRegex(chat.since(start), STATS.pattern, "an unknown command reached the model")

        # Up, Up: "/help" again from the history (not "^[[A" sent as text).
        start = chat.pos
        chat.send("\x1b[A\x1b[A\r")
        chat.expect(r"/reset")
        chat.prompt()
        self.assertNotRegex(chat.since(start), STATS.pattern)
        self.assertNotIn("^[[A", chat.since(start))

        # "//" sends a line starting with "/" as text.
        _, m = chat.turn("//help is text")
        self.assertNotIn("unknown command", chat.out[m.start() - 200:m.start()])

        # "\" continues: one message over two lines, one reply.
        start = chat.pos
        chat.send("first line \\\r")
        chat.expect(r"\.\.\. $", flags=re.M)
        chat.send("second line\r")
        chat.expect(STATS.pattern)
        chat.prompt()
        self.assertEqual(len(STATS.findall(chat.since(start))), 1)

        # A """ block: lines verbatim (a "/" line included), one reply.
        start = chat.pos
        for line in ['"""', "a poem:", "/not a command", '"""']:
            chat.send(line + "\r")
            if line != '"""' or chat.pos == start:
                chat.expect(r"\.\.\. $", flags=re.M)
        chat.expect(STATS.pattern)
        chat.prompt()
        region = chat.since(start)
        self.assertEqual(len(STATS.findall(region)), 1, region)
        self.assertNotIn("unknown command", region)

        # /reset then a turn still works.
        chat.send("/reset\r")
        chat.expect("conversation cleared")
        chat.prompt()
        chat.turn("hello again")

        # Ctrl-D on an empty line: exit 0, the terminal left on a fresh line.
        chat.send("\x04")
        self.assertEqual(chat.wait_exit(), 0)
        # (libedit echoes the key as "^D".)
        self.assertRegex(chat.out, r"\n> (\^D)?\r?\n$")

    def test_ctrl_c(self):
        # A reply as long as the context allows (the tiny model's 512).
        chat = self.start("-n", "-1", "--ignore-eos", "-c", "512")
        # Ctrl-C during a reply: it stops, the prompt comes back, the process
        # lives. The tiny model writes a whole reply in a fraction of a
        # second, so a busy machine may let one end before the key arrives:
        # then the key lands at the prompt and the test tries again.
        for attempt in range(5):
            chat.send("tell me a very long story\r")
            chat.expect(r"story\r?\n")
            chat.expect(r"\S{3}")  # the reply has started
            chat.send("\x03")
            m = chat.expect(STATS.pattern)
            chat.prompt()
            if "stopped" in m.group(2):
                break
            chat.quiet(0.3)
        else:
            self.fail("Ctrl-C never stopped a reply:\n" + chat.tail())
        _, m = chat.turn("and then?")
        self.assertNotIn("stopped", m.group(2))

        # Ctrl-C with text on the line: the line is dropped, nothing is sent.
        start = chat.pos
        chat.send("never sent")
        chat.expect("never sent")
        chat.send("\x03")
        chat.expect(r"\^C")
        chat.prompt()
        # Ctrl-C on the empty line: a hint, still running.
        chat.send("\x03")
        chat.expect(r"Ctrl-C again or Ctrl-D quits")
        chat.prompt()
        self.assertNotRegex(chat.since(start), STATS.pattern)
        # Something typed in between disarms the quit.
        chat.turn("still here?")
        chat.send("\x03")
        chat.expect(r"Ctrl-C again or Ctrl-D quits")
        chat.prompt()
        chat.send("\x03")
        self.assertEqual(chat.wait_exit(), 0)

    def test_context_shift(self):
        chat = self.start("-c", "128", "-n", "12", "--ignore-eos",
                          "--system-prompt", "You are terse.")
        words = "please tell me about the weather in the mountains today"
        dropped = 0
        for i in range(8):
            region, m = chat.turn(f"{i}: {words}")
            self.assertEqual(m.group(1), "12", region)
            d = re.search(r"dropped the (\d+) oldest turns?", region)
            if d:
                dropped += int(d.group(1))
        self.assertGreater(dropped, 0, "the context never shifted:\n" + chat.tail())
        # A message longer than the context: refused, the session goes on.
        start = chat.pos
        chat.send(" ".join(["word"] * 300) + "\r")
        chat.expect(r"message not sent: .*context holds 128")
        chat.prompt()
        self.assertNotRegex(chat.since(start), STATS.pattern)
        chat.turn("short one")
        chat.send("/exit\r")
        self.assertEqual(chat.wait_exit(), 0)


class ChatPiped(unittest.TestCase):
    def run_script(self, lines, *extra):
        argv = [ARGS.folio, "--log-level", "warn", "chat", "-m", ARGS.model, "--temp", "0",
                "-t", "2", "-n", "6", *extra]
        return subprocess.run(argv, input="".join(l + "\n" for l in lines), capture_output=True,
                              text=True, errors="replace", timeout=TIMEOUT)

    def test_script(self):
        r = self.run_script(["/help", "hello", "/bogus", "line one \\", "line two", "",
                             '"""', "x", '"""', "//slash text", "/exit", "never read"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(STATS.findall(r.stderr)), 4, r.stderr)
        self.assertIn("unknown command /bogus (try /help)", r.stderr)
        self.assertIn("/reset", r.stderr)  # the help
        self.assertNotIn("> ", r.stdout)   # no prompt without a terminal
        self.assertNotIn("> ", r.stderr)

    def test_eof_ends_cleanly(self):
        r = self.run_script(["hi", "line \\"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(STATS.findall(r.stderr)), 1, r.stderr)
        self.assertIn("end of input inside a multi-line message", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--model", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
