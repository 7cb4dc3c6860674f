#!/usr/bin/env python3
"""Validate cvhost's stdout (JSON Lines) against schema/cvhost-events.schema.json.

Usage: validate-jsonl.py [FILE ...]   (no FILE: stdin)

Every line must be one JSON object that validates. Prints `N lines valid` or one line per
failure (file:line: reason) and exits 1 when any line fails, 2 when no line was read.
"""
import json
import pathlib
import sys

import jsonschema

SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "schema" / "cvhost-events.schema.json"


def main(argv):
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    sources = [(p, open(p, "rb")) for p in argv] or [("<stdin>", sys.stdin.buffer)]
    total = failures = 0
    for name, stream in sources:
        for number, raw in enumerate(stream, 1):
            total += 1
            if not raw.endswith(b"\n"):
                failures += 1
                print(f"{name}:{number}: line does not end with a newline (partial line)")
            try:
                obj = json.loads(raw)
            except ValueError as e:
                failures += 1
                print(f"{name}:{number}: not JSON: {e}")
                continue
            errors = sorted(validator.iter_errors(obj), key=lambda e: e.path)
            if errors:
                failures += 1
                best = jsonschema.exceptions.best_match(errors)
                print(f"{name}:{number}: {best.message} at {'/'.join(map(str, best.absolute_path)) or '(root)'}")
    if total == 0:
        print("no lines to validate")
        return 2
    if failures:
        print(f"{failures} of {total} lines invalid")
        return 1
    print(f"{total} lines valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
