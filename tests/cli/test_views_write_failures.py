"""``rebuild`` when the read-model file cannot be written: the one line names the views
file and SQLite's real cause, never the log, and never the "cannot rollback" that a
second ROLLBACK after a failed COMMIT would raise (SQLite rolls back by itself when a
COMMIT fails for a full disk or an I/O error).

The disk is made "full" for the child alone with RLIMIT_FSIZE (SIGXFSZ ignored, so a write
past the limit fails with EFBIG, which SQLite reports as a disk I/O error): no mount, no
root.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

from .support import ROOT, clawlog, write_board

#: Bytes any file the child writes may grow to: the log is written before, by this
#: process; the read models' schema alone is larger.
_FILE_SIZE_LIMIT = 40_000


def _small_file_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (_FILE_SIZE_LIMIT, _FILE_SIZE_LIMIT))


def test_rebuild_into_a_file_that_cannot_grow_names_the_views_file_and_the_cause(
    tmp_path: Path,
) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", ["write the changelog", "tag the release"])
    views = tmp_path / "out" / "board.views.db"
    views.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "clawlog", "--db", str(log), "rebuild", "--views", str(views)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        preexec_fn=_small_file_limit,
    )
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"clawlog: cannot rebuild the read models in {views}: "), line
    assert "disk I/O error" in line or "full" in line, line
    assert "cannot rollback" not in line and "--views FILE" in line, line


def test_a_reader_warns_once_when_the_views_file_is_there_but_unusable(tmp_path: Path) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", ["write the changelog"])
    views = tmp_path / "board.views.db"
    views.write_text("not a read-model file\n")
    done = clawlog("--db", str(log), "board", "release")
    assert done.returncode == 0, done.stderr
    assert "write the changelog" in done.stdout
    [warning] = done.stderr.splitlines()
    assert "WARNING" in warning and f"views={views}" in warning, warning
    assert "temporary file" in warning and "not a read-model database" in warning, warning
    assert views.read_text() == "not a read-model file\n"  # a foreign file is never overwritten
