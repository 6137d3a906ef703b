"""The timeline page (issue 21): its model on a real log, its JSON endpoints over HTTP, and
the page in Chromium: lanes, the demo's refused exec, the event panel, filters, windows,
zoom, readable labels and arrows, escaping, and events appended by another process
showing up within a second, without a reload."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import json
import re
from pathlib import Path

import httpx
import pytest

from clawlog.cli.logfile import open_log
from clawlog.events import RecordedEvent
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

from .conftest import (
    HOSTILE,
    Browsing,
    LogWriter,
    RunningConsole,
    arrives_in_time,
    screenshot,
    start_console,
)


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
    assert handoff.to_lane == "session/billing/demo-user"  # where the chat went on
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


def _events(log: Path) -> list[RecordedEvent]:
    """Every event of ``log``, in order (what a filter is checked against)."""

    async def read() -> list[RecordedEvent]:
        async with open_log(log) as store:
            return await store.read_all(1, 100_000)

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, read()).result()


def _positions(window: Window) -> set[int]:
    return {p for item in window.items for p in item.positions}


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "")  # no offset: read as UTC


def test_filters_narrow_by_type_agent_session_and_position(demo_log: Path) -> None:
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


def test_the_correlation_filter_keeps_one_turns_events(demo_log: Path) -> None:
    events = _events(demo_log)
    refused = next(e for e in events if e.type == "tool.call_refused")
    turn = refused.correlation_id
    assert turn
    expected = {e.position for e in events if e.correlation_id == turn}
    assert 1 < len(expected) < len(events)  # a filter that narrows, and keeps more than one
    window = _window(demo_log, parse_filter({"correlation": turn}))
    assert _positions(window) == expected
    assert _one(window.items, kind="tool", outcome="refused").label == "exec refused at approval"
    assert _window(demo_log, parse_filter({"correlation": "no-such-turn"})).items == []


def test_time_filters_take_an_iso_time_and_epoch_seconds(demo_log: Path) -> None:
    events = _events(demo_log)
    times = sorted({e.recorded_at for e in events})
    assert len(times) > 10, "the demo's events carry too few distinct times to filter by"
    # Two recorded times, cut to the millisecond (the ISO text is then exact).
    start, stop = (dt.datetime.fromtimestamp(times[len(times) * n // 3], dt.UTC) for n in (1, 2))
    start = start.replace(microsecond=start.microsecond // 1000 * 1000)
    since, until = start.timestamp(), stop.timestamp()
    after_since = {e.position for e in events if e.recorded_at >= since}
    before_until = {e.position for e in events if e.recorded_at < until}
    assert 0 < len(after_since) < len(events) and 0 < len(before_until) < len(events)

    by_iso = _window(demo_log, parse_filter({"since": _iso(start)}))
    assert _positions(by_iso) == after_since
    by_epoch = _window(demo_log, parse_filter({"since": f"@{since}"}))
    assert _positions(by_epoch) == after_since
    up_to = _window(demo_log, parse_filter({"until": f"@{until}"}))
    assert _positions(up_to) == before_until
    between = _window(demo_log, parse_filter({"since": _iso(start), "until": f"@{until}"}))
    assert _positions(between) == after_since & before_until
    offset = start.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat()  # +02:00
    assert _positions(_window(demo_log, parse_filter({"since": offset}))) == after_since


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
#: Kinds whose label a person reads on the lane (a plain event, an MCP change or a model
#: request may show as a bare box when its lane is crowded: its title says what it is).
LABELLED_KINDS = ("turn", "tool", "approval", "delegation", "subagent", "handoff")

#: Every labelled item whose label is cut short (shows less than its text, or than
#: 200 px of it), and every pair of items whose boxes or labels overlap on a lane.
_UNREADABLE = """kinds => {
  const problems = [];
  for (const box of document.querySelectorAll('.item')) {
    const label = box.querySelector('.item-label');
    if (!kinds.includes(box.dataset.kind)) { continue; }
    const shown = label.getBoundingClientRect().width;
    const text = label.scrollWidth;
    if (getComputedStyle(label).display === 'none' || shown + 1 < Math.min(text, 200)) {
      problems.push(`${box.dataset.key} shows ${Math.round(shown)} of ${text} px: ${label.textContent}`);
    }
  }
  for (const lane of document.querySelectorAll('.lane')) {
    const shapes = [];
    for (const box of lane.querySelectorAll('.item')) {
      shapes.push([box.dataset.key, box.getBoundingClientRect()]);
      if (box.classList.contains('label-out')) {
        shapes.push([box.dataset.key, box.querySelector('.item-label').getBoundingClientRect()]);
      }
    }
    shapes.forEach(([key, a], i) => shapes.slice(i + 1).forEach(([other, b]) => {
      const apart = a.right <= b.left + 1 || b.right <= a.left + 1 ||
                    a.bottom <= b.top + 1 || b.bottom <= a.top + 1;
      if (!apart && key !== other) { problems.push(`${key} overlaps ${other}`); }
    }));
  }
  return problems;
}"""

#: Every arrow that passes over an item (a box or its label) other than its own.
_ARROWS_OVER_ITEMS = """() => {
  const problems = [];
  const svg = document.getElementById('timeline-arrows').getBoundingClientRect();
  for (const line of document.querySelectorAll('line[data-arrow]')) {
    const x = svg.left + Number(line.getAttribute('x1'));
    const ends = [Number(line.getAttribute('y1')), Number(line.getAttribute('y2'))];
    const top = svg.top + Math.min(...ends), bottom = svg.top + Math.max(...ends);
    const shapes = document.querySelectorAll('.item, .item.label-out > .item-label');
    for (const shape of shapes) {
      const key = shape.closest('.item').dataset.key;
      const r = shape.getBoundingClientRect();
      if (key === line.dataset.arrow || r.width === 0) { continue; }
      if (x > r.left && x < r.right && bottom > r.top + 1 && top < r.bottom - 1) {
        problems.push(`${line.dataset.arrow} passes over ${key}`);
      }
    }
  }
  return problems;
}"""


def _readable(browse: Browsing) -> None:
    page = browse.page
    assert page.evaluate(_UNREADABLE, list(LABELLED_KINDS)) == []
    assert page.evaluate(_ARROWS_OVER_ITEMS) == []


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


def test_the_demo_reads_at_the_default_zoom_and_fitted(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    """Labels are not cut to stubs, nothing overlaps, and arrows go to the lane where the
    work went on, right under their source, over no other item."""
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(demo_console.at("/timeline"))
    expect(page.locator(".item").first).to_be_visible()
    screenshot(page, "timeline-demo-default")
    _readable(browse)
    arrows = page.locator("line[data-arrow]").evaluate_all(
        "els => els.map(e => [e.dataset.arrow.split(':')[0], e.dataset.from, e.dataset.to])"
    )
    handoffs = [(source, target) for kind, source, target in arrows if kind == "event"]
    assert handoffs == [("session/lead/demo-user", "session/billing/demo-user")]
    [(source, subagent)] = [(s, t) for kind, s, t in arrows if kind == "subagent"]
    assert source == "session/lead/demo-user" and subagent.startswith("subagent/")
    lanes = page.locator(".lane").evaluate_all("els => els.map(e => e.dataset.lane)")
    # An arrow's target lane comes right under its source (after its earlier children).
    at = lanes.index("session/lead/demo-user")
    assert lanes[at + 1 : at + 3] == [subagent, "session/billing/demo-user"]
    page.click("[data-zoom=fit]")
    width = page.evaluate("document.getElementById('timeline').scrollWidth")
    assert width <= page.evaluate("document.getElementById('timeline').clientWidth") + 1
    _readable(browse)
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


def _keys(browse: Browsing) -> set[str]:
    keys: list[str] = browse.page.locator(".item").evaluate_all(
        "els => els.map(e => e.dataset.key)"
    )
    return set(keys)


def test_the_correlation_and_time_filters_in_the_page(
    demo_console: RunningConsole, demo_log: Path, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    events = _events(demo_log)
    refused = next(e for e in events if e.type == "tool.call_refused")
    turn = refused.correlation_id
    assert turn
    page = browse.page
    browse.goto(demo_console.at("/timeline"))
    expect(page.locator(".item").first).to_be_visible()
    everything = _keys(browse)
    page.fill('#timeline-filters input[name="correlation"]', turn)
    page.click('#timeline-filters button[type="submit"]')
    page.wait_for_url(f"**/timeline?correlation={turn}&*")
    exec_call = page.locator('.item[data-type~="tool.call_refused"]')
    expect(exec_call).to_have_text("exec refused at approval")
    shown = _keys(browse)
    assert shown == {i.key for i in _window(demo_log, parse_filter({"correlation": turn})).items}
    assert len(shown) < len(everything)
    page.locator('.item[data-kind="turn"]').first.click()  # another item of the same turn
    expect(page.locator('dd[data-field="correlation"]')).to_have_text(turn)
    screenshot(page, "timeline-correlation")

    since = f"@{events[len(events) // 2].recorded_at}"
    browse.goto(demo_console.at("/timeline"))
    page.fill('#timeline-filters input[name="since"]', since)
    page.click('#timeline-filters button[type="submit"]')
    page.wait_for_url("**/timeline?*since=*")
    expect(page.locator("#timeline-status")).to_contain_text("items from")
    later = _keys(browse)
    assert later == {i.key for i in _window(demo_log, parse_filter({"since": since})).items}
    assert later and len(later) < len(everything)
    assert browse.errors == []


def test_earlier_windows_load_on_demand_and_zoom_scales_the_axis(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(demo_console.at("/timeline?limit=40"))
    status = page.locator("#timeline-status")
    expect(status).to_contain_text("from 40 events")
    page.click("[data-load=earlier]")  # the page loaded only the last 40 events
    expect(status).to_contain_text("from 80 events")
    key = page.locator(".item").last.get_attribute("data-key")
    item = page.locator(f'.item[data-key="{key}"]')

    def left() -> float:
        return float(item.evaluate("e => parseFloat(e.style.left)"))

    def axis() -> float:
        return float(page.locator(".lane-track").first.evaluate("e => parseFloat(e.style.width)"))

    before, width = left(), axis()
    assert before > 0
    page.click("[data-zoom=in]")
    assert left() == pytest.approx(before * 1.5)  # one slot per event, 1.5 times wider
    assert axis() > width
    page.click("[data-zoom=out]")
    page.click("[data-zoom=out]")
    assert left() == pytest.approx(before / 1.5)
    expect(status).to_contain_text("from 80 events")  # zooming loads nothing by itself here
    assert browse.errors == []


def test_payloads_with_script_stay_text(scenario_console: RunningConsole, browse: Browsing) -> None:
    from playwright.sync_api import expect

    page = browse.page
    browse.goto(scenario_console.at("/timeline?type=tool.*"))
    shout = page.locator('.item[data-kind="tool"]', has_text="shout").first
    expect(shout).to_be_visible()
    shout.click()
    panel = page.locator("#event-panel-json")
    expect(panel).to_contain_text('"type": "tool.call_completed"')
    assert page.evaluate("window.__pwned") is None  # the CSP would stop it anyway; so:
    # The payload is the panel's text, character for character (as JSON spells it), and
    # made no element: an escaping slip would leave a tag out of the text, or an <img>.
    assert json.dumps(HOSTILE) in panel.evaluate("e => e.textContent")
    assert panel.evaluate("e => e.childElementCount") == 0
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    scripts = page.evaluate("[...document.scripts].map(s => s.id || s.src.split('/').pop())")
    assert scripts == ["timeline-data", "timeline.js"]
    assert HOSTILE in (shout.get_attribute("title") or "")  # the tooltip: the result
    screenshot(page, "timeline-hostile")
    assert browse.errors == []


def test_an_event_appended_by_another_process_appears_within_a_second(
    tmp_path: Path, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    log = tmp_path / "live.db"
    with LogWriter(log) as writer:
        writer.append("start")
        with start_console(log) as console:
            page = browse.page
            browse.goto(console.at("/timeline"))
            expect(page.locator('.lane[data-lane="session/live/u1"]')).to_be_visible()
            expect(page.locator("#timeline-status")).to_contain_text("live")
            page.evaluate("window.__sameDocument = true")
            waits = []
            for call in ("live-call-1", "live-call-2"):
                key = f'.item[data-key="tool:session/live/u1:{call}"]'
                watched = browse.watch(key)  # before the append: nothing to see yet
                waits.append(arrives_in_time(browse, watched, writer.append("call", call)))
                arrived = page.locator(key)
                expect(arrived).to_have_attribute("data-outcome", "refused")
                expect(arrived).to_have_text("exec refused at policy")
            assert page.evaluate("window.__sameDocument") is True  # no reload happened
            key = '.item[data-key="approval:session/live/u1:live-call-3"]'
            watched = browse.watch(key)
            waits.append(arrives_in_time(browse, watched, writer.append("approval", "live-call-3")))
            approval = page.locator(key)
            expect(approval).to_have_attribute("data-outcome", "refused")
            expect(approval).to_have_text(re.compile(r"^approval exec · waited \d+\.\d s$"))
            _readable(browse)  # "· waited N s" is not cut off
            screenshot(page, "timeline-live")
            assert browse.errors == []
    print(f"appended events showed after {', '.join(f'{w:.3f}' for w in waits)} s")
