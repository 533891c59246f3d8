"""A small headless-Chromium harness for the report tests (DevTools protocol over a
websocket, websocket-client).  The browser runs with every network address unreachable
(a proxy on a closed port, host resolution mapped to nothing); every request the page
makes is recorded, so a test can assert that none left the file."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageResult:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    values: dict = field(default_factory=dict)
    screenshot: bytes = b""


def load_page(path: Path, expressions: dict[str, str], width: int = 1280, timeout: float = 60.0) -> PageResult:
    """Open ``path`` (file://) in headless Chromium with the network disabled; return the
    console errors (console.error calls, uncaught exceptions, browser log errors such as
    failed loads), every request URL, JavaScript dialogs, the value of each expression
    and a full-page PNG screenshot."""
    import websocket  # websocket-client

    exe = chromium_path()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    profile = Path(tempfile.mkdtemp(prefix="pb-chromium-"))
    proc = subprocess.Popen(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}", "--remote-debugging-port=0",
         f"--window-size={width},900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        t0 = time.time()
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.time() - t0 > timeout or proc.poll() is not None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        targets = json.loads(opener.open(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        res = PageResult()
        msg_id = 0

        def send(method, **params):
            nonlocal msg_id
            msg_id += 1
            ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
            return msg_id

        def handle(ev):
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                res.console_errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                res.console_errors.append(p["exceptionDetails"].get("text", "exception"))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                res.console_errors.append(p["entry"].get("text", ""))
            elif m == "Network.requestWillBeSent":
                res.requests.append(p["request"]["url"])
            elif m == "Page.javascriptDialogOpening":
                res.dialogs.append(p.get("message", ""))
                send("Page.handleJavaScriptDialog", accept=True)

        def call(method, **params):
            i = send(method, **params)
            while True:
                ev = json.loads(ws.recv())
                if ev.get("id") == i:
                    if "error" in ev:
                        raise RuntimeError(f"{method}: {ev['error']}")
                    return ev.get("result", {})
                handle(ev)

        for dom in ("Runtime", "Log", "Network", "Page"):
            call(f"{dom}.enable")
        call("Page.navigate", url=path.resolve().as_uri())
        t0 = time.time()
        while True:
            ev = json.loads(ws.recv())
            handle(ev)
            if ev.get("method") == "Page.loadEventFired":
                break
            if time.time() - t0 > timeout:
                raise RuntimeError("page did not load")
        for name, expr in expressions.items():
            r = call("Runtime.evaluate", expression=expr, returnByValue=True)
            res.values[name] = r.get("result", {}).get("value")
        shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        res.screenshot = base64.b64decode(shot["data"])
        # drain late events briefly (e.g. a failed load logged after onload)
        ws.settimeout(0.5)
        try:
            while True:
                handle(json.loads(ws.recv()))
        except websocket.WebSocketTimeoutException:
            pass
        ws.close()
        return res
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)
