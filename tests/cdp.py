"""A real headless browser for the HTML report's tests: Debian's chromium, driven over
the Chrome DevTools Protocol with a minimal WebSocket client on the standard library
(the CI environment needs no extra package). Every host name resolves to nothing
(--host-resolver-rules), and every request the page makes is recorded, so a report
that reached for the network would show it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


class _Socket:
    """Text frames over one WebSocket (RFC 6455): client frames masked, no extensions."""

    def __init__(self, url: str, timeout: float) -> None:
        rest = url.removeprefix("ws://")
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(head.decode(errors="replace"))

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            buf += chunk
        return buf

    def send(self, text: str) -> None:
        data = text.encode()
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self) -> str:
        parts = []
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            if b0 & 0x0F in (0x1, 0x0):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless chromium with one page; `open(path)` loads a file and returns the
    protocol events seen while it loaded."""

    def __init__(self, exe: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="tp-chromium-")
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "--window-size=1100,1400",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as resp:
            pages = [t for t in json.load(resp) if t.get("type") == "page"]
        self.ws = _Socket(pages[0]["webSocketDebuggerUrl"], timeout)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def _port(self) -> int:
        marker = Path(self.profile) / "DevToolsActivePort"
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def _wait(self, method: str) -> None:
        end = time.monotonic() + self.timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > end:
                raise TimeoutError(f"no {method}")
            self.events.append(json.loads(self.ws.recv()))

    def open(self, path: Path) -> list[dict[str, Any]]:
        self.events = []
        self.call("Page.navigate", url=path.resolve().as_uri())
        self._wait("Page.loadEventFired")
        self.evaluate("new Promise(r => setTimeout(r, 200))")  # late console messages arrive
        return list(self.events)

    def evaluate(self, expression: str) -> Any:
        got = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"script failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def screenshot(self, target: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(data))
        return target

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


def problems(events: list[dict[str, Any]], page: Path) -> list[str]:
    """Console errors, uncaught exceptions, and requests for anything but the page itself."""
    out = []
    own = page.resolve().as_uri()
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append(f"exception: {p['exceptionDetails'].get('text')}")
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append(f"console {p['type']}: {p.get('args')}")
        elif m == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
            out.append(f"log {p['entry']['level']}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif m == "Network.requestWillBeSent" and p["request"]["url"] != own:
            out.append(f"request: {p['request']['url'][:200]}")
        elif m == "Network.loadingFailed":
            out.append(f"failed load: {p.get('errorText')}")
    return out
