"""apply_patch is all or nothing whatever fails midway (the disk, the event log behind a
memory document, a cancelled call), and a file is one file however the patch spells it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from clawlog.events import Event, EventStore, StoreClosed
from clawlog.tools.errors import FileNotFound, PatchRejected

from .support import Bench, StoreRecorder, make_env

BEFORE = "one = 1\ntwo = 2\n"
#: Updates a.py, then adds a memory document (written through the event log).
THEN_MEMORY = """\
--- a/a.py
+++ b/a.py
@@ -1,2 +1,2 @@
 one = 1
-two = 2
+two = 22
--- /dev/null
+++ b/memory/notes.md
@@ -0,0 +1 @@
+a note
"""


@pytest.fixture
def bench_a(bench: Bench) -> Bench:
    (bench.root / "a.py").write_text(BEFORE)
    return bench


async def test_a_second_file_the_disk_refuses_leaves_the_first_unchanged(disk: Bench) -> None:
    # "x" is written as a file, so "x/y.txt" cannot be: a real failure at write time,
    # after every file was planned (root or not)
    (disk.root / "a.py").write_text(BEFORE)
    patch = (
        "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n one = 1\n-two = 2\n+two = 22\n"
        "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+file\n"
        "--- /dev/null\n+++ b/x/y.txt\n@@ -0,0 +1 @@\n+below\n"
    )
    with pytest.raises(PatchRejected, match=r"could not be written .*nothing was changed"):
        await disk("apply_patch", patch=patch)
    assert (disk.root / "a.py").read_text() == BEFORE
    assert sorted(os.listdir(disk.root)) == ["a.py"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
async def test_a_second_file_in_a_read_only_folder_leaves_the_first_unchanged(
    disk: Bench,
) -> None:
    (disk.root / "a.py").write_text(BEFORE)
    (disk.root / "locked").mkdir()
    (disk.root / "locked" / "b.txt").write_text("b\n")
    (disk.root / "locked").chmod(0o555)
    patch = (
        "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n one = 1\n-two = 2\n+two = 22\n"
        "--- a/locked/b.txt\n+++ b/locked/b.txt\n@@ -1 +1 @@\n-b\n+bb\n"
    )
    try:
        with pytest.raises(PatchRejected, match="permission denied"):
            await disk("apply_patch", patch=patch)
    finally:
        (disk.root / "locked").chmod(0o755)
    assert (disk.root / "a.py").read_text() == BEFORE
    assert (disk.root / "locked" / "b.txt").read_text() == "b\n"


async def test_a_second_file_the_event_log_refuses_leaves_the_first_unchanged(
    bench_a: Bench, store: EventStore
) -> None:
    await store.close()
    with pytest.raises(StoreClosed):
        await bench_a("apply_patch", patch=THEN_MEMORY)
    assert (bench_a.root / "a.py").read_text() == BEFORE
    assert bench_a.env.memory is not None
    assert bench_a.env.memory.get("main", "telegram:42", "memory/notes.md") is None


class HeldRecorder(StoreRecorder):
    """Appends to the real store once released; says when a write is waiting."""

    def __init__(self, store: EventStore) -> None:
        super().__init__(store)
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, stream: str, events: Sequence[Event]) -> object:
        self.waiting.set()
        await self.release.wait()
        return await super().__call__(stream, events)


async def test_a_patch_cancelled_midway_is_rolled_back(root: Path, store: EventStore) -> None:
    recorder = HeldRecorder(store)
    bench = Bench(root, make_env(recorder))
    (root / "a.py").write_text(BEFORE)
    call = asyncio.create_task(bench("apply_patch", patch=THEN_MEMORY))
    await recorder.waiting.wait()
    assert (root / "a.py").read_text() == "one = 1\ntwo = 22\n"  # written, the rest pending
    call.cancel()
    recorder.release.set()  # the write under way lands after the cancel: it is undone too
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (root / "a.py").read_text() == BEFORE
    assert bench.env.memory is not None
    assert bench.env.memory.get("main", "telegram:42", "memory/notes.md") is None
    recorded = [r.type for r in await store.read_stream("agent/main")]
    assert recorded == [
        "workspace.memory_document_written",
        "workspace.memory_document_deleted",
    ]


async def test_a_symlink_and_its_target_are_one_file(disk: Bench) -> None:
    (disk.root / "a.txt").write_text("one\ntwo\n")
    (disk.root / "link.txt").symlink_to("a.txt")
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n"
        "--- a/./link.txt\n+++ b/./link.txt\n@@ -1,2 +1,2 @@\n ONE\n-two\n+TWO\n"
    )
    result = await disk("apply_patch", patch=patch)
    assert result.for_llm == "Patch applied:\n  updated a.txt"
    assert (disk.root / "a.txt").read_text() == "ONE\nTWO\n"
    assert (disk.root / "link.txt").is_symlink()


async def test_a_file_added_under_one_spelling_is_updated_under_another(disk: Bench) -> None:
    (disk.root / "docs").mkdir()
    (disk.root / "d").symlink_to("docs")
    patch = (
        "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1 @@\n+draft\n"
        "--- a/d/new.md\n+++ b/d/new.md\n@@ -1 +1 @@\n-draft\n+final\n"
    )
    result = await disk("apply_patch", patch=patch)
    assert result.for_llm == "Patch applied:\n  created docs/new.md"
    assert (disk.root / "docs" / "new.md").read_text() == "final\n"


async def test_a_file_deleted_under_one_spelling_is_gone_under_another(disk: Bench) -> None:
    (disk.root / "a.txt").write_text("one\n")
    (disk.root / "link.txt").symlink_to("a.txt")
    patch = (
        "--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-one\n"
        "--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-one\n+two\n"
    )
    with pytest.raises(FileNotFound, match=r"file not found: link\.txt"):
        await disk("apply_patch", patch=patch)
    assert (disk.root / "a.txt").read_text() == "one\n"
