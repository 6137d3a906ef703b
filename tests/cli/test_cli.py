"""The clawlog command as a user runs it: a real subprocess on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

from .support import clawlog


def test_demo_runs_and_continues_the_same_log(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    first = clawlog("demo", "--db", db)
    assert first.returncode == 0, first.stderr
    assert "run 1" in first.stdout and "task board" in first.stdout
    assert "handoff routes" in first.stdout and "refused tool calls" in first.stdout
    second = clawlog("demo", "--db", db)
    assert second.returncode == 0, second.stderr
    assert "run 2" in second.stdout
    board = json.loads(clawlog("board", "release", "--db", db, "--json").stdout)
    assert [t["status"] for t in board["tasks"]] == ["completed"] * 6
    routes = json.loads(clawlog("routes", "--db", db, "--json").stdout)
    assert [(r["chat_id"], r["agent"]) for r in routes] == [
        ("run-1", "billing"),
        ("run-2", "billing"),
    ]
    history = json.loads(clawlog("history", "lead", "demo-user", "--db", db, "--json").stdout)
    assert history[0] == {
        "position": history[0]["position"],
        "who": "user",
        "text": "Plan the v1.0 release",
    }
    refused = [h for h in history if h["who"] == "tool.call_refused"]
    assert len(refused) == 2 and all("exec" in h["text"] for h in refused)
    audit = json.loads(clawlog("audit", "--db", db, "--tool", "exec", "--refused", "--json").stdout)
    assert len(audit) == 2 and all(r["step"] == "approval" for r in audit)
    assert "deny pattern 'rm -rf'" in audit[0]["reason"]
    assert json.loads(clawlog("delegations", "--db", db, "--json").stdout) == []
    rebuilt = json.loads(clawlog("rebuild", "--db", db, "--json").stdout)
    assert rebuilt["position"] > 300 and Path(rebuilt["views"]).exists()
    tail = clawlog("tail", "--db", db, "-n", "5", "--json")
    assert (
        len(tail.stdout.splitlines()) == 5 and json.loads(tail.stdout.splitlines()[-1])["position"]
    )


def test_readers_refuse_a_missing_or_foreign_file_with_a_clear_message(tmp_path: Path) -> None:
    missing = clawlog("tail", "--db", str(tmp_path / "nope.db"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    foreign = tmp_path / "notes.txt"
    foreign.write_text("just text\n")
    result = clawlog("board", "x", "--db", str(foreign))
    assert result.returncode == 2 and "is not a clawlog event log" in result.stderr
    assert foreign.read_text() == "just text\n"


def test_readers_query_read_models_kept_next_to_the_log(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert clawlog("demo", "--db", str(db)).returncode == 0
    views = tmp_path / "demo.views.db"
    assert views.exists()  # the demo's own readers brought it up to the head
    first = json.loads(clawlog("board", "release", "--db", str(db), "--json").stdout)
    assert clawlog("demo", "--db", str(db)).returncode == 0
    second = json.loads(clawlog("board", "release", "--db", str(db), "--json").stdout)
    assert len(first["tasks"]) == 3 and len(second["tasks"]) == 6
    assert second["tasks"][:3] == first["tasks"]


def test_readers_build_the_models_elsewhere_when_their_file_cannot_be_written(
    tmp_path: Path,
) -> None:
    db = tmp_path / "demo.db"
    assert clawlog("demo", "--db", str(db)).returncode == 0
    views = tmp_path / "demo.views.db"
    views.unlink()
    views.mkdir()  # in the way: the models cannot be kept there
    routes = clawlog("routes", "--db", str(db), "--json")
    assert routes.returncode == 0, routes.stderr
    assert [r["agent"] for r in json.loads(routes.stdout)] == ["billing"]
    assert views.is_dir() and not any(views.iterdir())


def test_tail_shows_the_last_matches_of_a_filter_wherever_they_are(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    assert clawlog("demo", "--db", db).returncode == 0
    refused = clawlog("tail", "--db", db, "-n", "5", "--type", "tool.call_refused", "--json")
    assert refused.returncode == 0, refused.stderr
    lines = [json.loads(line) for line in refused.stdout.splitlines()]
    assert [e["type"] for e in lines] == ["tool.call_refused"]  # far from the log's end
    teams = clawlog("tail", "--db", db, "-n", "2", "--stream-prefix", "team/", "--json")
    assert [json.loads(line)["stream"] for line in teams.stdout.splitlines()] == [
        "team/release"
    ] * 2
