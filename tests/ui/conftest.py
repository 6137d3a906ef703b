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
- :class:`LogWriter`: another process that keeps a log open for writing and appends on
  request, answering with the position and the wall-clock time at which the append was
  durable; :meth:`Browsing.watch` notes, in the page, the moment an element matching a
  selector first appears. Together they measure "a new event appears within 1 s" from
  the append to the page, with no sleep and no polling interval of the test in it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
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
from tests.mcp.conftest import FAST, notes_stdio
from tests.support.waiting import count, wait_for_events

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Request

_T = TypeVar("_T")

ROOT = Path(__file__).parents[2]
CHROMIUM = os.environ.get("CLAWLOG_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("CLAWLOG_ARTIFACTS") or Path(__file__).parent / "artifacts")

#: What the scenario's agents put in the log: each must be shown as text, never run.
HOSTILE = '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned=1">'
#: How long a console may take to open its log and listen (a busy 2-core machine).
START_TIMEOUT = 90.0
#: What the console promises: an event appended to the log is on an open page within
#: this many seconds (issue 21), on a busy machine too.
LIVE_WITHIN_S = 1.0
#: How long a test waits (in ms) for a page to show what it must eventually show: a
#: bound on a failure, not the promise (the live tests measure that).
SHOWN_TIMEOUT_MS = 30_000
#: How long a re-run of the demo's session may take (it replays every turn).
RERUN_TIMEOUT_S = 120.0


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
    log: Path | str,
    *args: str,
    timeout: float = START_TIMEOUT,
    env: dict[str, str] | None = None,
) -> Iterator[RunningConsole]:
    """``clawlog ui --db LOG --port 0 ARGS`` until the block ends (``env``: variables to
    set for it); fails (with its stderr) if it exits or prints no URL within ``timeout``
    seconds."""
    environment = {k: v for k, v in os.environ.items() if k != "CLAWLOG_UI_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "clawlog", "ui", "--db", str(log), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**environment, **(env or {})},
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


# -- a writer in another process ----------------------------------------------------------
_WRITER = """
import asyncio, json, sys, time
from clawlog.events import ANY, EventMetadata, open_store
from clawlog.events.domain.actor import ActorStarted
from clawlog.events.domain.session import SessionStarted, TurnStarted
from clawlog.events.domain.tool import (
    ToolApprovalDecided, ToolApprovalRequested, ToolCallRefused, ToolCallRequested)

def events(what, name, stream, agent):
    key = stream.rsplit("/", 1)[-1]
    if what == "start":
        return [SessionStarted(agent=agent, session_key=key),
                TurnStarted(turn_id="live-turn", text="watch the timeline")]
    if what == "agent":
        return [ActorStarted(path=f"agent/{name}", kind="agent")]
    if what == "approval":
        return [ToolApprovalRequested(call_id=name, tool="exec", summary="exec ls"),
                ToolApprovalDecided(call_id=name, tool="exec", decision="deny", by="ops")]
    return [ToolCallRequested(call_id=name, tool="exec", agent=agent, session_key=key),
            ToolCallRefused(call_id=name, tool="exec", step="policy", reason=f"denied {name}",
                            agent=agent, session_key=key)]

async def main(path):
    store = await open_store(path)
    try:
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            what, name, stream, agent = json.loads(line)
            target = f"agent/{name}" if what == "agent" else stream
            meta = EventMetadata(correlation_id=f"live-{name}", actor=target)
            recorded = await store.append(target, events(what, name, stream, agent), ANY, meta)
            durable = time.time()  # the append returned: the events are on disk
            print(json.dumps({"position": recorded[-1].position, "at": durable}), flush=True)
    finally:
        await store.close()

asyncio.run(main(sys.argv[1]))
"""


@dataclass(frozen=True)
class Appended:
    """What :meth:`LogWriter.append` wrote: the last position, and the wall-clock time
    (epoch seconds) at which the append returned, durable."""

    position: int
    at: float


class LogWriter:
    """A process that holds ``log`` open for writing (as an application's would) and
    appends when asked: ``start`` (a session and a turn), ``call`` (a refused exec call),
    ``approval`` (a denied approval), ``agent`` (a new agent's stream)."""

    def __init__(self, log: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        assert self._answer().get("ready"), "the writer did not open the log"

    def append(
        self,
        what: str,
        name: str = "",
        stream: str = "session/live/u1",
        agent: str = "live",
    ) -> Appended:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps([what, name, stream, agent]) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        return Appended(position=int(answer["position"]), at=float(answer["at"]))

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self._pool.submit(self.process.stdout.readline).result(timeout=START_TIMEOUT)
        if not line:
            self.process.kill()
            _, err = self.process.communicate(timeout=30)
            pytest.fail(f"the writer process ended (exit {self.process.returncode}): {err}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()  # its loop ends, it closes the log
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        self._pool.shutdown()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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

    def watch(self, selector: str, text: str = "") -> str:
        """From now on, note (in the page) when an element matching ``selector`` (and
        holding ``text``) first appears: a MutationObserver stamps it in the task that
        inserts it. Fails if it is already there (the stamp would say nothing). Returns
        the name :meth:`appeared_at` takes."""
        name = f"{selector} {text}"
        watching = self.page.evaluate(_WATCH, {"name": name, "selector": selector, "text": text})
        assert watching, f"{selector} holding {text!r} is already on the page"
        return name

    def appeared_at(self, name: str, timeout_ms: float = SHOWN_TIMEOUT_MS) -> float:
        """The wall-clock time (epoch seconds) at which the watched element ``name``
        first appeared, once it has (waiting up to ``timeout_ms``: a bound on a failure)."""
        self.page.wait_for_function(
            "n => window.__appeared && window.__appeared[n]", arg=name, timeout=timeout_ms
        )
        stamped: float = self.page.evaluate("n => window.__appeared[n]", name)
        return stamped / 1000


_WATCH = """({name, selector, text}) => {
  const there = () => [...document.querySelectorAll(selector)]
    .some(e => e.textContent.includes(text));
  if (there()) { return false; }
  window.__appeared = window.__appeared || {};
  const observer = new MutationObserver(() => {
    if (there()) {
      window.__appeared[name] = Date.now();
      observer.disconnect();
    }
  });
  observer.observe(document.documentElement, {
    childList: true, subtree: true, attributes: true, characterData: true
  });
  return true;
}"""


def arrives_in_time(browse: Browsing, name: str, appended: Appended) -> float:
    """Seconds from the durable append to the watched element ``name`` on the page;
    fails if that is more than the console promises (:data:`LIVE_WITHIN_S`)."""
    waited = browse.appeared_at(name) - appended.at
    assert waited <= LIVE_WITHIN_S, f"{name} showed {waited:.3f} s after its append"
    return waited


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
            if _cut_by_leaving(r)  # not a failure of the page
            else browsing.errors.append(f"request failed: {r.url} ({r.failure})")
        ),
    )
    try:
        yield browsing
    finally:
        context.close()


def _cut_by_leaving(request: Request) -> bool:
    """A request the browser cancelled because the test left the page: the page's live
    stream (``/live``), or its live refresh (live.js fetches the page again when the log
    grows; a navigation that starts meanwhile aborts it). A request that failed any other
    way (refused, reset, timed out) is not this."""
    if request.url.split("?", 1)[0].endswith("/live"):
        return True
    return request.resource_type == "fetch" and request.failure == "net::ERR_ABORTED"


def screenshot(page: Page, name: str) -> Path:
    """Save the whole page as ``ARTIFACTS/NAME.png``; returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
