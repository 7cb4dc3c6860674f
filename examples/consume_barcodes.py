#!/usr/bin/env python3
"""Reads cvhost's JSON Lines on stdin and prints each barcode once, as it comes into view.

    cvhost run --plugin barcode:report=new --input examples/demo/codes.mp4 | examples/consume_barcodes.py

cvhost flushes every line as it is written, so this works the same on a live camera: each code
is printed the moment it is first seen. Lines of other events are passed over; a session.error
is printed to stderr; the exit code is 1 if the session failed.
"""
import json
import sys


def main():
    failed = False
    for line in sys.stdin:
        event = json.loads(line)
        kind = event["event"]
        if kind == "result" and event["type"] == "barcode":
            code = event["data"]
            text = code["text"] if code["text"] is not None else f"<{len(code['raw_base64'])} base64 chars of binary>"
            print(f"{event['pts']:8.3f}s  {code['symbology']:<8} {text}", flush=True)
        elif kind == "session.error":
            print(f"cvhost: {event['message']}", file=sys.stderr)
            failed = True
        elif kind == "session.stopped":
            print(f"-- {event['frames']} frames, stopped: {event['reason']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
