"""An atomic write survives SIGKILL: the target holds the old or the new content, never a
mix, whatever moment the writer dies at."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .atomic_child import NEW, OTHER

OLD = "old content\n" * 1000


def _start(root: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workspace.atomic_child", str(root), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    for pipe in (child.stdin, child.stdout):
        assert pipe is not None
        pipe.close()


@pytest.mark.parametrize(("mode", "temps"), [("before-create", 0), ("before-rename", 1)])
def test_a_writer_killed_mid_write_leaves_the_old_content(
    root: Path, mode: str, temps: int
) -> None:
    target = root / "big.txt"
    target.write_text(OLD)
    child = _start(root, mode)
    assert child.stdout is not None
    assert child.stdout.readline() == "paused\n"
    pending = [p for p in root.iterdir() if p.name.endswith(".clawlog-tmp")]
    assert len(pending) == temps
    if temps:  # the whole new content is written, only the rename is missing
        assert pending[0].stat().st_size == len(NEW)
    _kill(child)
    assert target.read_text() == OLD


def test_a_writer_killed_at_any_moment_leaves_one_whole_version(root: Path) -> None:
    target = root / "big.txt"
    target.write_text(OLD)
    for _ in range(3):
        child = _start(root, "loop")
        assert child.stdout is not None
        assert child.stdout.readline().startswith("wrote ")
        _kill(child)
        assert target.read_text() in (NEW, OTHER)
