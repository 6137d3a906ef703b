"""``tail -f --skip-corrupt`` says each corrupt event it steps over when it meets it, not
only in the summary printed when the follower is stopped (hours later, perhaps)."""

from __future__ import annotations

import queue
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from .support import ROOT, write_board

#: The columns of a row copied from the last one, all but its position and version.
_COPIED = "stream, type, schema_version, recorded_at, correlation_id, causation_id, actor"


def append_rows_after_the_last(log: Path, payloads: list[bytes | None]) -> list[int]:
    """Copies of the last event, one per payload (None: the last event's own), appended
    behind the writer's back as a bad disk or another tool would; their positions."""
    db = sqlite3.connect(log)
    try:
        with db:
            head, version = db.execute(
                "SELECT position, version FROM events ORDER BY position DESC LIMIT 1"
            ).fetchone()
            for n, payload in enumerate(payloads, 1):
                db.execute(
                    f"INSERT INTO events (position, version, payload, {_COPIED}) "
                    f"SELECT ?, ?, coalesce(?, payload), {_COPIED} FROM events WHERE position = ?",
                    (head + n, version + n, payload, head),
                )
    finally:
        db.close()
    return [head + n for n in range(1, len(payloads) + 1)]


def lines_of(stream: IO[str]) -> tuple[queue.Queue[str], threading.Thread]:
    """The lines of ``stream`` as they come, read on a thread (a follower never ends),
    and the thread, which ends at the stream's end."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def test_a_follower_names_each_corrupt_event_it_skips_as_it_meets_it(tmp_path: Path) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", ["write the changelog"])
    command = ["tail", "-f", "-n", "1", "--skip-corrupt"]
    follower = subprocess.Popen(
        [sys.executable, "-m", "clawlog", "--db", str(log), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert follower.stdout is not None and follower.stderr is not None
    (out, out_reader), (err, err_reader) = lines_of(follower.stdout), lines_of(follower.stderr)
    try:
        out.get(timeout=60)  # the last event: it follows now
        corrupt, good = append_rows_after_the_last(log, [b"\xc1", None])
        assert out.get(timeout=60).split()[0] == str(good)
        # the good row after it was printed, so the skip was met and said before it
        warning = err.get(timeout=60)
        assert "skipped a corrupt event" in warning and f"position={corrupt}" in warning
    finally:
        follower.terminate()
        follower.wait(timeout=60)
        for reader, stream in ((out_reader, follower.stdout), (err_reader, follower.stderr)):
            reader.join(timeout=60)
            stream.close()
