"""`clawlog doctor` and :func:`clawlog.events.doctor.examine`: every problem of a real,
really damaged log is reported (its position, stream, type and what is wrong), a healthy
log is said to be healthy, and a file that cannot be examined is one line, exit status 2.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import ANY, NotAClawlogDatabase, open_store
from clawlog.events.doctor import examine
from clawlog.events.domain.actor import ActorStarted
from clawlog.projections.testing import write_mixed_log_file

from .damage import drop_table, flip_payload_byte, overwrite_page, truncate_half
from .support import assert_user_error, clawlog, write_app_notes, write_log

EVENTS = 600


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    write_log(path, EVENTS)
    return path


def doctor_json(log: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    done = clawlog("doctor", str(log), "--json", *extra)
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_healthy_log_is_reported_healthy(log: Path) -> None:
    done = clawlog("doctor", "--db", str(log))

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == (
        f"{log}: healthy: {EVENTS} events decoded, schema ok, hash chain intact up to head "
        f"{EVENTS}, integrity check run\n"
    )


def test_a_healthy_log_as_json_with_debug_logging_still_parses(log: Path) -> None:
    status, report, _ = doctor_json(log, "-vv")

    assert status == 0
    assert report == {
        "log": str(log),
        "integrity": [],
        "schema": [],
        "rows": EVENTS,
        "corrupt": [],
        "damaged": [],
        "unread": None,
        "chain": f"intact up to head {EVENTS}",
        "chain_broken": None,
        "healthy": True,
    }


def test_events_of_an_application_s_own_types_are_not_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    write_app_notes(path, ["one", "two"])

    status, report, _ = doctor_json(path)

    assert status == 0 and report["rows"] == 2


def test_each_corrupt_event_is_named_with_its_stream_and_type(log: Path) -> None:
    flip_payload_byte(log, 50)
    flip_payload_byte(log, 250)

    status, report, stderr = doctor_json(log)

    assert status == 1
    assert [(c["position"], c["type"]) for c in report["corrupt"]] == [
        (50, "actor.started"),
        (250, "actor.started"),
    ]
    assert report["corrupt"][0]["stream"] == "agent/batch0"
    assert "Expected `object`, got `int`" in report["corrupt"][0]["reason"]
    assert report["rows"] == EVENTS - 2
    assert report["healthy"] is False
    assert stderr.count("\n") == 1 and "2 corrupt event(s)" in stderr


def test_for_people_each_problem_is_one_line_then_a_summary(log: Path) -> None:
    flip_payload_byte(log, 250)

    done = clawlog("doctor", "--db", str(log))

    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        f"{log}: corrupt event at position 250 (stream 'agent/batch2', type 'actor.started'): "
    )
    # The byte was changed with SQL: the hash chain says so too, at the same position.
    assert lines[1].startswith(f"{log}: hash chain broken at position 250: edited: ")
    assert lines[2] == (
        f"{log} is damaged: 1 corrupt event(s), a broken hash chain; {EVENTS - 1} events "
        "decoded; integrity check run"
    )
    assert done.stderr == f"clawlog doctor: {lines[2]}\n"


def test_unreadable_pages_are_stepped_over_and_reported_as_ranges(log: Path) -> None:
    first, last = overwrite_page(log, 300)
    flip_payload_byte(log, 500)  # beyond the damaged page: still found

    status, report, stderr = doctor_json(log, "-vv")  # stdout parses whatever is logged

    assert status == 1
    assert report["damaged"] == [[first, last]]
    assert [c["position"] for c in report["corrupt"]] == [500]
    assert report["rows"] == EVENTS - (last - first + 1) - 1
    assert report["integrity"], "SQLite's integrity check sees the damaged page"
    assert "stepping over rows the log cannot read" not in stderr  # the report lists them itself


@pytest.mark.parametrize(
    ("damage", "problem", "integrity"),
    [
        (lambda log: drop_table(log, "events"), "the events table is missing", []),
        (lambda log: drop_table(log, "snapshots"), "the snapshots table is missing", []),
        (truncate_half, "truncated: the file is", None),  # SQLite cannot read it at all
    ],
    ids=["events table dropped", "snapshots table dropped", "truncated"],
)
async def test_a_log_the_store_cannot_open_is_examined_all_the_same(
    log: Path, damage: Callable[[Path], None], problem: str, integrity: list[str] | None
) -> None:
    damage(log)

    report = await examine(log)

    assert not report.healthy
    assert any(problem in line for line in report.schema), report.schema
    assert report.integrity == integrity
    assert report.rows == 0
    assert report.unread is None
    assert "no event decoded" in report.summary()


async def test_the_library_check_decodes_through_a_store_it_is_given_and_leaves_it_open(
    log: Path,
) -> None:
    flip_payload_byte(log, 7)
    store = await open_store(log, read_only=True)
    try:
        report = await examine(log, store=store)
        assert [row.position for row in report.corrupt] == [7]
        assert await store.head_position() == EVENTS  # still open
    finally:
        await store.close()


async def test_a_file_that_is_not_a_log_cannot_be_examined(tmp_path: Path) -> None:
    path = tmp_path / "random.db"
    path.write_bytes(os.urandom(8192))

    with pytest.raises(NotAClawlogDatabase):
        await examine(path)
    done = clawlog("doctor", str(path))
    assert_user_error(done, str(path), "not a clawlog event log")


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    assert_user_error(clawlog("doctor", str(tmp_path / "nothing.db")), "no such file")


async def test_the_check_runs_in_bounded_memory(tmp_path: Path) -> None:
    """Rows are counted page by page, never kept: the peak stays far below what holding
    20,000 decoded events would take (several times their ~6 MB of payload)."""
    path = tmp_path / "big.db"
    head = await write_mixed_log_file(path, 20_000)

    tracemalloc.start()
    try:
        report = await examine(path, page_size=200)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert report.healthy and report.rows == head
    assert peak < 4 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.postgres
async def test_a_postgres_log_is_decoded_whole_without_an_integrity_check() -> None:
    asyncpg = pytest.importorskip("asyncpg")
    from tests.support.postgres import database_url, fresh_postgres_backend

    url = database_url()
    backend = await fresh_postgres_backend()
    store = await open_store(backend)
    try:
        for n in range(30):
            await store.append(f"agent/a{n % 3}", [ActorStarted(path=f"a{n}", kind="w")], ANY)
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                f"UPDATE {backend.schema}.events SET payload = '\\xff' WHERE position = 12"
            )
        finally:
            await conn.close()

        report = await examine(url, store=store)
    finally:
        await store.close()

    assert report.integrity is None
    assert [(row.position, row.type) for row in report.corrupt] == [(12, "actor.started")]
    assert report.rows == 29 and not report.healthy
    assert "no integrity check (PostgreSQL has none" in report.summary()


async def test_each_integrity_message_is_one_line_without_sqlites_heading(
    tmp_path: Path,
) -> None:
    # A zeroed interior page makes SQLite answer with many messages in one newline-joined
    # row under "*** in database main ***": the report keeps one message per line.
    log = tmp_path / "big.db"
    await write_mixed_log_file(log, 20_000)
    conn = sqlite3.connect(log)
    [(pageno,)] = conn.execute(
        "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'internal' "
        "ORDER BY path LIMIT 1 OFFSET 1"
    ).fetchall()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with log.open("r+b") as file:
        file.seek((pageno - 1) * page_size)
        file.write(b"\x00" * page_size)
    report = await examine(log)
    assert report.integrity, "the damage was not found"
    assert all("\n" not in m and not m.startswith("***") for m in report.integrity)
    assert len(report.integrity) > 1


def test_an_edit_only_the_hash_chain_sees_is_damage(log: Path) -> None:
    """A row that still decodes, but whose actor was changed with SQL."""
    conn = sqlite3.connect(log)
    try:
        with conn:
            conn.execute("UPDATE events SET actor = 'someone/else' WHERE position = 42")
    finally:
        conn.close()

    status, report, stderr = doctor_json(log)

    assert status == 1
    assert report["corrupt"] == [] and report["rows"] == EVENTS
    assert report["chain"] == "broken at position 42"
    assert report["chain_broken"].startswith("position 42: edited: ")
    assert "a broken hash chain" in stderr


def test_a_log_from_before_the_chain_is_healthy_and_says_so(tmp_path: Path) -> None:
    from tests.events.test_chain import write_v1_log

    path = tmp_path / "old.db"
    write_v1_log(path, 50)

    status, report, _ = doctor_json(path)

    assert status == 0, report
    assert report["chain"].startswith("none yet") and "clawlog verify --upgrade" in report["chain"]
