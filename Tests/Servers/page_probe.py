#!/usr/bin/python3
"""Opens a page in headless Chromium and reads it as it runs, through the DevTools protocol
(websocket-client, Debian's python3-websocket): evaluates EXPRESSION in the page until it gives a
value that is true (or TIMEOUT seconds pass), then prints that value as one JSON line (null when it
never came). For the live-view tests: what --dump-dom cannot see (the picture of a streamed MJPEG,
drawn over as results arrive).

    page_probe.py URL EXPRESSION [TIMEOUT]
    page_probe.py URL STEPS [TIMEOUT]

STEPS is a JSON list of what a user does, in order, each within what is left of TIMEOUT:
{"wait": EXPRESSION} (until true), {"click": EXPRESSION, "then": CHECK} (a mouse click, pressed and
released, at the [x, y] the expression gives, in the page's CSS pixels: Input.dispatchMouseEvent;
with "then", clicked again, at the place asked anew, until CHECK is true: a page that moved between
the asking and the click, as a busy page may, is clicked where its element now is), {"type": TEXT}
(typed into what has the focus: Input.insertText), {"screenshot": PATH} (the page as it is now, a
PNG: Page.captureScreenshot). The value printed is the last wait's;
when a step never comes true, {"failed": "step N: ...", "page": the page's text} instead.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

url, script = sys.argv[1], sys.argv[2]
timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 20
steps = json.loads(script) if script.lstrip().startswith("[") else [{"wait": script}]
profile = tempfile.mkdtemp(prefix="cvhost-probe-")
browser = subprocess.Popen(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,800",
                            "--remote-debugging-port=0", f"--user-data-dir={profile}", url],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
value = None
try:
    deadline = time.monotonic() + timeout
    # Chromium writes the port it chose to DevToolsActivePort in its profile.
    port_file = os.path.join(profile, "DevToolsActivePort")
    while not os.path.exists(port_file) and time.monotonic() < deadline:
        time.sleep(0.1)
    port = int(open(port_file).read().split()[0])
    page = None
    while page is None and time.monotonic() < deadline:
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next((t for t in targets if t.get("type") == "page"), None)
        time.sleep(0.1)
    ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout)
    asked = 0

    def call(method, params):
        global asked
        asked += 1
        ws.send(json.dumps({"id": asked, "method": method, "params": params}))
        while True:
            answer = json.loads(ws.recv())
            if answer.get("id") == asked:
                return answer.get("result", {})

    def evaluate(expression):
        return call("Runtime.evaluate", {"expression": expression, "returnByValue": True}).get("result", {}).get("value")

    def until(expression):
        while time.monotonic() < deadline:
            got = evaluate(expression)
            if got:
                return got
            time.sleep(0.2)
        return None

    def failed(n, step):
        text = evaluate("document.body ? document.body.innerText.slice(0, 1500) : ''")
        return {"failed": f"step {n}: {json.dumps(step)}", "page": text}

    # The viewport the size of the window (headless Chromium's is smaller: its window's frame), so
    # that a screenshot is the 1280x800 the tests measure in.
    call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})

    for n, step in enumerate(steps):
        if "wait" in step:
            value = until(step["wait"])
            if value is None:
                value = failed(n, step) if len(steps) > 1 else None
                break
        elif "click" in step:
            landed = False
            for attempt in range(5):
                point = until(step["click"])
                if point is None:
                    break
                for kind in ("mousePressed", "mouseReleased"):
                    call("Input.dispatchMouseEvent", {"type": kind, "x": point[0], "y": point[1], "button": "left", "clickCount": 1})
                if "then" not in step:
                    landed = True
                    break
                settle = time.monotonic() + 2
                while time.monotonic() < min(settle, deadline) and not evaluate(step["then"]):
                    time.sleep(0.1)
                if evaluate(step["then"]):
                    landed = True
                    break
            if not landed:
                value = failed(n, step)
                break
        elif "type" in step:
            call("Input.insertText", {"text": step["type"]})
        elif "screenshot" in step:
            shot = call("Page.captureScreenshot", {"format": "png"}).get("data")
            if shot is None:
                value = failed(n, step)
                break
            with open(step["screenshot"], "wb") as f:
                f.write(base64.b64decode(shot))
    ws.close()
finally:
    browser.terminate()
    browser.wait()
    shutil.rmtree(profile, ignore_errors=True)
print(json.dumps(value))
