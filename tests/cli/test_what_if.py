"""``clawlog audit --what-if POLICY_FILE``, run as a user runs it, on a log a real System
recorded (tests/tools/what_if_log.py): the changes both ways, the totals, the filters,
and a clear error for a bad policy file."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.tools.what_if_log import RECORDED_POLICY, record_log

from .support import assert_user_error, clawlog, run_in_a_terminal

STRICTER = RECORDED_POLICY.replace('deny = ["time"]', 'deny = ["time", "echo"]') + (
    '[approvals]\nsecurity = "allowlist"\nask = "off"\n'
)
LOOSER = '[approvals]\nask = "off"\n'


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("what-if-cli") / "log.db"
    asyncio.run(record_log(path))
    return path


def policy_file(tmp_path: Path, text: str, name: str = "policy.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_json_lists_the_changes_both_ways_with_totals(log: Path, tmp_path: Path) -> None:
    stricter = policy_file(tmp_path, STRICTER)
    done = clawlog("audit", "--db", str(log), "--what-if", stricter, "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["policy"] == stricter and len(document["global_digest"]) == 32
    assert document["agent"] is None and "digest" not in document
    assert {(c["session_key"], c["change"]) for c in document["changes"]} == {
        ("s-echo", "newly_refused"),
        ("s-ls", "newly_refused"),
        ("s-ok", "newly_refused"),
    }
    assert document["totals"]["examined"] == 8 and document["totals"]["unchanged"] == 5
    looser = clawlog(
        "audit", "--db", str(log), "--what-if", policy_file(tmp_path, LOOSER, "l.toml"), "--json"
    )
    changes = json.loads(looser.stdout)["changes"]
    assert {(c["session_key"], c["was"], c["now"]) for c in changes} == {
        ("s-time", "refused", "allowed"),
        ("s-no", "refused", "allowed"),
    }


def test_off_a_terminal_rows_go_to_stdout_and_the_totals_to_stderr(
    log: Path, tmp_path: Path
) -> None:
    done = clawlog("audit", "--db", str(log), "--what-if", policy_file(tmp_path, STRICTER))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split("\t") == ["pos", "call", "tool", "agent", "stream", "change", "was", "now"]
    assert [row.split("\t")[1] for row in rows] == ["call-s-echo", "call-s-ls", "call-s-ok"]
    assert "refused at policy: agent_deny: agents.main.deny has 'echo'" in rows[0]
    assert done.stderr.strip() == (
        "clawlog: 8 call(s) examined: 5 unchanged, 3 newly refused, 0 newly allowed, "
        "0 would ask a person, 0 not re-decidable"
    )


def test_on_a_terminal_the_totals_follow_the_table(log: Path, tmp_path: Path) -> None:
    shown = run_in_a_terminal(
        "audit", "--db", str(log), "--what-if", policy_file(tmp_path, STRICTER)
    )
    assert "allowed -> refused" in shown
    assert "8 call(s) examined: 5 unchanged, 3 newly refused" in shown


@pytest.fixture(scope="module")
def two_agents_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("what-if-cli-two") / "log.db"
    asyncio.run(record_log(path, other_agent=True))
    return path


def requests(log: Path) -> dict[str, tuple[int, float]]:
    """session key -> (position, recorded_at) of its call's request, read with sqlite3."""
    conn = sqlite3.connect(log)
    try:
        rows = conn.execute(
            "SELECT stream, position, recorded_at FROM events WHERE type = 'tool.call_requested'"
        ).fetchall()
    finally:
        conn.close()
    return {stream.rsplit("/", 1)[1]: (position, at) for stream, position, at in rows}


def test_filters_and_limit_choose_the_calls_and_rows(two_agents_log: Path, tmp_path: Path) -> None:
    """Under deny-all every allowed call changes: each filter lists exactly its calls."""
    deny_all = policy_file(tmp_path, '[tools]\ndeny = ["*"]\n')
    at = requests(two_agents_log)

    def chosen(*options: str) -> tuple[int, list[str]]:
        done = clawlog(
            "audit", "--db", str(two_agents_log), "--what-if", deny_all, "--json", *options
        )
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        return document["totals"]["examined"], [c["call_id"] for c in document["changes"]]

    assert chosen("--agent", "main") == (8, ["call-s-echo", "call-s-ls", "call-s-ok"])
    assert chosen("--agent", "other") == (2, ["call-o-echo", "call-o-ls"])
    assert chosen("--tool", "shell") == (3, ["call-s-ls", "call-o-ls"])
    assert chosen("--agent", "main", "--tool", "shell") == (2, ["call-s-ls"])
    assert chosen("--agent", "x") == (0, [])
    # A time in the middle of the log: requested from s-ls's request on, before s-ok's.
    middle = ("--since", f"@{at['s-ls'][1]!r}", "--until", f"@{at['s-ok'][1]!r}")
    assert chosen(*middle) == (2, ["call-s-ls"])  # s-ls and s-rm

    def iso_between(first: str, second: str) -> str:
        middle = (at[first][1] + at[second][1]) / 2
        return dt.datetime.fromtimestamp(middle, dt.UTC).isoformat()

    between = ("--since", iso_between("s-time", "s-ls"), "--until", iso_between("s-rm", "s-ok"))
    assert chosen(*between) == (2, ["call-s-ls"])
    by_position = ("--since", str(at["s-ls"][0]), "--until", str(at["s-ok"][0]))
    assert chosen(*by_position) == (2, ["call-s-ls"])
    assert chosen("--until", str(at["s-ok"][0] + 1)) == (
        5,
        ["call-s-echo", "call-s-ls", "call-s-ok"],
    )
    assert chosen("--since", "@4000000000") == (0, [])
    examined, limited = chosen("--limit", "1")
    assert (examined, limited) == (10, ["call-s-echo"])
    assert_user_error(
        clawlog("audit", "--db", str(two_agents_log), "--until", "5"),
        "--until applies to --what-if",
    )


