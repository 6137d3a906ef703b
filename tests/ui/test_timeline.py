"""The timeline page (issue 21): its model on a real log, its JSON endpoints over HTTP, and
the page in Chromium: lanes, the demo's refused exec, the event panel, filters, windows,
escaping, and an event appended by another process showing up without a reload."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from clawlog.cli.logfile import open_log
from clawlog.ui.errors import BadFilter
from clawlog.ui.timeline import (
    Item,
    TimelineFilter,
    Window,
    first_window,
    parse_filter,
    window_after,
    window_before,
)

from .conftest import ROOT, Browsing, RunningConsole, screenshot, start_console

#: A real writer process: ``start`` opens a session and a turn on session/live/u1; ``call``
#: appends a refused tool call there, ``approval`` a denied approval (the call id is the
#: third argument).
WRITER = """
import asyncio, sys
from clawlog.events import ANY, EventMetadata, open_store
from clawlog.events.domain.session import SessionStarted, TurnStarted
from clawlog.events.domain.tool import (
    ToolApprovalDecided, ToolApprovalRequested, ToolCallRefused, ToolCallRequested)

async def main(path, what, call_id):
    store = await open_store(path)
    try:
        meta = EventMetadata(correlation_id="live-turn", actor="session/live/u1")
        if what == "start":
            events = [SessionStarted(agent="live", session_key="u1"),
                      TurnStarted(turn_id="live-turn", text="watch the timeline")]
        elif what == "approval":
            events = [ToolApprovalRequested(call_id=call_id, tool="exec", summary="exec ls"),
                      ToolApprovalDecided(call_id=call_id, tool="exec", decision="deny", by="ops")]
        else:
            events = [ToolCallRequested(call_id=call_id, tool="exec", agent="live"),
                      ToolCallRefused(call_id=call_id, tool="exec", step="policy",
                                      reason="denied live", agent="live")]
        await store.append("session/live/u1", events, ANY, meta)
    finally:
        await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""))
