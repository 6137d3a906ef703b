"""Every page of the console but the timeline, in headless Chromium, over real logs.

Against the demo's log and the multi-agent scenario's (``conftest.py``): each page loads
without a console error, shows what the read models hold, and is saved as a screenshot;
the audit's filters narrow the table; the session page's re-run form shows the
divergence report; every page follows the log as it grows, a new event on it within a
second of its append (measured from the writer's durable append to the element's
insertion in the page).
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from clawlog.events import ANY, open_store
from clawlog.events.backends.sqlite import SqliteBackend
from clawlog.events.domain.tool import ToolCallRequested
from clawlog.ui import ConsoleConfig, create_app
from clawlog.ui.pages import PAGE

from .conftest import (
    HOSTILE,
    RERUN_TIMEOUT_S,
    ROOT,
    Browsing,
    LogWriter,
    RunningConsole,
    arrives_in_time,
    run_async,
    screenshot,
    start_console,
)

#: (path, data-page) of the demo's pages, and a text each must show.
DEMO_PAGES = [
    ("/", "overview", "exec"),
    ("/sessions", "sessions", "demo-user"),
    ("/sessions/lead/demo-user", "session", "Plan the v1.0 release"),
    ("/boards", "boards", "Release crew"),
    ("/boards/release", "board", "tag the v1.0 release"),
    ("/routes", "routes", "billing"),
    ("/delegations", "delegations", "no delegations"),
    ("/mcp", "mcp", "no MCP servers"),
    ("/audit", "audit", "team_tasks"),
]


def _shows_no_errors(browsing: Browsing) -> None:
    assert browsing.errors == [], browsing.errors


@pytest.mark.parametrize(("path", "name", "text"), DEMO_PAGES)
def test_each_page_of_the_demo_loads_without_console_errors(
    demo_console: RunningConsole, browse: Browsing, path: str, name: str, text: str
) -> None:
    browse.goto(demo_console.at(path))
    page = browse.page
    assert page.locator(f'main#page[data-page="{name}"]').count() == 1
    assert text in page.locator("main#page").inner_text()
    assert page.locator("header nav a.here").count() == 1  # the page's own section
    screenshot(page, f"demo-{name}")
    _shows_no_errors(browse)


def test_the_overview_shows_agents_sessions_teams_activity_and_the_refusal(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    browse.goto(demo_console.at("/"))
    page = browse.page
    agents = page.locator('table[data-table="agents"] tbody tr')
    assert sorted(agents.all_inner_texts())[0].startswith("billing")
    assert agents.count() == 4  # lead, dev, qa, billing
    assert page.locator('table[data-table="teams"]').inner_text().count("Release crew") == 1
    refusal = page.locator('table[data-table="refusals"] tbody tr')
    assert refusal.count() == 1
    assert "exec" in refusal.inner_text() and "rm -rf" in refusal.inner_text()
    assert refusal.locator('[data-outcome="refused"]').inner_text() == "refused at approval"
    assert page.locator('table[data-table="activity"] tbody tr').count() > 5
    # The navigation reaches every section.
    for label, name in (("Sessions", "sessions"), ("Audit", "audit"), ("Overview", "overview")):
        page.get_by_role("link", name=label, exact=True).click()
        page.wait_for_selector(f'main#page[data-page="{name}"]')
    _shows_no_errors(browse)


def test_a_session_shows_the_conversation_with_its_tool_calls_inline(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    browse.goto(demo_console.at("/sessions"))
    lead = browse.page.locator('table[data-table="sessions"] tbody tr').filter(has_text="lead")
    lead.get_by_role("link", name="demo-user").click()
    page = browse.page
    page.wait_for_selector('main#page[data-page="session"]')
    kinds = page.locator(".conversation .entry").evaluate_all("els => els.map(e => e.dataset.kind)")
    assert kinds[0] == "user"
    assert {"tool_calls", "tool", "tool_refused", "reply"} <= set(kinds)
    refused = page.locator('.entry[data-kind="tool_refused"]')
    assert "exec" in refused.first.inner_text()
    positions = page.locator(".conversation .entry").evaluate_all(
        "els => els.map(e => Number(e.dataset.position))"
    )
    assert positions == sorted(positions)  # in log order
    page.get_by_role("link", name="on the timeline").click()  # the same session there
    page.wait_for_selector('main#page[data-page="timeline"]')
    assert "session=session%2Flead%2Fdemo-user" in page.url
    _shows_no_errors(browse)


def test_the_rerun_form_shows_where_denying_a_tool_diverges(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    page = browse.page
    browse.goto(demo_console.at("/sessions/lead/demo-user"))
    page.locator('form[data-form="rerun"] button').click()
    page.wait_for_selector("[data-rerun]", timeout=RERUN_TIMEOUT_S * 1000)
    assert page.locator("[data-rerun]").get_attribute("data-rerun") == "matched"
    page.locator('form[data-form="rerun"] input[name="deny"]').fill("handoff")
    page.locator('form[data-form="rerun"] button').click()
    page.wait_for_selector('[data-rerun="diverged"]', timeout=RERUN_TIMEOUT_S * 1000)
    report = page.locator('table[data-table="divergence"]').inner_text()
    assert "refusal" in report and "handoff" in report
    assert page.locator('input[name="deny"]').input_value() == "handoff"  # kept for the next
    screenshot(page, "demo-session-rerun")
    _shows_no_errors(browse)


def test_the_audit_filters_narrow_the_table(demo_console: RunningConsole, browse: Browsing) -> None:
    page = browse.page
    browse.goto(demo_console.at("/audit"))
    every = page.locator('table[data-table="audit"] tbody tr').count()
    page.locator('input[name="tool"]').fill("team_tasks")
    page.locator('form[data-form="audit"] button').click()
    page.wait_for_url(re.compile(r"tool=team_tasks"))
    tools = page.locator('table[data-table="audit"] tbody tr td:nth-child(2)').all_inner_texts()
    assert tools and set(tools) == {"team_tasks"} and len(tools) < every
    page.locator('input[name="tool"]').fill("")
    page.locator('input[name="refused"]').check()
    page.locator('form[data-form="audit"] button').click()
    page.wait_for_url(re.compile(r"refused=1"))
    rows = page.locator('table[data-table="audit"] tbody tr')
    assert rows.count() == 1 and "exec" in rows.inner_text()
    page.locator('input[name="agent"]').fill("dev")
    page.locator('form[data-form="audit"] button').click()
    page.wait_for_url(re.compile(r"agent=dev"))
    assert "no tool calls match these filters" in rows.inner_text()
    screenshot(page, "demo-audit-filtered")
    _shows_no_errors(browse)


def test_a_missing_session_team_or_server_is_a_404_page_naming_it(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    for path, text in (
        ("/sessions/lead/nobody", "no session 'nobody' for agent 'lead'"),
        ("/boards/nope", "no team 'nope'"),
        ("/mcp/nope", "no MCP server 'nope'"),
        ("/delegations/dg-nope", "no delegation, subagent task or link 'dg-nope'"),
    ):
        response = browse.page.goto(demo_console.at(path))
        assert response is not None and response.status == 404
        assert text in browse.page.locator("main#page").inner_text()


# -- the multi-agent scenario ----------------------------------------------------------------
def test_the_scenario_pages_show_delegations_lineage_and_mcp_health(
    scenario_console: RunningConsole, browse: Browsing
) -> None:
    page = browse.page
    browse.goto(scenario_console.at("/"))
    screenshot(page, "scenario-overview")
    servers = page.locator('table[data-table="mcp-servers"] tbody tr').all_inner_texts()
    assert any(row.startswith("ghost") and "failed" in row for row in servers), servers
    assert any(row.startswith("notes") for row in servers), servers

    browse.goto(scenario_console.at("/delegations"))
    row = page.locator('table[data-table="delegations"] tbody tr')
    assert row.count() == 1 and "boss → worker" in row.inner_text()
    assert "completed" in row.inner_text()
    screenshot(page, "scenario-delegations")
    row.get_by_role("link").click()
    page.wait_for_selector('main#page[data-page="delegation"]')
    chain = page.locator(".lineage .chain").inner_text()
    assert "requested" in chain and "worked" in chain and "completed" in chain
    assert "session/worker/" in chain
    screenshot(page, "scenario-lineage")

    browse.goto(scenario_console.at("/mcp"))
    page.get_by_role("link", name="notes", exact=True).click()
    page.wait_for_selector('main#page[data-page="mcp-server"]')
    tools = page.locator('table[data-table="mcp-tools"] tbody').inner_text()
    assert "mcp_notes_read_note" in tools and "mcp_notes_delete_note" in tools
    screenshot(page, "scenario-mcp-server")
    browse.goto(scenario_console.at("/mcp"))
    screenshot(page, "scenario-mcp")

    browse.goto(scenario_console.at("/sessions/boss/s1"))
    kinds = page.locator(".conversation .entry").evaluate_all("els => els.map(e => e.dataset.kind)")
    assert kinds.count("tool") == 2  # shout, then delegate: both completed, inline
    screenshot(page, "scenario-session")
    _shows_no_errors(browse)


# -- live: pages follow the log -------------------------------------------------------------
@pytest.fixture
def growing_demo(tmp_path: Path, demo_log: Path) -> Iterator[tuple[RunningConsole, LogWriter]]:
    """A console over a copy of the demo's log, and another process writing to it."""
    log = tmp_path / "growing.db"
    log.write_bytes(demo_log.read_bytes())
    with LogWriter(log) as writer, start_console(log) as console:
        yield console, writer


