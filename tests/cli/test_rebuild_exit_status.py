"""Exit statuses say the truth: ``rebuild`` exits 1 and names each projection that failed,
with its position and error; log records never reach stdout, so ``--json`` parses even
at debug level."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from clawlog.events import ANY, open_store
from clawlog.events.domain.team import TeamTaskCreated
from clawlog.projections import ALL_PROJECTIONS, RebuildFailed, rebuild
from clawlog.projections.testing import dump_tables

from .support import READERS, clawlog, write_board

#: SQLite's own words when the task board gets the same task twice.
_DUPLICATE = "IntegrityError: UNIQUE constraint failed: task_boards.team, task_boards.task_id"


def write_duplicate_task(path: Path) -> None:
    """A log whose event at position 3 creates task t1 again: the task boards fail there."""

    async def write() -> None:
        store = await open_store(path)
        try:
            for subject in ("first", "second"):
                await store.append("team/x", [TeamTaskCreated(task_id="t1", subject=subject)], ANY)
                await store.append("team/y", [TeamTaskCreated(task_id=subject, subject="ok")], ANY)
        finally:
            await store.close()

    asyncio.run(write())


@pytest.fixture
def damaged_log(tmp_path: Path) -> str:
    db = tmp_path / "damaged.db"
    write_duplicate_task(db)
    return str(db)


async def test_rebuild_raises_naming_each_failure_after_swapping_in_the_rest(
    damaged_log: str, tmp_path: Path
) -> None:
    store = await open_store(damaged_log)
    views = tmp_path / "lib.views.db"
    try:
        with pytest.raises(RebuildFailed) as raised:
            await rebuild(store, views, [p() for p in ALL_PROJECTIONS], show_progress=False)
    finally:
        await store.close()
    assert raised.value.position == 4
    [failure] = raised.value.failures
    assert (failure.name, failure.position, failure.error) == ("task_boards", 3, _DUPLICATE)
    assert str(failure) in str(raised.value)
    assert len(dump_tables(views)["stream_catalog"]) == 2  # the healthy ones are in place


def test_rebuild_exits_1_and_names_the_failed_projection(damaged_log: str) -> None:
    done = clawlog("rebuild", "--db", damaged_log)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stdout == ""  # no "rebuilt ... up to position 4": that would not be true
    failed = [line for line in done.stderr.splitlines() if line.startswith("rebuild:")]
    assert failed == [f"rebuild: projection task_boards failed at position 3: {_DUPLICATE}"]
    assert "Traceback" not in done.stderr


def test_rebuild_json_names_the_failures_and_still_parses(damaged_log: str) -> None:
    done = clawlog("rebuild", "--db", damaged_log, "--json", "-vv")
    assert done.returncode == 1, (done.returncode, done.stderr)
    report = json.loads(done.stdout)
    assert report["position"] == 4
    assert report["failed"] == [{"projection": "task_boards", "position": 3, "error": _DUPLICATE}]
    assert f"rebuild: projection task_boards failed at position 3: {_DUPLICATE}" in done.stderr


def test_a_clean_rebuild_exits_0_with_no_failures(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    write_board(db, "crew", ["ship it"])
    done = clawlog("rebuild", "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "views": str(tmp_path / "board.views.db"),
        "position": 2,
        "failed": [],
    }
    assert clawlog("rebuild", "--db", str(db)).stdout.startswith("rebuilt ")


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = tmp_path_factory.mktemp("debug") / "demo.db"
    made = clawlog("demo", "--db", str(db))
    assert made.returncode == 0, made.stderr
    return str(db)


@pytest.mark.parametrize(
    "command",
    [*READERS, ("replay", "--as-of", "999999", "--stream", "team/release")],
    ids=" ".join,
)
def test_debug_logs_go_to_stderr_never_into_json_on_stdout(
    demo_log: str, command: tuple[str, ...]
) -> None:
    done = clawlog(*command, "--db", demo_log, "--json", "-vv")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines
    for line in lines:
        assert not line.startswith("clawlog:"), line
    if "--rerun" in command:  # the re-run's system logs: they are there, on stderr
        assert "clawlog: INFO clawlog.actors.system: system open" in done.stderr
    if command in (("tail",), ("replay",)):
        assert all(isinstance(json.loads(line), dict) for line in lines)
    else:
        json.loads(done.stdout)