"""


def write(log: Path, what: str, call_id: str = "") -> None:
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(log), what, call_id],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def _window(log: Path, found: TimelineFilter, **kwargs: int) -> Window:
    async def read() -> Window:
        async with open_log(log) as store:
            if "after" in kwargs:
                return await window_after(store, found, **kwargs)
            if "before" in kwargs:
                return await window_before(store, found, **kwargs)
            return await first_window(store, found, **kwargs)

    # On a thread of its own: Playwright's sync API keeps an event loop on this one.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, read()).result()


def _one(items: list[Item], **wanted: object) -> Item:
    found = [i for i in items if all(getattr(i, k) == v for k, v in wanted.items())]
    assert len(found) == 1, (wanted, [(i.kind, i.label, i.lane) for i in items])
    return found[0]


# -- the model, on the demo's log ------------------------------------------------------------
def test_the_demo_makes_lanes_items_outcomes_and_arrows(demo_log: Path) -> None:
    window = _window(demo_log, TimelineFilter())
    lanes = {lane.name: lane.kind for lane in window.lanes}
    assert lanes["session/lead/demo-user"] == "session"
    assert lanes["team/release"] == "team"
    assert any(kind == "subagent" for kind in lanes.values())
    exec_call = _one(window.items, kind="tool", outcome="refused")
    assert exec_call.label == "exec refused at approval"
    assert exec_call.types == ["tool.call_requested", "tool.call_refused"]
    assert exec_call.lane == "session/lead/demo-user"
    spawn = _one(window.items, kind="subagent", lane="session/lead/demo-user")
    assert spawn.to_lane is not None and spawn.to_lane.startswith("subagent/")
    assert spawn.outcome == "completed"  # subagent.finished, on agent/lead, closed it
    handoff = _one(window.items, kind="handoff")
    assert handoff.to_lane == "agent/billing"
    turns = [i for i in window.items if i.kind == "turn"]
    assert turns and all(t.outcome == "completed" for t in turns)
    assert any(i.outcome == "failed" for i in window.items if i.kind == "tool")  # a lost claim
    assert window.head == window.end == window.count  # the whole demo fits one window
    assert not window.more_before and not window.more_after


def test_a_delegation_points_at_the_session_that_did_the_work(scenario_log: Path) -> None:
    window = _window(scenario_log, TimelineFilter())
    delegation = _one(window.items, kind="delegation")
    assert delegation.lane == "session/boss/s1" and delegation.outcome == "completed"
    assert delegation.to_lane is not None and delegation.to_lane.startswith("session/worker/")
    assert any(i.kind == "turn" and i.lane == delegation.to_lane for i in window.items)
    assert delegation.types == ["delegation.requested", "delegation.completed"]
    lanes = {lane.name: lane.kind for lane in window.lanes}
    assert lanes["mcp/ghost"] == "mcp" and lanes["link/boss->worker"] == "link"
    assert any(i.lane == "mcp/ghost" and i.outcome == "failed" for i in window.items)


def test_windows_before_and_after_tile_the_log_without_gaps(demo_log: Path) -> None:
    whole = _window(demo_log, TimelineFilter())
    last = _window(demo_log, TimelineFilter(), limit=50)
    assert last.more_before and last.count == 50 and last.end == whole.head
    earlier = _window(demo_log, TimelineFilter(), before=last.start, limit=50)
    assert earlier.end == last.start - 1 and earlier.count == 50
    later = _window(demo_log, TimelineFilter(), after=earlier.start - 1, limit=50)
    assert later.start == earlier.start and later.end == earlier.end
    seen = sorted(p for w in (earlier, last) for i in w.items for p in i.positions)
    assert seen == list(range(earlier.start, whole.head + 1))


def test_filters_narrow_by_type_agent_session_correlation_and_position(demo_log: Path) -> None:
    whole = _window(demo_log, TimelineFilter())
    tools = _window(demo_log, parse_filter({"type": "tool.*"}))
    assert 0 < tools.count < whole.count
    assert all(t.startswith("tool.") for i in tools.items for t in i.types)
    qa = _window(demo_log, parse_filter({"agent": "qa"}))
    assert qa.count and all(
        i.lane in ("session/qa/team-release", "agent/qa", "team/release") for i in qa.items
    )
    lead = _window(demo_log, parse_filter({"session": "session/lead/demo-user"}))
    assert {lane.name for lane in lead.lanes} >= {"session/lead/demo-user"}
    assert all(i.lane == "session/lead/demo-user" for i in lead.items if i.kind == "tool")
    exec_call = _one(whole.items, kind="tool", outcome="refused")
    alone = _window(demo_log, TimelineFilter(), before=exec_call.last + 1, limit=1)
    [refusal] = alone.items  # a piece of the call: the page merges it by its key
    assert (refusal.key, refusal.positions) == (exec_call.key, [exec_call.last])
    assert refusal.label == "exec refused at approval"
    span = _window(demo_log, parse_filter({"since": "10", "until": "20"}))
    assert (span.start, span.end, span.count) == (10, 19, 10)


def test_a_filter_that_is_not_one_is_refused_by_name() -> None:
    with pytest.raises(BadFilter, match="since: 'yesterday' is not a log position"):
        parse_filter({"since": "yesterday"})
    with pytest.raises(BadFilter, match=r"until: .*did you mean @"):
        parse_filter({"until": "1795599000"})


# -- the endpoints, over HTTP ----------------------------------------------------------------
def test_window_and_events_endpoints_answer_json_and_refuse_bad_input(
    demo_console: RunningConsole,
) -> None:
    with httpx.Client(timeout=60) as client:
        window = client.get(demo_console.at("/timeline/window?before=100&limit=20")).json()
        assert window["end"] == 99 and window["count"] == 20
        refused = client.get(demo_console.at("/timeline/window?type=tool.call_refused")).json()
        [item] = refused["items"]
        position = item["positions"][0]
        events = client.get(demo_console.at(f"/timeline/events?positions={position}")).json()
        event = events[str(position)]
        assert event["type"] == "tool.call_refused" and event["event"]["tool"] == "exec"
        assert event["correlation_id"] and "causation_id" in event
        for path, words in (
            ("/timeline/window?since=soon", "since: 'soon' is not a log position"),
            ("/timeline/window?limit=0", "limit: '0' is not a number of events"),
            ("/timeline/window?before=x", "before: 'x' is not a log position"),
            ("/timeline/events?positions=1;2", "positions: '1;2' is not a comma-separated"),
            ("/timeline/live?after=-1", "after: '-1' is not a log position"),
        ):
            answer = client.get(demo_console.at(path))
            assert answer.status_code == 400, path
            assert words in answer.json()["error"], answer.text
        page = client.get(demo_console.at("/timeline?since=soon"))
        assert page.status_code == 400 and "is not a log position" in page.text


# -- in the browser ----------------------------------------------------------------------------
def test_the_timeline_shows_the_demo_and_its_refused_exec_opens_its_event(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(demo_console.at("/timeline"))
    expect(page.locator('main#page[data-page="timeline"]')).to_be_visible()
    for lane in ("session/lead/demo-user", "session/dev/team-release", "team/release"):
        expect(page.locator(f'.lane[data-lane="{lane}"]')).to_be_visible()
    expect(page.locator('.lane[data-lane^="subagent/"]')).to_have_count(1)
    expect(page.locator("line[data-arrow]")).not_to_have_count(0)  # subagent, handoff
    refused = page.locator('.item[data-outcome="refused"][data-type~="tool.call_refused"]')
    expect(refused).to_have_count(1)
    expect(refused).to_have_text("exec refused at approval")
    page.click("[data-zoom=fit]")
    screenshot(page, "timeline-demo")
    refused.click()
    panel = page.locator("#event-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("#event-panel-json")).to_contain_text('"type": "tool.call_refused"')
    expect(panel.locator("#event-panel-json")).to_contain_text('"rm -rf / --no-preserve-root"')
    position = refused.get_attribute("data-position")
    expect(panel.locator('dd[data-field="positions"]')).to_contain_text(str(position))
    expect(panel.locator('dd[data-field="correlation"]')).not_to_have_text("—")
    screenshot(page, "timeline-demo-event")
    assert browse.errors == []


def test_a_filter_narrows_the_items(demo_console: RunningConsole, browse: Browsing) -> None:
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(demo_console.at("/timeline"))
    items = page.locator(".item")
    expect(items.first).to_be_visible()
    everything = items.count()
    page.fill('#timeline-filters input[name="type"]', "tool.*")
    page.fill('#timeline-filters input[name="agent"]', "lead")
    page.click('#timeline-filters button[type="submit"]')
    page.wait_for_url("**/timeline?*type=tool.*")
    expect(page.locator('.item[data-type~="tool.call_refused"]')).to_have_count(1)
    narrowed = page.locator(".item").count()
    assert 0 < narrowed < everything
    types = page.locator(".item").evaluate_all("els => els.map(e => e.dataset.type)")
    assert all(t.startswith("tool.") for spec in types for t in spec.split())
    lanes = page.locator(".lane").evaluate_all("els => els.map(e => e.dataset.lane)")
    assert lanes == ["session/lead/demo-user"]
    screenshot(page, "timeline-filtered")
    assert browse.errors == []


def test_earlier_windows_load_on_demand(demo_console: RunningConsole, browse: Browsing) -> None:
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(demo_console.at("/timeline?limit=40"))
    status = page.locator("#timeline-status")
    expect(status).to_contain_text("from 40 events")
    page.click("[data-load=earlier]")  # the page loaded only the last 40 events
    expect(status).to_contain_text("from 80 events")
    page.click("[data-zoom=out]")
    page.click("[data-zoom=in]")
    assert browse.errors == []


def test_payloads_with_script_stay_text(scenario_console: RunningConsole, browse: Browsing) -> None:
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(scenario_console.at("/timeline?type=tool.*"))
    shout = page.locator('.item[data-kind="tool"]', has_text="shout").first
    expect(shout).to_be_visible()
    shout.click()
    expect(page.locator("#event-panel-json")).to_contain_text("<script>window.__pwned")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#event-panel script, #event-panel img").count() == 0
    screenshot(page, "timeline-hostile")
    assert browse.errors == []


def test_an_event_appended_by_another_process_appears_without_a_reload(
    tmp_path: Path, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    log = tmp_path / "live.db"
    write(log, "start")
    with start_console(log) as console:
        page = browse.page
        browse.goto(console.at("/timeline"))
        expect(page.locator('.lane[data-lane="session/live/u1"]')).to_be_visible()
        expect(page.locator("#timeline-status")).to_contain_text("live")
        page.evaluate("window.__sameDocument = true")
        write(log, "call", "live-call-1")
        appended = time.monotonic()
        arrived = page.locator('.item[data-key="tool:session/live/u1:live-call-1"]')
        expect(arrived).to_be_visible(timeout=30_000)  # generous for a busy machine
        waited = time.monotonic() - appended
        expect(arrived).to_have_attribute("data-outcome", "refused")
        expect(arrived).to_have_text("exec refused at policy")
        assert page.evaluate("window.__sameDocument") is True  # no reload happened
        write(log, "call", "live-call-2")
        expect(page.locator('.item[data-key="tool:session/live/u1:live-call-2"]')).to_be_visible(
            timeout=30_000
        )
        write(log, "approval", "live-call-3")
        approval = page.locator('.item[data-key="approval:session/live/u1:live-call-3"]')
        expect(approval).to_contain_text("approval exec · waited", timeout=30_000)
        expect(approval).to_have_attribute("data-outcome", "refused")
        screenshot(page, "timeline-live")
        assert browse.errors == []
    # Reported, not asserted: on a loaded 2-core machine a browser frame can stall longer.
    print(f"the appended event showed after {waited:.2f} s")