def _open_live(browse: Browsing, url: str) -> None:
    browse.goto(url)
    browse.page.wait_for_selector("#live-status.on")  # the live stream is open
    browse.page.evaluate("window.__sameDocument = true")


def _not_reloaded(browse: Browsing) -> None:
    assert browse.page.evaluate("window.__sameDocument") is True


def test_the_overview_follows_the_log_within_a_second(
    growing_demo: tuple[RunningConsole, LogWriter], browse: Browsing
) -> None:
    console, writer = growing_demo
    _open_live(browse, console.at("/"))
    agents = browse.page.locator('table[data-table="agents"] tbody tr')
    before = agents.count()
    waits = []
    for key in ("newcomer", "latecomer"):  # the second right after: no throttle in the way
        watched = browse.watch('table[data-table="agents"] td', key)
        waits.append(arrives_in_time(browse, watched, writer.append("agent", key)))
    assert agents.count() == before + 2
    _not_reloaded(browse)
    _shows_no_errors(browse)
    print(f"overview: shown after {', '.join(f'{w:.3f}' for w in waits)} s")


def test_the_session_page_follows_its_conversation_and_keeps_the_form(
    growing_demo: tuple[RunningConsole, LogWriter], browse: Browsing
) -> None:
    console, writer = growing_demo
    _open_live(browse, console.at("/sessions/lead/demo-user"))
    page = browse.page
    page.locator('form[data-form="rerun"] input[name="deny"]').fill("web_fetch")
    entries = page.locator(".conversation .entry")
    before = entries.count()
    name = f"late-call {HOSTILE}"  # shown by the live update too: as text, never markup
    watched = browse.watch('.conversation .entry[data-kind="tool_refused"]', "late-call")
    waited = arrives_in_time(
        browse, watched, writer.append("call", name, "session/lead/demo-user", "lead")
    )
    assert entries.count() == before + 1
    last = page.locator('.conversation .entry[data-kind="tool_refused"]').last
    assert last.locator("code").evaluate("e => e.textContent") == f"policy: denied {name}"
    assert last.locator("code").evaluate("e => e.childElementCount") == 0
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("window.__pwned") is None
    # What the operator typed in the re-run form is still there: forms are not swapped.
    assert page.locator('input[name="deny"]').input_value() == "web_fetch"
    _not_reloaded(browse)
    screenshot(page, "demo-session-live")
    _shows_no_errors(browse)
    print(f"session: shown after {waited:.3f} s")


