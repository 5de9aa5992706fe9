"""A small Chrome DevTools Protocol client for the browser tests: headless Chromium driven over
``--remote-debugging-pipe`` (the protocol's JSON messages, each ended by a NUL byte, on file
descriptors 3 and 4 of the browser), so no WebSocket library and no debugging port is needed.

    with Browser(tmp_path) as b:
        b.goto("http://127.0.0.1:8765/")
        b.eval("document.title")
        b.key("j")
        b.screenshot(path)
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Browser", "BrowserError"]


class BrowserError(AssertionError):
    pass


class Browser:
    """One headless Chromium with one page. ``console`` collects the page's console messages,
    uncaught exceptions and log entries (CSP violations among them)."""

    def __init__(self, profile: Path, chromium: str, width: int = 1280, height: int = 1000) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        to_browser_r, self._out = os.pipe()
        self._in, from_browser_w = os.pipe()

        def pipes() -> None:  # in the child: the protocol's descriptors 3 (read) and 4 (write)
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=pipes,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.console: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    # ---- transport ----------------------------------------------------------------------------

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._in, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                        self._note(msg)
                    self._cond.notify_all()

    def _note(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(f"console.{p.get('type')}: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            self.console.append("exception: " + str(p.get("exceptionDetails", {}).get("text")))
        elif method == "Log.entryAdded":
            entry = p.get("entry", {})
            self.console.append(f"log.{entry.get('level')} ({entry.get('source')}): {entry.get('text')}")

    def call(self, method: str, session: bool = False, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._next += 1
        mid = self._next
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise BrowserError(f"no answer to {method} (browser exit {self.proc.poll()})")
                self._cond.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """A command to the page."""
        return self.call(method, session=True, **params)

    # ---- what a test does ---------------------------------------------------------------------

    def goto(self, url: str, timeout: float = 30.0) -> None:
        """Open ``url`` and wait until its load event."""
        with self._cond:
            seen = len(self.events)
        self.send("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired", seen, timeout)

    def _wait_event(self, method: str, after: int, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for ev in self.events[after:]:
                    if ev.get("method") == method:
                        return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"no {method} within {timeout} s")
                self._cond.wait(left)

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression}: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        """Poll until the expression is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.eval(expression)
            except BrowserError as exc:
                # the page navigated while the expression was evaluated (a search submitted, a
                # link followed): ask again in the new page
                if "navigated or closed" not in str(exc) and "Cannot find context" not in str(exc):
                    raise
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout} s: {expression}")
            time.sleep(0.05)

    def key(self, key: str) -> None:
        """Press and release one key (a printable one, or Enter, Tab, ArrowDown...)."""
        text = key if len(key) == 1 else ("\r" if key == "Enter" else "")
        codes = {"Enter": 13, "Tab": 9, "ArrowDown": 40, "ArrowUp": 38, "Escape": 27}
        code = codes.get(key, ord(key.upper()) if len(key) == 1 else 0)
        down: dict[str, Any] = {"type": "keyDown" if text else "rawKeyDown", "key": key,
                                "windowsVirtualKeyCode": code}
        if text:
            down["text"] = text
        self.send("Input.dispatchKeyEvent", **down)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, windowsVirtualKeyCode=code)

    def type(self, text: str) -> None:
        self.send("Input.insertText", text=text)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the first element matching ``selector``."""
        box = self.eval(f"(function(){{var r=document.querySelector({json.dumps(selector)});"
                        "if(!r)return null;r.scrollIntoView({block:'center'});var b=r.getBoundingClientRect();"
                        "return [b.left+b.width/2,b.top+b.height/2];})()")
        if box is None:
            raise BrowserError(f"nothing matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1})
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
