#!/usr/bin/env python3
"""JSON Schema -> grammar, checked by an independent oracle.

For every corpus entry in tests/grammar/schemas/*.json ({"schema", "valid",
"invalid", "valid_but_refused"}):
  1. the corpus itself agrees with the oracle (Python's jsonschema, with its
     format checker): "valid" and "valid_but_refused" documents validate,
     "invalid" ones are not JSON or do not validate;
  2. folio-grammar-walk draws documents at random through folio's token
     masks; every one must parse as JSON and validate against the schema.
(The C++ suite checks that folio's matcher accepts "valid" and refuses the
other two lists.)

Usage: schema_corpus_test.py --walk build/folio-grammar-walk --schemas DIR [--count N]
Exit status: 0 pass, 1 fail (also when jsonschema or its format checkers
are missing: scripts/requirements.txt lists them for the repo's .venv).
"""

import argparse
import glob
import json
import os
import subprocess
import sys

try:
    import jsonschema
    from jsonschema.validators import validator_for
except ImportError:
    print("schema_corpus_test: the 'jsonschema' package is not installed; run "
          "'.venv/bin/pip install -r scripts/requirements.txt' and configure the build again")
    sys.exit(1)

# Formats the grammar generates; without their checkers the oracle would
# accept any string and prove nothing (time and date-time need the
# rfc3339-validator package).
FORMATS = ("date", "time", "date-time", "uuid")


def validator(schema):
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def errors_of(v, text):
    """None if `text` is a valid document, else why not."""
    try:
        value = json.loads(text)
    except ValueError as e:
        return f"not JSON: {e}"
    errs = sorted(v.iter_errors(value), key=lambda e: list(e.path))
    if errs:
        return "; ".join(f"{list(e.path)}: {e.message}" for e in errs[:3])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--walk", required=True, help="the folio-grammar-walk binary")
    ap.add_argument("--schemas", required=True, help="the corpus directory")
    ap.add_argument("--count", type=int, default=40, help="documents per schema")
    args = ap.parse_args()

    checkers = jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers
    missing = [f for f in FORMATS if f not in checkers]
    if missing:
        print(f"schema_corpus_test: jsonschema has no checker for {missing}; install "
              "scripts/requirements.txt (rfc3339-validator)")
        return 1

    files = sorted(glob.glob(os.path.join(args.schemas, "*.json")))
    if len(files) < 25:
        print(f"schema_corpus_test: only {len(files)} schemas in {args.schemas}")
        return 1
    failures = []
    documents = 0
    for path in files:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        v = validator(entry["schema"])
        for doc in entry.get("valid", []) + entry.get("valid_but_refused", []):
            why = errors_of(v, doc)
            if why:
                failures.append(f"{name}: corpus document {doc!r} should be valid: {why}")
        for doc in entry.get("invalid", []):
            if errors_of(v, doc) is None:
                failures.append(f"{name}: corpus document {doc!r} should be invalid")

        seed = sum(name.encode()) + 1
        run = subprocess.run([args.walk, "--schema", path, "--count", str(args.count),
                              "--seed", str(seed)], capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            failures.append(f"{name}: folio-grammar-walk failed: {run.stderr.strip()}")
            continue
        lines = run.stdout.splitlines()
        if len(lines) != args.count:
            failures.append(f"{name}: expected {args.count} documents, got {len(lines)}")
        for line in lines:
            doc = json.loads(line)
            documents += 1
            why = errors_of(v, doc)
            if why:
                failures.append(f"{name}: generated document {doc!r} is invalid: {why}")

    for f in failures:
        print("FAIL", f)
    print(f"schema_corpus_test: {len(files)} schemas, {documents} generated documents, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