def test_the_audit_follows_the_log_within_a_second(
    growing_demo: tuple[RunningConsole, LogWriter], browse: Browsing
) -> None:
    console, writer = growing_demo
    _open_live(browse, console.at("/audit?refused=1"))
    page = browse.page
    rows = page.locator('table[data-table="audit"] tbody tr')
    assert rows.count() == 1  # the demo's refused exec
    waits = []
    for call in ("audit-1", "audit-2"):
        watched = browse.watch('table[data-table="audit"] tbody tr', f"denied {call}")
        appended = writer.append("call", call, "session/lead/demo-user", "lead")
        waits.append(arrives_in_time(browse, watched, appended))
        row = rows.filter(has_text=f"denied {call}")
        assert "refused at policy" in row.inner_text()  # the page's filter still applies
        assert row.get_attribute("data-position") == str(appended.position - 1)  # requested
    assert rows.count() == 3
    assert page.locator('input[name="refused"]').is_checked()
    _not_reloaded(browse)
    screenshot(page, "demo-audit-live")
    _shows_no_errors(browse)
    print(f"audit: shown after {', '.join(f'{w:.3f}' for w in waits)} s")


@pytest.mark.parametrize(
    ("path", "table"),
    [
        ("/sessions", "sessions"),
        ("/boards", "teams"),
        ("/routes", "routes"),
        ("/delegations", "delegations"),
        ("/mcp", "mcp-servers"),
    ],
)
def test_every_listing_follows_the_log(
    growing_demo: tuple[RunningConsole, LogWriter], browse: Browsing, path: str, table: str
) -> None:
    """The other listings carry the same live script and regions: a new event makes the
    page fetch itself again (here, the sessions listing gains a row; the others show the
    same rows, fetched again without a reload)."""
    console, writer = growing_demo
    _open_live(browse, console.at(path))
    page = browse.page
    assert page.locator(f'table[data-table="{table}"][data-live]').count() == 1
    page.evaluate(
        "t => { document.querySelector(`table[data-table=\"${t}\"]`).dataset.old = 'yes'; }",
        table,
    )
    fresh = f'table[data-table="{table}"]:not([data-old])'  # the page's region, swapped
    watched = browse.watch(fresh)
    waited = arrives_in_time(
        browse, watched, writer.append("start", "", "session/fresh/u9", "fresh")
    )
    if path == "/sessions":
        assert "u9" in page.locator(fresh).inner_text()
    _not_reloaded(browse)
    _shows_no_errors(browse)
    print(f"{path}: swapped after {waited:.3f} s")


