#!/usr/bin/env python3
"""Closing summary of scripts/test.sh, read from ctest's JUnit files and
gtest's XML files (scripts/test-arm.sh).

A test may skip only for hardware this CPU lacks: its GTEST_SKIP message
starts with "hardware:" (another kernel tier, AVX-512 or AMX on an AVX2
machine). Those are listed, grouped by reason, with the kernel ISA this CPU
runs; any other skip (a missing reference file, an unset variable) fails the
run, since CI must not skip what this machine can run.

Lanes scripts/test.sh left out for its time budget (--not-run) are listed
too: they did not pass, they were not run.

Usage: test_summary.py --folio build/folio [--seconds S] [--not-run LANE]... JUNIT.xml...
Prints 'N passed, N failed, N skipped' and exits 1 on a failure or a
non-hardware skip.
"""

import argparse
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def skip_reason(case):
    text = ""
    for tag in ("skipped", "system-out"):
        for el in case.iter(tag):
            text += (el.get("message") or "") + "\n" + (el.text or "") + "\n"
    # ctest's JUnit: gtest prints "file:line: Skipped" and the message on
    # the next line. gtest's own XML (scripts/test-arm.sh): "file:line" then
    # the message.
    m = re.search(r"Skipped\s*\n(.+)", text) or re.search(r"^\S+:\d+\s*\n(.+)", text)
    return m.group(1).strip() if m else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--not-run", action="append", default=[],
                    help="a lane scripts/test.sh did not run (its time budget), with why")
    ap.add_argument("junit", nargs="+")
    a = ap.parse_args()

    passed = failed = 0
    hardware = defaultdict(list)
    other = []
    for path in a.junit:
        suite = path.split("/")[0]
        for case in ET.parse(path).getroot().iter("testcase"):
            name = f"{suite}: {case.get('name')}"
            status = case.get("status", "run")
            if case.find("failure") is not None or status == "fail":
                failed += 1
            elif case.find("skipped") is not None or status in ("notrun", "disabled"):
                reason = skip_reason(case)
                if reason.startswith("hardware:"):
                    hardware[reason[len("hardware:"):].strip()].append(name)
                else:
                    other.append((name, reason or "no reason given"))
            else:
                passed += 1

    info = subprocess.run([a.folio, "info"], capture_output=True, text=True).stdout
    active = re.search(r"active isa\s*:\s*(\S+)", info)
    print(f"\ntest summary ({a.seconds} s); kernels on this CPU: "
          f"{active.group(1) if active else 'unknown'}")
    if hardware:
        print("not exercised on this CPU (the tiers it lacks; they run where the hardware is):")
        for reason, names in sorted(hardware.items()):
            print(f"  {reason}: {len(names)} tests")
    else:
        print("every kernel tier was exercised")
    for lane in a.not_run:
        print(f"LANE NOT RUN (CI's time budget on this machine; not a pass): {lane}")
    for name, reason in other:
        print(f"SKIPPED WITHOUT A HARDWARE REASON (counted as failed): {name}: {reason}")
    failed += len(other)
    skipped = sum(len(v) for v in hardware.values())
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
