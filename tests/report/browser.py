"""A small headless-Chromium driver over the DevTools protocol (websocket via aiohttp): open a
page, collect console errors, exceptions and network requests, measure overflow, screenshot.

Chromium runs with the flags that keep it off the network (no background networking, no
component updates, no sync) and a fresh profile directory; it is Debian's ``chromium`` package,
installed by ``scripts/install_chromium.sh`` (``.ci/run`` calls it).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
)
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")


def find_chromium() -> str | None:
    env = os.environ.get("AGENTX_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageReport:
    """What one page load did."""

    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    overflow_px: int = 0  # how far the page is wider than the viewport
    screenshot: Path | None = None

    @property
    def network(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(LOCAL_SCHEMES)]


class Browser:
    """One Chromium process, one page (target) driven through a flat DevTools session."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self._profile = Path(tempfile.mkdtemp(prefix="agentx-chromium-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._session: str | None = None

    async def __aenter__(self) -> Browser:
        self._proc = subprocess.Popen(
            [self.executable, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self._profile / "DevToolsActivePort"
        for _ in range(600):  # up to 60 s on a loaded machine
            if port_file.is_file() and len(port_file.read_text().splitlines()) >= 2:
                break
            if self._proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._proc.returncode}")
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError("chromium did not open its DevTools port")
        port, path = port_file.read_text().splitlines()[:2]
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        target = await self.send("Target.createTarget", {"url": "about:blank"}, browser=True)
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, browser=True
        )
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            await self.send(f"{domain}.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            await self._ws.close()
        if self._http is not None:
            await self._http.close()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    async def _read(self) -> None:
        assert self._ws is not None
        async for msg in self._ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = msg.json()
            if "id" in data and data["id"] in self._pending:
                self._pending.pop(data["id"]).set_result(data)
            elif "method" in data:
                await self._events.put(data)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, browser: bool = False
    ) -> dict[str, Any]:
        assert self._ws is not None
        i = next(self._ids)
        message: dict[str, Any] = {"id": i, "method": method, "params": params or {}}
        if not browser:
            message["sessionId"] = self._session
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[i] = fut
        await self._ws.send_json(message)
        reply = await asyncio.wait_for(fut, 60)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})  # type: ignore[no-any-return]

    def _drain(self, report: PageReport) -> bool:
        """Move queued events into ``report``; True once the page's load event was seen."""
        loaded = False
        while not self._events.empty():
            ev = self._events.get_nowait()
            method, p = ev["method"], ev.get("params", {})
            if method == "Page.loadEventFired":
                loaded = True
            elif method == "Runtime.exceptionThrown":
                report.exceptions.append(str(p.get("exceptionDetails", {}).get("text")))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                report.console_errors.append(str(p.get("args")))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                report.console_errors.append(str(p["entry"].get("text")))
            elif method == "Network.requestWillBeSent":
                report.requests.append(str(p.get("request", {}).get("url")))
        return loaded

    async def open(
        self, page: Path, width: int, screenshot: Path | None = None, height: int = 900
    ) -> PageReport:
        """Load ``page`` in a ``width`` x ``height`` viewport; a full-page screenshot if asked."""
        report = PageReport()
        self._drain(PageReport())  # forget the previous page's stragglers
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        await self.send("Page.navigate", {"url": page.resolve().as_uri()})
        for _ in range(600):
            if self._drain(report):
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(f"{page}: no load event")
        await asyncio.sleep(0.3)  # late console messages
        self._drain(report)
        value = await self.send(
            "Runtime.evaluate",
            {
                "expression": "document.documentElement.scrollWidth - window.innerWidth",
                "returnByValue": True,
            },
        )
        report.overflow_px = int(value["result"]["value"])
        if screenshot is not None:
            metrics = await self.send("Page.getLayoutMetrics")
            height = int(metrics["cssContentSize"]["height"])
            shot = await self.send(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
                },
            )
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            report.screenshot = screenshot
        return report

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the open page."""
        value = await self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}
        )
        return value["result"].get("value")

    async def first_screen(self, selector: str) -> bool:
        """Is the element ``selector`` wholly inside the viewport as the page loaded (scrolled
        to the top), drawn and not folded away?"""
        await self.evaluate("window.scrollTo(0, 0)")
        js = (
            f"(() => {{ const e = document.querySelector({selector!r}); if (!e) return false;"
            " const r = e.getBoundingClientRect(), s = getComputedStyle(e);"
            " return e.offsetParent !== null && s.visibility !== 'hidden' && r.width > 0"
            " && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight"
            " && r.right <= window.innerWidth; })()"
        )
        return bool(await self.evaluate(js))

    async def viewport_screenshot(self, path: Path) -> None:
        """The viewport as it is, as a PNG."""
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