def test_clawlog_ui_help_names_the_safety_rules() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "clawlog", "ui", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "--token" in done.stdout and "loopback" in done.stdout


def test_the_audit_is_read_a_window_at_a_time(tmp_path: Path, browse: Browsing) -> None:
    log = tmp_path / "busy.db"
    run_async(lambda: _append_calls(log, 230))
    with start_console(log) as console:
        page = browse.page
        browse.goto(console.at("/audit?tool=echo"))
        seen: list[int] = []
        windows = 0
        while True:
            windows += 1
            rows = page.locator('table[data-table="audit"] tbody tr')
            seen += [int(p) for p in rows.evaluate_all("els => els.map(e => e.dataset.position)")]
            assert rows.count() <= PAGE  # a window, never the whole table
            more = page.locator('[data-pager="next"]')
            if more.count() == 0:
                break
            more.click()
            page.wait_for_url(re.compile(rf"after={seen[-1]}&tool=echo"))
        assert windows == 3
        assert len(seen) == 230 and seen == sorted(set(seen))  # each call once, in order
        _shows_no_errors(browse)


async def _append_calls(log: Path, count: int) -> None:
    store = await open_store(SqliteBackend(log))
    try:
        for number in range(count):
            call = ToolCallRequested(call_id=f"c{number}", tool="echo", agent="a", session_key="s")
            await store.append("session/a/s", [call], ANY)
    finally:
        await store.close()


@pytest.mark.postgres
def test_a_postgresql_log_is_served_while_a_writer_appends(browse: Browsing) -> None:
    from tests.support.postgres import database_url

    url = _fresh_database(database_url())
    views = run_async(lambda: _pg_views(url))
    try:
        run_async(lambda: _append_to(url, 3))
        with start_console(url) as console:
            browse.goto(console.at("/audit"))
            rows = browse.page.locator('table[data-table="audit"] tbody tr')
            assert rows.count() == 3
            run_async(lambda: _append_to(url, 2))
            browse.goto(console.at("/audit"))  # a page reads the log as of its request
            assert rows.count() == 5
            browse.goto(console.at("/"))
            assert "session/a/s" in browse.page.locator('table[data-table="sessions"]').inner_text()
            _shows_no_errors(browse)
    finally:
        run_async(lambda: _drop_database(url))
        views.unlink(missing_ok=True)


def _fresh_database(server: str) -> str:
    name = f"ui_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        import asyncpg

        admin = await asyncpg.connect(server)
        try:
            await admin.execute(f"CREATE DATABASE {name}")
        finally:
            await admin.close()

    run_async(create)
    return server.rsplit("/", 1)[0] + f"/{name}"


async def _drop_database(url: str) -> None:
    import asyncpg

    server, name = url.rsplit("/", 1)
    admin = await asyncpg.connect(f"{server}/postgres")
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        await admin.close()


async def _pg_views(url: str) -> Path:
    """Where the console kept the read models of the log at ``url`` (the CLI's place)."""
    from clawlog.cli.views import default_views_path
    from clawlog.events.backends.postgres import PostgresBackend

    store = await open_store(PostgresBackend(url))
    try:
        return default_views_path(store)
    finally:
        await store.close()


async def _append_to(url: str, count: int) -> None:
    from clawlog.events.backends.postgres import PostgresBackend

    store = await open_store(PostgresBackend(url))
    try:
        start = len(await store.read_stream("session/a/s"))
        for number in range(start, start + count):
            call = ToolCallRequested(call_id=f"c{number}", tool="echo", agent="a", session_key="s")
            await store.append("session/a/s", [call], ANY)
    finally:
        await store.close()


def test_an_app_made_by_create_app_opens_its_log_at_startup(demo_log: Path) -> None:
    """The embedding route (``create_app`` under any ASGI server): the lifespan opens the
    log and its read models, and closes them at shutdown."""

    async def serve() -> tuple[int, str]:
        app = create_app(ConsoleConfig(db=str(demo_log)))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                response = await c.get("/boards/release")
        return response.status_code, response.text

    status, body = run_async(serve)
    assert status == 200 and "tag the v1.0 release" in body
