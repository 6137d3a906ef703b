"""All read models on a real mixed log (the demo, three runs): live follower == rebuild,
and the models agree with the log."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from actors.cli.demo import run_demo
from events import SqliteBackend, open_store
from projections import ALL_PROJECTIONS, ProjectionRunner, ToolAuditReader


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        tables = [p.table_names[0] for p in ALL_PROJECTIONS]
        return {t: list(conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2")) for t in tables}
    finally:
        conn.close()


async def test_live_read_models_equal_a_rebuild_of_a_mixed_log(tmp_path: Path) -> None:
    log = tmp_path / "demo.db"
    await run_demo(str(log))  # creates the file
    follower = await open_store(SqliteBackend(log, read_only=True, poll_interval=0.01))
    live = ProjectionRunner(follower, tmp_path / "live.db", [p() for p in ALL_PROJECTIONS],
                            batch_size=50)
    try:
        live.start()
        await run_demo(str(log))
        await run_demo(str(log))
        head = await follower.head_position()
        await live.wait_until(head, timeout=30)
        await live.stop()
        rebuilt = ProjectionRunner(follower, tmp_path / "rebuilt.db",
                                   [p() for p in ALL_PROJECTIONS])
        await rebuilt.catch_up()
        await rebuilt.stop()
    finally:
        await follower.close()
    live_rows, rebuilt_rows = dump(tmp_path / "live.db"), dump(tmp_path / "rebuilt.db")
    assert live_rows == rebuilt_rows
    assert head > 500
    boards = live_rows["task_boards"]
    assert len(boards) == 9 and {row[4] for row in boards} == {"completed"}
    assert [(r[0], r[1], r[2]) for r in live_rows["handoff_routes"]] == [
        ("cli", f"run-{i}", "billing") for i in (1, 2, 3)]
    assert len(live_rows["subagent_tasks"]) == 3
    conn = sqlite3.connect(tmp_path / "live.db")
    try:
        refused = ToolAuditReader(conn).calls(tool="exec", status="refused")
        assert len(refused) == 3 and all(r["step"] == "approval" for r in refused)
        page = ToolAuditReader(conn).calls(limit=5)
        assert len(page) == 5
        assert ToolAuditReader(conn).calls(after=page[-1]["position"], limit=1)[0] != page[-1]
    finally:
        conn.close()