def test_the_digest_shown_is_the_agents_as_its_verdicts_record_it(
    log: Path, tmp_path: Path
) -> None:
    """Verdicts record the digest of the policy as it applied to their agent; the global
    digest (over every agent's section) matches none, so it is named apart."""
    recorded = {
        c["policy_digest"] for c in json.loads(clawlog("audit", "--db", str(log), "--json").stdout)
    }
    assert len(recorded) == 1
    # The same policy for main, and a section for another agent: only the global digest moves.
    two_agents = policy_file(tmp_path, RECORDED_POLICY + '[agents.other]\ndeny = ["echo"]\n')
    for_main = json.loads(
        clawlog(
            "audit", "--db", str(log), "--what-if", two_agents, "--agent", "main", "--json"
        ).stdout
    )
    assert (for_main["agent"], {for_main["digest"]}) == ("main", recorded)
    assert "global_digest" not in for_main
    everyone = json.loads(
        clawlog("audit", "--db", str(log), "--what-if", two_agents, "--json").stdout
    )
    assert everyone["agent"] is None and "digest" not in everyone
    assert len(everyone["global_digest"]) == 32 and {everyone["global_digest"]} != recorded


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("p.toml", "[tools]\ndenny = ['x']\n", "unknown key 'tools.denny': did you mean 'deny'?"),
        ("p.json", "{", "is not valid JSON"),
        ("p.ini", "", "write the policy as .toml or .json"),
    ],
)
def test_a_bad_policy_file_is_one_line_with_exit_status_2(
    log: Path, tmp_path: Path, name: str, text: str, fragment: str
) -> None:
    path = policy_file(tmp_path, text, name)
    done = clawlog("audit", "--db", str(log), "--what-if", path)
    assert_user_error(done, f"policy file {path}", fragment)


def test_what_if_and_refused_do_not_mix(log: Path, tmp_path: Path) -> None:
    done = clawlog(
        "audit", "--db", str(log), "--what-if", policy_file(tmp_path, LOOSER), "--refused"
    )
    assert_user_error(done, "--refused", "--what-if")


def test_audit_takes_agent(log: Path) -> None:
    done = clawlog("audit", "--db", str(log), "--agent", "main", "--json")
    assert len(json.loads(done.stdout)) == 8
    done = clawlog("audit", "--db", str(log), "--agent", "nobody", "--json")
    assert json.loads(done.stdout) == []


def test_a_corrupt_call_stops_the_what_if_or_is_skipped(log: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.db"
    shutil.copy(log, damaged)
    db = sqlite3.connect(damaged)
    with db:  # the s-echo call's tool.call_started no longer decodes
        [(position,)] = db.execute(
            "SELECT position FROM events WHERE stream = 'session/main/s-echo' "
            "AND type = 'tool.call_started'"
        ).fetchall()
        db.execute("UPDATE events SET payload = x'ff' WHERE position = ?", (position,))
    db.close()
    stricter = policy_file(tmp_path, STRICTER)
    stopped = clawlog("audit", "--db", str(damaged), "--what-if", stricter)
    assert stopped.returncode == 2 and f"corrupt event at position {position}" in stopped.stderr
    skipped = clawlog(
        "audit", "--db", str(damaged), "--what-if", stricter, "--skip-corrupt", "--json"
    )
    assert skipped.returncode == 0, skipped.stderr
    document = json.loads(skipped.stdout)
    # The echo call was never seen decided: it counts as not re-decidable, not as a change.
    assert [c["session_key"] for c in document["changes"]] == ["s-ls", "s-ok"]
    assert document["totals"]["not_redecidable"] == 1
    assert f"skipped 1 corrupt event(s) at position {position}" in skipped.stderr


def test_on_the_demo_log_the_refused_exec_is_decided_again(tmp_path: Path) -> None:
    """The demo's `rm -rf /` was refused by a deny pattern: a looser approvals table keeps
    it refused (deny patterns always apply to a command tool); no longer treating exec as
    a command tool lets it through, and only it."""
    demo = tmp_path / "demo.db"
    assert clawlog("demo", "--db", str(demo)).returncode == 0
    looser = policy_file(tmp_path, '[approvals]\nsecurity = "full"\nask = "off"\n')
    done = clawlog("audit", "--db", str(demo), "--what-if", looser, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["changes"] == []
    assert report["totals"]["examined"] == report["totals"]["unchanged"] > 0
    unchecked = policy_file(
        tmp_path, '[approvals]\ncommand_tools = {}\nask = "off"\n', "unchecked.toml"
    )
    done = clawlog("audit", "--db", str(demo), "--what-if", unchecked, "--json")
    assert done.returncode == 0, done.stderr
    [change] = json.loads(done.stdout)["changes"]
    assert (change["tool"], change["change"]) == ("exec", "newly_allowed")
    assert (change["was_step"], change["was_rule"]) == ("approval", "deny pattern 'rm -rf'")
