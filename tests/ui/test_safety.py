"""The console's safety rules: a token on every request when one is set, a refusal to
serve another address without one, read-only, and payloads shown as text, never run.

Token-protected consoles are tested on 127.0.0.1 (the check is the same whatever the
address), and on 0.0.0.0 with the token `clawlog ui` generates (reached through
127.0.0.1; nothing answers there without the token). A library user's ConsoleConfig
still refuses a non-loopback address without a token.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from clawlog.ui import ConsoleConfig
from clawlog.ui.config import is_loopback
from clawlog.ui.errors import UnsafeBind

from .conftest import (
    HOSTILE,
    RERUN_TIMEOUT_S,
    ROOT,
    Browsing,
    RunningConsole,
    screenshot,
    start_console,
)

TOKEN = "s3cret-token_for/tests"


def _get(
    url: str, *, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def _clawlog_ui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clawlog", "ui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


# -- binding -------------------------------------------------------------------------------
#: Every kind of path: pages, a JSON endpoint, both live streams, a file, an unknown one.
GUARDED_PATHS = (
    "/",
    "/audit",
    "/sessions/lead/demo-user",
    "/timeline",
    "/timeline/window",
    "/timeline/events?positions=1",
    "/timeline/live",
    "/live",
    "/static/console.css",
    "/nope",
)


def _refused_without(base: str, token: str) -> None:
    """Every path of the console at ``base`` is 401 without ``token`` or with another."""
    for path in GUARDED_PATHS:
        status, body, headers = _get(base + path)
        assert status == 401, path
        assert "needs its token" in body
        assert headers.get("www-authenticate") == "Bearer"
    for headers in ({"Authorization": "Bearer wrong"}, {"Cookie": "clawlog_token=wrong"}):
        assert _get(base + "/audit", headers=headers)[0] == 401
    assert _get(base + f"/audit?token={token[:-1]}")[0] == 401  # a prefix is no token


def test_a_non_loopback_bind_without_a_token_generates_one_and_checks_it(
    demo_log: Path, browse: Browsing
) -> None:
    with start_console(demo_log, "--host", "0.0.0.0") as console:
        found = re.fullmatch(r"http://0\.0\.0\.0:(\d+)/\?token=([A-Za-z0-9_-]{43})", console.url)
        assert found, console.url  # 32 random bytes, URL-safe
        port, token = found.groups()
        base = f"http://127.0.0.1:{port}"  # the socket listens on every address
        _refused_without(base, token)
        status, body, _ = _get(f"{base}/audit?token={token}")
        assert status == 200 and 'data-page="audit"' in body
        browse.goto(f"{base}/?token={token}")  # the printed URL, in a browser
        page = browse.page
        page.get_by_role("link", name="Audit", exact=True).click()  # on the cookie now
        page.wait_for_selector('main#page[data-page="audit"]')
        page.wait_for_selector("#live-status.on")  # the live stream passes the guard too
        assert browse.errors == [], browse.errors
    with start_console(demo_log, "--host", "0.0.0.0") as again:
        assert again.url.rsplit("=", 1)[1] != token  # one per run, never a fixed default


def test_a_token_from_the_environment_or_the_option_is_used_as_given(demo_log: Path) -> None:
    fixed = "from-the-env_1"
    with start_console(demo_log, "--host", "0.0.0.0", env={"CLAWLOG_UI_TOKEN": fixed}) as one:
        assert one.url.endswith(f"/?token={fixed}")
        base = "http://127.0.0.1:" + one.url.split(":")[2].split("/")[0]
        _refused_without(base, fixed)
        assert _get(f"{base}/routes", headers={"Authorization": f"Bearer {fixed}"})[0] == 200
    given = ("--token", "from-the-option")  # the option wins over the environment
    with start_console(demo_log, *given, env={"CLAWLOG_UI_TOKEN": fixed}) as other:
        assert other.url.endswith("/?token=from-the-option")
    with start_console(demo_log) as loopback:  # loopback, nothing given: no token
        assert "token" not in loopback.url
        assert _get(loopback.at("/audit"))[0] == 200


def test_clawlog_ui_refuses_a_missing_log_and_a_bad_port(tmp_path: Path, demo_log: Path) -> None:
    missing = _clawlog_ui("--db", str(tmp_path / "nope.db"), "--port", "0")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    port = _clawlog_ui("--db", str(demo_log), "--port", "70000")
    assert port.returncode == 2 and "not a port (0 to 65535)" in port.stderr
    empty = _clawlog_ui("--db", str(demo_log), "--port", "0", "--token", " ")
    assert empty.returncode == 2 and "the token is empty" in empty.stderr


def test_which_addresses_are_loopback() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "example.org", "localhost.example.org"):
        assert not is_loopback(host), host
    with pytest.raises(UnsafeBind, match="without a token"):
        ConsoleConfig(db="x.db", host="0.0.0.0")
    assert ConsoleConfig(db="x.db", host="0.0.0.0", token="t").token == "t"


@pytest.mark.parametrize("token", ["two words", "a;b", 'quo"te', "back\\slash", "é"])
def test_a_token_a_cookie_could_not_keep_is_refused(token: str) -> None:
    with pytest.raises(UnsafeBind, match="a browser cookie cannot keep"):
        ConsoleConfig(db="x.db", token=token)
    assert ConsoleConfig(db="x.db", token="Ab0-._~+/=").token == "Ab0-._~+/="


# -- the token -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded(demo_log: Path) -> object:
    with start_console(demo_log, "--token", TOKEN) as console:
        yield console


def test_the_printed_url_carries_the_token(guarded: RunningConsole) -> None:
    assert guarded.url.endswith("/?token=s3cret-token_for%2Ftests")


def test_every_request_without_the_token_gets_401(guarded: RunningConsole) -> None:
    _refused_without(guarded.at(""), TOKEN)
    assert _get(guarded.at("/?token=wrong"))[0] == 401


def test_the_token_is_accepted_as_a_bearer_a_query_or_the_cookie_it_sets(
    guarded: RunningConsole,
) -> None:
    status, body, _ = _get(guarded.at("/audit"), headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and 'data-page="audit"' in body
    status, _, headers = _get(guarded.url)
    assert status == 200
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, body, _ = _get(guarded.at("/boards"), headers={"Cookie": cookie.split(";")[0]})
    assert status == 200 and 'data-page="boards"' in body


def test_a_browser_opens_the_printed_url_then_browses_on_the_cookie(
    guarded: RunningConsole, browse: Browsing
) -> None:
    browse.goto(guarded.url)
    page = browse.page
    assert page.locator('main#page[data-page="overview"]').count() == 1
    page.get_by_role("link", name="Audit", exact=True).click()  # no token in this URL
    page.wait_for_selector('main#page[data-page="audit"]')
    assert "token" not in page.url
    assert browse.errors == [], browse.errors
    other = page.context.browser
    assert other is not None
    stranger = other.new_page()  # another context: no cookie
    try:
        response = stranger.goto(guarded.at("/audit"))
        assert response is not None and response.status == 401
    finally:
        stranger.close()


# -- read-only -----------------------------------------------------------------------------
def test_the_console_refuses_writes_and_never_changes_the_log(
    tmp_path: Path, demo_log: Path
) -> None:
    log = tmp_path / "copy.db"
    log.write_bytes(demo_log.read_bytes())
    digest = hashlib.sha256(log.read_bytes()).hexdigest()
    with start_console(log) as console:
        for method, path in (
            ("POST", "/audit"),
            ("DELETE", "/"),
            ("PUT", "/sessions/lead/demo-user"),
        ):
            status, body, headers = _get(console.at(path), method=method)
            assert status == 405, (method, path)
            assert "read-only" in body and headers["allow"] == "GET, HEAD"
        # Every page, and a re-run (which replays into a scratch store).
        for path in ("/", "/sessions/lead/demo-user", "/audit", "/boards/release", "/routes"):
            assert _get(console.at(path))[0] == 200
        form = b"agent=lead&key=demo-user&deny=exec"
        rerun = urllib.request.Request(console.at("/rerun"), data=form, method="POST")
        with urllib.request.urlopen(rerun, timeout=RERUN_TIMEOUT_S) as response:
            assert 'data-rerun="diverged"' in response.read().decode()
    assert hashlib.sha256(log.read_bytes()).hexdigest() == digest
    assert not Path(f"{log}-wal").exists() or Path(f"{log}-wal").stat().st_size == 0


def test_pages_carry_a_policy_that_allows_only_the_consoles_own_scripts(
    demo_console: RunningConsole,
) -> None:
    status, _, headers = _get(demo_console.at("/"))
    assert status == 200
    policy = headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"


# -- payloads ------------------------------------------------------------------------------
#: Pages of the scenario, and whether they show a hostile text (the audit shows none).
#: Pages of the scenario and the hostile text each shows (the overview cuts the MCP
#: server's error short; the audit shows none).
SCENARIO_PAGES = [
    ("/", HOSTILE[:40]),
    ("/sessions/boss/s1", HOSTILE),
    ("/mcp", HOSTILE),
    ("/audit", None),
]


@pytest.mark.parametrize(("path", "shown"), SCENARIO_PAGES)
def test_a_script_in_an_agents_output_is_shown_as_text_never_run(
    scenario_console: RunningConsole, browse: Browsing, path: str, shown: str | None
) -> None:
    browse.goto(scenario_console.at(path))
    page = browse.page
    assert page.evaluate("() => window.__pwned") is None  # neither the script nor onerror ran
    # The CSP alone would stop both: these fail if the escaping itself slipped, which
    # would turn the payload into elements (a script, an img) and take its tags out of
    # the text.
    assert page.evaluate(
        "() => [...document.scripts].every(s => !s.textContent.includes('__pwned'))"
    )
    assert page.locator("main#page script, main#page img").count() == 0
    if shown is not None:
        assert shown in page.locator("main#page").evaluate("e => e.textContent")
    assert browse.errors == [], browse.errors


def test_the_lineage_of_the_scenarios_delegation_shows_its_script_as_text(
    scenario_console: RunningConsole, browse: Browsing
) -> None:
    browse.goto(scenario_console.at("/delegations"))
    browse.page.locator('table[data-table="delegations"] tbody a').click()
    page = browse.page
    page.wait_for_selector('main#page[data-page="delegation"]')
    assert page.evaluate("() => window.__pwned") is None
    assert HOSTILE in page.locator(".lineage .task").inner_text()
    screenshot(page, "scenario-lineage-escaped")
    assert browse.errors == [], browse.errors


def test_the_html_itself_holds_the_payload_escaped(scenario_console: RunningConsole) -> None:
    status, body, _ = _get(scenario_console.at("/sessions/boss/s1"))
    assert status == 200
    assert "&lt;script&gt;window.__pwned" in body
    assert "<script>window.__pwned" not in body
    assert "<img src=x" not in body


# -- DNS rebinding and forged forms --------------------------------------------------------
def test_without_a_token_only_a_loopback_host_header_is_answered(
    demo_console: RunningConsole,
) -> None:
    """A rebinding name (resolving to 127.0.0.1) reaches the socket but names itself in
    ``Host``: the console answers it 403, on every route, the live stream and files too."""
    port = demo_console.url.split(":")[2].split("/")[0]
    for path in ("/", "/timeline/events?positions=1", "/timeline/live", "/static/timeline.js"):
        status, body, _ = _get(demo_console.at(path), headers={"Host": f"evil.example:{port}"})
        assert status == 403, path
        assert "'evil.example:" in body and "--token" in body
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST"):
        status, _, _ = _get(demo_console.at("/audit"), headers={"Host": host})
        assert status == 200, host


def test_a_rerun_form_posted_from_another_site_is_refused(demo_log: Path) -> None:
    form = b"agent=lead&key=demo-user&deny=exec"
    with start_console(demo_log) as console:
        own = console.url.rstrip("/")
        for headers in (
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Origin": own.replace("127.0.0.1", "localhost")},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site", "Origin": own},
        ):
            request = urllib.request.Request(
                console.at("/rerun"), data=form, method="POST", headers=headers
            )
            try:
                urllib.request.urlopen(request, timeout=60)
                raise AssertionError(f"a forged re-run was accepted: {headers}")
            except urllib.error.HTTPError as exc:
                assert exc.code == 403, headers
                assert "from another site" in exc.read().decode()
        same = {"Origin": own, "Sec-Fetch-Site": "same-origin"}
        request = urllib.request.Request(
            console.at("/rerun"), data=form, method="POST", headers=same
        )
        with urllib.request.urlopen(request, timeout=RERUN_TIMEOUT_S) as response:
            assert 'data-rerun="diverged"' in response.read().decode()


def test_a_browser_on_the_consoles_page_can_submit_the_rerun_form(
    demo_console: RunningConsole, browse: Browsing
) -> None:
    """The browser sends ``Origin`` and ``Sec-Fetch-Site`` with the form: the console's own
    page passes the cross-site check."""
    browse.goto(demo_console.at("/sessions/lead/demo-user"))
    page = browse.page
    form = page.locator('form[data-form="rerun"]')
    form.locator('input[name="deny"]').fill("exec")
    form.locator('button[type="submit"]').click()
    page.wait_for_selector('[data-rerun="diverged"]', timeout=RERUN_TIMEOUT_S * 1000)
    assert "from another site" not in page.content()
    assert browse.errors == [], browse.errors


def test_no_static_path_escapes_the_static_folder(demo_console: RunningConsole) -> None:
    for path in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py"):
        status, body, _ = _get(demo_console.at(path))
        assert status == 404, path
        assert "create_app" not in body


# -- numbers -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    [
        "/timeline/window?after=99999999999999999999999",
        "/timeline/window?before=" + "9" * 5000,
        "/timeline/events?positions=1,99999999999999999999999",
        "/timeline/events?positions=%D9%A1%D9%A2",  # Arabic-Indic digits: isdigit(), no position
        "/timeline/live?after=99999999999999999999999",
        "/timeline?limit=" + "9" * 5000,
    ],
)
def test_a_number_too_large_or_not_ascii_is_a_400_naming_it(
    demo_console: RunningConsole, path: str
) -> None:
    status, body, _ = _get(demo_console.at(path))
    assert status == 400, body[:200]
    assert "is not a" in body


def test_a_listing_cursor_too_large_shows_the_first_window(demo_console: RunningConsole) -> None:
    status, body, _ = _get(demo_console.at("/audit?after=99999999999999999999999"))
    assert status == 200 and 'data-page="audit"' in body
