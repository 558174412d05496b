"""Open a page in headless Chromium and report what a reader's browser would see.

Dependency-free: Chromium is started with ``--remote-debugging-pipe`` and driven over the
Chrome DevTools protocol on file descriptors 3 (commands in) and 4 (replies and events out),
each message one JSON object terminated by a NUL byte.  No websocket client, selenium or
playwright is needed; only the ``chromium`` binary (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")

# What the page reports about itself once loaded (evaluated in the page, returned by value).
PAGE_FACTS = """({
  images: Array.from(document.images).map(i => ({
    alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight})),
  pre: Array.from(document.querySelectorAll('pre')).map(p => p.innerText),
  headings: Array.from(document.querySelectorAll('h1, h2')).map(h => h.innerText),
  height: document.documentElement.scrollHeight,
})"""


@dataclass
class PageVisit:
    """What loading a page produced: ``errors`` (console errors, uncaught exceptions, failed
    loads, as text), ``facts`` (:data:`PAGE_FACTS`), ``screenshot`` (PNG bytes, the full page at
    the window width)."""

    errors: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    screenshot: bytes = b""


class _Pipe:
    """The DevTools protocol over two pipes: :meth:`call` sends a command and waits for its
    reply, keeping every event that arrives meanwhile in :attr:`events`."""

    def __init__(self, write_fd: int, read_fd: int, timeout_s: float):
        self.write_fd, self.read_fd, self.timeout_s = write_fd, read_fd, timeout_s
        self.events: list[dict] = []
        self._buffer = b""
        self._next_id = 0

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.read_fd], [], [], max(left, 0))
            if not ready:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise ConnectionError("chromium closed the debugging pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self.write_fd, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, deadline_s: float) -> dict:
        """The first event named ``method`` (already received or arriving in ``deadline_s``)."""
        deadline = time.monotonic() + deadline_s
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event


def _errors(events: list[dict]) -> list[str]:
    """Console errors, uncaught exceptions and browser log errors among the events."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
            found.append("console: " + " ".join(texts))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            found.append(f"exception: {text} ({details.get('url', '')})")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            found.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
    return found


def visit(url: str, width: int = 1400, height: int = 2000, timeout_s: float = 60) -> PageVisit:
    """Load ``url`` in a fresh headless Chromium (window ``width`` x ``height`` CSS px) and
    return its errors, :data:`PAGE_FACTS` and a full-page screenshot."""
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()

    def child_fds():
        """In the child: Chromium reads commands on fd 3 and writes replies on fd 4 (moved out
        of the way first so neither ``dup2`` clobbers the other pipe)."""
        commands = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        replies = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
        os.dup2(commands, 3)
        os.dup2(replies, 4)

    process = subprocess.Popen(
        [
            str(CHROMIUM),
            "--headless=new",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-pipe",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=False,
        preexec_fn=child_fds,
    )
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    pipe = _Pipe(to_chrome_w, from_chrome_r, timeout_s)
    try:
        targets = pipe.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = pipe.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Page"):
            pipe.call(f"{domain}.enable", session)
        pipe.events.clear()  # about:blank's load
        navigated = pipe.call("Page.navigate", session, url=url)
        if navigated.get("errorText"):
            raise RuntimeError(f"navigating to {url}: {navigated['errorText']}")
        pipe.wait_for("Page.loadEventFired", timeout_s)
        facts = pipe.call("Runtime.evaluate", session, expression=PAGE_FACTS, returnByValue=True)[
            "result"
        ]["value"]
        shot = pipe.call(
            "Page.captureScreenshot", session, format="png", captureBeyondViewport=True
        )["data"]
        result = PageVisit(_errors(pipe.events), facts, base64.b64decode(shot))
        with contextlib.suppress(ConnectionError, TimeoutError):
            pipe.call("Browser.close")
        return result
    finally:
        os.close(to_chrome_w)
        os.close(from_chrome_r)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
