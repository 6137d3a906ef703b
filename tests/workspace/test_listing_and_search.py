"""list_files, glob and search: the 500-entry cap, skipped folders, invisible denied
paths, depth, symlinks never followed, caps on matches."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from clawlog.tools import InvalidParameters
from clawlog.tools.errors import FileNotFound, NotAFile, PathTraversal, SearchTimedOut
from clawlog.tools.workspace import WorkspaceConfig
from clawlog.tools.workspace.config import MAX_DIR_ENTRIES

from .support import Bench, make_env


@pytest.fixture
def tree(disk: Bench) -> Bench:
    root = disk.root
    for rel in [
        "src/app.py",
        "src/util/helpers.py",
        "src/util/deep/x/y/z.py",
        "README.md",
        "node_modules/pkg/index.js",
        ".git/config",
        "target/debug/bin",
        "build/out.o",
        ".clawlog/state.json",
        "docs/guide.md",
    ]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"content of {rel}\nTODO: check {rel}\n")
    (root / "escape").symlink_to("/etc")
    return disk


async def test_list_files_shows_one_level_by_default(tree: Bench) -> None:
    result = await tree("list_files")
    lines = result.for_llm.splitlines()
    assert "src/" in lines and "docs/" in lines
    assert any(line.startswith("README.md  (") for line in lines)
    assert not any(line.startswith("src/app.py") for line in lines)


async def test_skipped_folders_are_shown_but_not_entered(tree: Bench) -> None:
    listing = (await tree("list_files", recursive=True, max_depth=10)).for_llm
    for name in ("node_modules", ".git", "target", "build"):
        assert f"{name}/  (not listed: generated or vendored)" in listing
    assert "index.js" not in listing and ".git/config" not in listing
    assert "src/util/deep/x/y/z.py" in listing


async def test_max_depth_limits_recursion(tree: Bench) -> None:
    listing = (await tree("list_files", recursive=True, max_depth=2)).for_llm
    assert "src/util/" in listing and "src/util/helpers.py" not in listing


async def test_denied_paths_are_invisible_everywhere(tree: Bench) -> None:
    listing = (await tree("ls", recursive=True, max_depth=5)).for_llm
    assert ".clawlog" not in listing
    assert ".clawlog" not in (await tree("glob", pattern="**/*.json")).for_llm
    assert ".clawlog" not in (await tree("grep", pattern="content")).for_llm
    tree.tools["list_files"].deny_paths("docs")  # PathDenyable, shared by every file tool
    assert "docs" not in (await tree("list_dir", recursive=True)).for_llm
    assert "guide.md" not in (await tree("search", pattern="TODO")).for_llm


async def test_symlinks_are_listed_not_followed(tree: Bench) -> None:
    listing = (await tree("list_files", recursive=True, max_depth=3)).for_llm
    assert "escape  (symlink)" in listing and "passwd" not in listing
    with pytest.raises(PathTraversal):
        await tree("list_files", path="escape")


async def test_listing_stops_at_500_entries(disk: Bench) -> None:
    for i in range(MAX_DIR_ENTRIES + 20):
        (disk.root / f"f{i:04d}.txt").write_text("x")
    result = await disk("list_files")
    lines = result.for_llm.split("\n\n")[0].splitlines()
    assert len(lines) == MAX_DIR_ENTRIES
    assert f"[listing stopped at {MAX_DIR_ENTRIES} entries" in result.for_llm
    assert result.details["truncated"] is True


async def test_listing_errors(tree: Bench) -> None:
    with pytest.raises(FileNotFound, match=r"^file not found"):
        await tree("list_files", path="nope")
    with pytest.raises(NotAFile, match="is a file, not a folder"):
        await tree("list_files", path="README.md")
    with pytest.raises(PathTraversal):
        await tree("list_files", path="..")


async def test_glob_matches_across_folders(tree: Bench) -> None:
    found = (await tree("glob", pattern="**/*.py")).for_llm.splitlines()
    assert found == ["src/app.py", "src/util/deep/x/y/z.py", "src/util/helpers.py"]
    assert (await tree("find", pattern="*.md")).for_llm.splitlines() == ["README.md"]
    assert (await tree("glob", pattern="*.py", path="src")).for_llm == "src/app.py"
    assert (await tree("glob", pattern="**/{app,helpers}.py")).for_llm.splitlines() == [
        "src/app.py",
        "src/util/helpers.py",
    ]
    assert (await tree("glob", pattern="**/*.js")).for_llm == "[no path matches **/*.js]"


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "src/../../*", "a\x00b"])
async def test_glob_patterns_cannot_leave_the_folder(tree: Bench, pattern: str) -> None:
    with pytest.raises(PathTraversal):
        await tree("glob", pattern=pattern)


async def test_glob_stops_at_500_matches(disk: Bench) -> None:
    for i in range(MAX_DIR_ENTRIES + 5):
        (disk.root / f"m{i:04d}.log").write_text("x")
    result = await disk("glob", pattern="*.log")
    assert len(result.for_llm.split("\n\n")[0].splitlines()) == MAX_DIR_ENTRIES
    assert result.details["truncated"] is True


async def test_search_finds_lines_with_their_numbers(tree: Bench) -> None:
    result = await tree("search", pattern=r"TODO: check src/\w+\.py")
    assert result.for_llm == "src/app.py:2: TODO: check src/app.py"
    ignoring = await tree("grep", pattern="todo: CHECK readme", ignore_case=True)
    assert ignoring.for_llm == "README.md:2: TODO: check README.md"
    only_md = (await tree("search", pattern="TODO", include="*.md")).for_llm.splitlines()
    assert only_md == [
        "README.md:2: TODO: check README.md",
        "docs/guide.md:2: TODO: check docs/guide.md",
    ]


async def test_search_skips_binaries_large_files_and_vendored_folders(tree: Bench) -> None:
    (tree.root / "blob.bin").write_bytes(b"\x00\x01TODO\x00")
    (tree.root / "large.txt").write_text("TODO\n" * 300_000)  # 1.5 MB
    found = (await tree("search", pattern="TODO")).for_llm
    assert "blob.bin" not in found and "large.txt" not in found and "node_modules" not in found


async def test_search_is_capped(disk: Bench) -> None:
    (disk.root / "many.txt").write_text("hit\n" * 1000)
    result = await disk("search", pattern="hit", max_results=20)
    assert len(result.for_llm.split("\n\n")[0].splitlines()) == 20
    assert "[stopped at 20 matches" in result.for_llm
    everything = await disk("search", pattern="hit", max_results=10_000)
    assert len(everything.for_llm.split("\n\n")[0].splitlines()) == MAX_DIR_ENTRIES


async def test_search_refuses_a_bad_regex(tree: Bench) -> None:
    with pytest.raises(InvalidParameters, match="invalid regular expression"):
        await tree("search", pattern="(unclosed")


async def test_long_lines_are_cut_in_search_results(disk: Bench, root: Path) -> None:
    (root / "long.txt").write_text("needle " + "x" * 1000 + "\n")
    line = (await disk("search", pattern="needle")).for_llm
    assert len(line) < 400 and line.endswith("…")


async def test_a_backtracking_pattern_stops_at_the_deadline_and_the_loop_runs_meanwhile(
    root: Path,
) -> None:
    """``(a|aa)+$`` on 40 a's backtracks for hours with ``re`` (holding the GIL); here it
    stops at ``search_timeout_s`` with a message, and other calls run meanwhile."""
    # The second search must end before the first one's deadline: 3 s is only a hang.
    bench = Bench(root, make_env(config=WorkspaceConfig(search_timeout_s=3.0)))
    (root / "trap.txt").write_text("fine line\n" + "a" * 40 + "!\n")
    (root / "other.txt").write_text("fine too\n")
    started = time.monotonic()
    slow = asyncio.ensure_future(bench("search", pattern="(a|aa)+$", path="trap.txt"))
    # With the GIL held by the match, neither the loop nor this second search could run
    # until the first one ended.
    assert (await bench("grep", pattern="fine", path="other.txt")).for_llm == (
        "other.txt:1: fine too"
    )
    assert not slow.done(), "the event loop was starved while the pattern ran"
    with pytest.raises(SearchTimedOut, match=r"trap\.txt:2.*simplify the pattern"):
        await slow
    assert time.monotonic() - started < 60  # stopped at the deadline, not after hours
    assert (await bench("grep", pattern="fine", path="trap.txt")).for_llm == "trap.txt:1: fine line"


def test_workspace_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="search_timeout_s must be positive"):
        WorkspaceConfig(search_timeout_s=0)
