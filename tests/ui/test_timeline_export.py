"""``clawlog timeline --html FILE``: one self-contained HTML file of the timeline, opened
in Chromium from disk with every request recorded (there must be none but the file)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from .conftest import HOSTILE, ROOT, Browsing, screenshot


def export(log: Path, target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "clawlog",
            "--db",
            str(log),
            "timeline",
            "--html",
            str(target),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )


def test_the_export_is_one_file_with_nothing_external(demo_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "timeline.html"
    done = export(demo_log, target)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"wrote .*timeline\.html: \d+ items from \d+ events in \d+ lanes\n", done.stderr
    )
    html = target.read_text(encoding="utf-8")
    assert "<link" not in html and "<script src" not in html and "@import" not in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "connect-src" not in html and "default-src 'none'" in html  # the file's own CSP
    assert html.count("<script") == 2  # the data and the inlined script


def test_the_export_opens_offline_and_shows_the_refused_exec(
    demo_log: Path, tmp_path: Path, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    target = tmp_path / "demo.html"
    assert export(demo_log, target).returncode == 0
    page = browse.page
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(target.as_uri(), wait_until="load")
    refused = page.locator('.item[data-outcome="refused"][data-type~="tool.call_refused"]')
    expect(refused).to_have_text("exec refused at approval")
    expect(page.locator('.lane[data-lane="session/lead/demo-user"]')).to_be_visible()
    refused.click()
    json = page.locator("#event-panel-json")
    expect(json).to_contain_text('"type": "tool.call_refused"')  # from the file: no server
    expect(page.locator('dd[data-field="correlation"]')).not_to_have_text("—")
    page.click("[data-zoom=out]")
    screenshot(page, "timeline-export")
    assert requests == [target.as_uri()]
    assert browse.errors == []


def test_the_export_takes_the_filters_and_says_what_it_left_out(
    demo_log: Path, tmp_path: Path, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    target = tmp_path / "tools.html"
    done = export(demo_log, target, "--type", "tool.*", "--agent", "lead", "-n", "5")
    assert done.returncode == 0, done.stderr
    assert "the last 5 kept (--limit)" in done.stderr
    page = browse.page
    page.goto(target.as_uri(), wait_until="load")
    expect(page.locator("[data-table=filters]")).to_contain_text("Only the last 5 matching events")
    expect(page.locator("[data-table=filters]")).to_contain_text("type=tool.*")
    types = page.locator(".item").evaluate_all("els => els.map(e => e.dataset.type)")
    assert types and all(t.startswith("tool.") for spec in types for t in spec.split())
    assert (
        page.locator("#timeline-status")
        .inner_text()
        .startswith(f"{len(types)} items from 5 events")
    )
    assert browse.errors == []


def test_payloads_with_script_stay_text_in_the_export(
    scenario_log: Path, tmp_path: Path, browse: Browsing
) -> None:
    from playwright.sync_api import expect

    target = tmp_path / "hostile.html"
    assert export(scenario_log, target).returncode == 0
    html = target.read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    page = browse.page
    page.goto(target.as_uri(), wait_until="load")
    shout = page.locator('.item[data-kind="tool"]', has_text="shout").first
    shout.click()
    panel = page.locator("#event-panel-json")
    expect(panel).to_contain_text("<script>window.__pwned")
    assert page.evaluate("window.__pwned") is None  # the file's CSP would stop it; so:
    assert json.dumps(HOSTILE) in panel.evaluate("e => e.textContent")  # every character
    assert panel.evaluate("e => e.childElementCount") == 0  # and no element made of it
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 2  # the data and the inlined script
    assert browse.errors == []


def test_bad_arguments_get_one_line_each(demo_log: Path, tmp_path: Path) -> None:
    done = export(demo_log, tmp_path)  # a directory
    assert done.returncode == 2
    assert "is a directory: give --html a file name" in done.stderr
    done = export(demo_log, tmp_path / "x.html", "--since", "tomorrow")
    assert done.returncode == 2 and "'tomorrow' is not a log position" in done.stderr
    done = export(tmp_path / "missing.db", tmp_path / "x.html")
    assert done.returncode == 2 and "no such file" in done.stderr
    done = export(demo_log, tmp_path / "no-such-dir" / "x.html")
    assert done.returncode == 2 and "cannot write" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "clawlog", "--db", str(demo_log), "timeline"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "--html" in done.stderr
