"""The web console in a real browser: logs to serve, the console running, Chromium.

- ``demo_log``: a log written by ``clawlog demo`` (a subprocess, as a user runs it);
  ``scenario_log``: a multi-agent run written here by a real :class:`System`: a boss that
  delegates to a worker and calls a tool, an MCP server that connects (the notes server of
  the MCP tests, stdio) and one that never does, and text holding ``<script>`` in the
  user's message, a tool's result, the worker's answer and the delegation's task.
- :func:`start_console` runs ``clawlog ui --port 0`` in a subprocess over a log and
  yields its URL once the process printed it (it prints only once it listens);
  ``demo_console`` / ``scenario_console`` are one each for the session.
- ``browser``: headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright),
  one per test module (see the fixture: async work goes through :func:`run_async`);
  without it the tests skip, naming what is missing, except in CI (``CI`` set) where
  they fail: scripts/test.sh installs both.
- ``browse``: a fresh page that records console errors, uncaught exceptions and failed
  requests (:class:`Browsing`); ``screenshot(page, name)`` saves a PNG under
  ``$CLAWLOG_ARTIFACTS`` (default ``tests/ui/artifacts/``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, call, reply
from clawlog.actors.mcp import McpServerConfig, mcp_servers
from clawlog.actors.providers import ModelReply, ModelRequest
from tests.mcp.conftest import FAST, count, notes_stdio, wait_for_events

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

_T = TypeVar("_T")

ROOT = Path(__file__).parents[2]
CHROMIUM = os.environ.get("CLAWLOG_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("CLAWLOG_ARTIFACTS") or Path(__file__).parent / "artifacts")

#: What the scenario's agents put in the log: each must be shown as text, never run.
HOSTILE = '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned=1">'
#: How long a console may take to open its log and listen (a busy 2-core machine).
START_TIMEOUT = 90.0


@dataclass
class RunningConsole:
    """A ``clawlog ui`` process: its URL (with the token when it has one) and log."""

    url: str
    log: Path
    process: subprocess.Popen[str]

    def at(self, path: str) -> str:
        """The URL of ``path`` on this console (``/audit?tool=exec``)."""
        base = self.url.split("?", 1)[0].rstrip("/")
        return base + path


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (scripts/test.sh installs it)", pytrace=False)
    pytest.skip(f"{reason}: run the tests via scripts/test.sh")


def run_async(work: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """``asyncio.run(work())`` in a thread of its own: Playwright's sync API keeps an event
    loop running in the test's thread, where ``asyncio.run`` is refused."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work()).result()


@contextlib.contextmanager
def start_console(
    log: Path | str, *args: str, timeout: float = START_TIMEOUT
) -> Iterator[RunningConsole]:
    """``clawlog ui --db LOG --port 0 ARGS`` until the block ends; fails (with its stderr)
    if it exits or prints no URL within ``timeout`` seconds."""
    process = subprocess.Popen(
        [sys.executable, "-m", "clawlog", "ui", "--db", str(log), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    watchdog = threading.Timer(timeout, process.kill)  # a bound on a failure, not a wait
    watchdog.start()
    try:
        assert process.stdout is not None and process.stderr is not None
        url = process.stdout.readline().strip()  # printed once it listens
        watchdog.cancel()
        if not url.startswith("http://"):
            process.kill()
            _, err = process.communicate(timeout=30)
            pytest.fail(f"clawlog ui printed no URL (exit {process.returncode}): {err}")
        yield RunningConsole(url=url, log=Path(log), process=process)
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


# -- logs ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    log = tmp_path_factory.mktemp("ui-demo") / "demo.db"
    done = subprocess.run(
        [sys.executable, "-m", "clawlog", "demo", "--db", str(log)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return log


def _boss_brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "user":
        if "[delegate:" in last.content:
            return reply(f"the boss read the worker's report: {last.content[-120:]}")
        return call("shout", text=f"shouting {HOSTILE}", words=HOSTILE)
    if last.name == "shout":
        return call("delegate", agent="worker", task=f"write the report {HOSTILE}", mode="sync")
    return reply(f"done: {last.content[:200]}")


def _worker_brain(request: ModelRequest) -> ModelReply:
    return reply(f"the report is written {HOSTILE}")


async def _shout(ctx: ToolContext, args: dict[str, object]) -> str:
    return f"shouted: {args.get('words', '')}"


async def _record_scenario(log: Path) -> None:
    async with System.open(log) as system:
        shout = FunctionTool(
            "shout",
            _shout,
            description="repeats its text",
            parameters={
                "type": "object",
                "properties": {"words": {"type": "string"}},
                "required": ["words"],
            },
        )
        await system.register_agent(
            AgentConfig(key="boss", description="delegates"),
            ScriptedModel(_boss_brain, name="scenario-boss"),
            tools=[shout],
        )
        await system.register_agent(
            AgentConfig(key="worker", description="writes reports"),
            ScriptedModel(_worker_brain, name="scenario-worker"),
        )
        await system.link_agents("boss", "worker")
        servers = mcp_servers(system)
        await servers.add(notes_stdio())
        await servers.add(
            McpServerConfig(
                name="ghost", command=f"no-such-server{HOSTILE}", **{**FAST, "max_attempts": 2}
            )
        )
        await servers.wait_connected("notes", 30)
        await wait_for_events(system, "mcp/ghost", count("mcp.failed"), timeout=60)
        answer = await system.send("boss", "s1", f"please report {HOSTILE}")
        assert "done" in answer, answer


@pytest.fixture(scope="session")
def scenario_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    log = tmp_path_factory.mktemp("ui-scenario") / "scenario.db"
    run_async(lambda: _record_scenario(log))
    return log


@pytest.fixture(scope="session")
def demo_console(demo_log: Path) -> Iterator[RunningConsole]:
    with start_console(demo_log) as console:
        yield console


@pytest.fixture(scope="session")
def scenario_console(scenario_log: Path) -> Iterator[RunningConsole]:
    with start_console(scenario_log) as console:
        yield console


# -- the browser ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Per module, not per session: while Playwright's sync API is open it keeps an event
    # loop running in this thread, where asyncio.run and the async tests of the modules
    # that follow (tests/web, ...) would be refused. In a module using it, run async work
    # through run_async, and write no async tests.
    if not Path(CHROMIUM).exists() and shutil.which(CHROMIUM) is None:
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is missing (pip install playwright)")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Browsing:
    """A page, and what went wrong in it: console errors, uncaught exceptions, failed
    requests (each a line naming it)."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def goto(self, url: str) -> Any:
        """Load ``url``; fails unless the server answered 2xx."""
        response = self.page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        return response


@pytest.fixture
def browse(browser: Browser) -> Iterator[Browsing]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    browsing = Browsing(page)
    page.on(
        "console",
        lambda m: browsing.errors.append(f"console: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda exc: browsing.errors.append(f"uncaught: {exc}"))
    page.on(
        "requestfailed",
        lambda r: (
            None
            if _live_stream(r.url)  # cut when the page is left: not a failure
            else browsing.errors.append(f"request failed: {r.url} ({r.failure})")
        ),
    )
    try:
        yield browsing
    finally:
        context.close()


def _live_stream(url: str) -> bool:
    path = url.split("?", 1)[0]
    return path.endswith("/live")


def screenshot(page: Page, name: str) -> Path:
    """Save the whole page as ``ARTIFACTS/NAME.png``; returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
