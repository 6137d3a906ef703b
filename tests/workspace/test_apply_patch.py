"""apply_patch: unified diffs and *** Begin Patch blocks over several files, all hunks or
nothing; IronClaw's old_string form."""

from __future__ import annotations

import pytest

from clawlog.tools.errors import FileNotFound, PatchRejected, PathDenied, PathTraversal

from .support import Bench

TWO_FILES = """\
diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -1,3 +1,3 @@
 one = 1
-two = 2
+two = 22
 three = 3
--- a/b.py
+++ b/b.py
@@ -1,2 +1,3 @@
 alpha
+beta
 gamma
"""


@pytest.fixture
def files(disk: Bench) -> Bench:
    (disk.root / "a.py").write_text("one = 1\ntwo = 2\nthree = 3\n")
    (disk.root / "b.py").write_text("alpha\ngamma\n")
    return disk


async def test_a_unified_diff_over_two_files_applies(files: Bench) -> None:
    result = await files("apply_patch", patch=TWO_FILES)
    assert result.for_llm == "Patch applied:\n  updated a.py\n  updated b.py"
    assert (files.root / "a.py").read_text() == "one = 1\ntwo = 22\nthree = 3\n"
    assert (files.root / "b.py").read_text() == "alpha\nbeta\ngamma\n"


async def test_one_failing_hunk_changes_nothing(files: Bench) -> None:
    broken = TWO_FILES.replace(" alpha\n+beta", " ALPHA\n+beta")
    with pytest.raises(PatchRejected, match=r"hunk 1 does not apply to b.py.*Nothing was changed"):
        await files("apply_patch", patch=broken)
    assert (files.root / "a.py").read_text() == "one = 1\ntwo = 2\nthree = 3\n"
    assert (files.root / "b.py").read_text() == "alpha\ngamma\n"


async def test_hunks_apply_when_lines_moved(files: Bench) -> None:
    (files.root / "a.py").write_text("# header\n# more\none = 1\ntwo = 2\nthree = 3\n")
    await files("apply_patch", patch=TWO_FILES)
    assert (files.root / "a.py").read_text() == "# header\n# more\none = 1\ntwo = 22\nthree = 3\n"


async def test_files_are_created_and_deleted(files: Bench) -> None:
    patch = (
        "--- /dev/null\n+++ b/new/c.txt\n@@ -0,0 +1,2 @@\n+first\n+second\n"
        "--- a/b.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-alpha\n-gamma\n"
    )
    result = await files("apply_patch", patch=patch)
    assert "created new/c.txt" in result.for_llm and "deleted b.py" in result.for_llm
    assert (files.root / "new/c.txt").read_text() == "first\nsecond\n"
    assert not (files.root / "b.py").exists()


async def test_a_patch_touching_a_forbidden_path_changes_nothing(files: Bench) -> None:
    escaping = TWO_FILES + "--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(PathTraversal):
        await files("apply_patch", patch=escaping)
    protected = TWO_FILES + "--- /dev/null\n+++ b/SOUL.md\n@@ -0,0 +1 @@\n+evil\n"
    with pytest.raises(PathDenied, match="protected identity file"):
        await files("apply_patch", patch=protected)
    assert (files.root / "a.py").read_text() == "one = 1\ntwo = 2\nthree = 3\n"
    assert not (files.root / "SOUL.md").exists()


async def test_adding_an_existing_file_or_updating_a_missing_one_fails(files: Bench) -> None:
    with pytest.raises(PatchRejected, match="already exists"):
        await files("apply_patch", patch="--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(FileNotFound):
        await files("apply_patch", patch="--- a/zz.py\n+++ b/zz.py\n@@ -1 +1 @@\n-a\n+b\n")


async def test_an_openai_patch_block_applies(files: Bench) -> None:
    patch = """*** Begin Patch
*** Add File: notes/todo.md
+- write tests
*** Update File: a.py
@@ one = 1
-two = 2
+two = 2.0
*** Delete File: b.py
*** End Patch"""
    await files("apply_patch", patch=patch)
    assert (files.root / "notes/todo.md").read_text() == "- write tests\n"
    assert (files.root / "a.py").read_text() == "one = 1\ntwo = 2.0\nthree = 3\n"
    assert not (files.root / "b.py").exists()


async def test_an_openai_move_renames_the_file(files: Bench) -> None:
    patch = "*** Begin Patch\n*** Update File: b.py\n*** Move to: c.py\n@@\n alpha\n-gamma\n+delta\n*** End Patch"
    await files("apply_patch", patch=patch)
    assert not (files.root / "b.py").exists()
    assert (files.root / "c.py").read_text() == "alpha\ndelta\n"


async def test_the_ironclaw_form_is_an_edit(files: Bench) -> None:
    result = await files("apply_patch", path="a.py", old_string="two = 2", new_string="two = 3")
    assert "Edited a.py" in result.for_llm
    assert (files.root / "a.py").read_text() == "one = 1\ntwo = 3\nthree = 3\n"


async def test_text_that_is_not_a_patch_is_refused(files: Bench) -> None:
    with pytest.raises(PatchRejected, match="no file changes found"):
        await files("apply_patch", patch="please change two to three")
