"""read_file: line numbers, offset/limit, adaptive pages, the 1 MB cap, the continuation
notice, and the errors of seed 003."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawlog.tools.errors import FileNotFound, NotAFile, PathDenied, PathTraversal
from clawlog.tools.workspace import WorkspaceConfig, fsio
from clawlog.tools.workspace.config import MAX_READ_BYTES

from .support import Bench, make_env


async def test_lines_are_numbered_from_one(disk: Bench) -> None:
    (disk.root / "a.txt").write_text("alpha\nbeta\n")
    result = await disk("read_file", path="a.txt")
    assert result.for_llm == "     1\talpha\n     2\tbeta"
    assert result.details["truncation"] == {
        "truncated": False,
        "outputLines": 2,
        "firstLineExceedsLimit": False,
    }
    assert result.details["total_lines"] == 2 and result.details["next_offset"] is None


async def test_offset_skips_lines_and_limit_caps_them(disk: Bench) -> None:
    (disk.root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await disk("read_file", path="a.txt", offset=3, limit=2)
    assert result.for_llm.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]
    assert "[Showing lines 4-5 of 10 of a.txt. Use offset=5 to continue.]" in result.for_llm
    assert result.details["next_offset"] == 5


async def test_reading_past_the_end_says_so(disk: Bench) -> None:
    (disk.root / "a.txt").write_text("one\ntwo\n")
    result = await disk("read_file", path="a.txt", offset=5)
    assert result.for_llm == "[a.txt has 2 lines; offset 5 is past the end]"


async def test_an_empty_file_is_reported_empty(disk: Bench) -> None:
    (disk.root / "empty.txt").write_text("")
    assert (await disk("read_file", path="empty.txt")).for_llm == "[empty.txt is empty]"


async def test_the_default_page_is_50_kb_with_a_continuation_notice(disk: Bench) -> None:
    line = "x" * 99  # 100 bytes with its newline
    (disk.root / "big.txt").write_text((line + "\n") * 2000)  # 200 KB
    result = await disk("read_file", path="big.txt")
    body, notice = result.for_llm.rsplit("\n\n", 1)
    assert len(body.encode()) <= 50 * 1024
    shown = result.details["truncation"]["outputLines"]
    assert 400 < shown < 500
    assert (
        notice == f"[Showing lines 1-{shown} of 2000 of big.txt. Use offset={shown} to continue.]"
    )
    following = await disk("read_file", path="big.txt", offset=shown)
    assert following.for_llm.startswith(f"{shown + 1:>6}\t")


async def test_paging_through_a_file_returns_every_line_once(disk: Bench) -> None:
    lines = [f"{i:05d} " + "y" * 200 for i in range(1500)]
    (disk.root / "pages.txt").write_text("\n".join(lines) + "\n")
    seen, offset = [], 0
    while offset is not None:
        result = await disk("read_file", path="pages.txt", offset=offset)
        seen += [row.split("\t", 1)[1] for row in result.for_llm.split("\n\n[")[0].splitlines()]
        offset = result.details["next_offset"]
    assert seen == lines


async def test_pages_adapt_to_the_context_window(root: Path) -> None:
    (root / "big.txt").write_text(("z" * 99 + "\n") * 20_000)  # 2 MB
    small = Bench(root, make_env(config=WorkspaceConfig(context_window_tokens=8_000)))
    large = Bench(root, make_env(config=WorkspaceConfig(context_window_tokens=200_000)))
    huge = Bench(root, make_env(config=WorkspaceConfig(context_window_tokens=2_000_000)))
    sizes = []
    for bench in (small, large, huge):
        result = await bench("read_file", path="big.txt")
        sizes.append(len(result.for_llm.rsplit("\n\n", 1)[0].encode()))
    # 20 % of the window at 4 characters per token, between 50 KB and 512 KB
    assert 49 * 1024 < sizes[0] <= 50 * 1024
    assert 155_000 < sizes[1] <= 160_000
    assert 500 * 1024 < sizes[2] <= 512 * 1024


async def test_an_explicit_limit_is_capped_at_one_megabyte(disk: Bench) -> None:
    (disk.root / "big.txt").write_text(("w" * 999 + "\n") * 3000)  # 3 MB
    result = await disk("read_file", path="big.txt", limit=3000)
    assert len(result.for_llm.encode()) <= MAX_READ_BYTES + 200
    body = result.for_llm.rsplit("\n\n", 1)[0]
    assert len(body.encode()) > MAX_READ_BYTES - 2000
    assert "Use offset=" in result.for_llm and result.details["truncation"]["truncated"]


async def test_a_line_longer_than_the_page_is_cut_and_said_so(disk: Bench) -> None:
    (disk.root / "minified.js").write_text("m" * 300_000 + "\nnext\n")
    result = await disk("read_file", path="minified.js")
    assert result.details["truncation"]["firstLineExceedsLimit"] is True
    assert len(result.for_llm.encode()) < 51 * 1024
    assert "Line 1 is longer than one page and was cut. Use offset=1 to continue." in result.for_llm
    following = await disk("read_file", path="minified.js", offset=1)
    assert following.for_llm == "     2\tnext"


async def test_a_binary_file_is_not_shown(disk: Bench) -> None:
    (disk.root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(NotAFile, match="binary file"):
        await disk("read_file", path="image.png")


async def test_seed_003_errors(disk: Bench) -> None:
    (disk.root / "folder").mkdir()
    with pytest.raises(FileNotFound, match=r"^file not found: missing.txt"):
        await disk("read_file", path="missing.txt")
    with pytest.raises(PathTraversal, match=r"^path traversal detected"):
        await disk("read_file", path="../../etc/passwd")
    with pytest.raises(NotAFile, match="is a directory"):
        await disk("read_file", path="folder")
    with pytest.raises(PathDenied, match=r"^permission denied"):
        await disk("read_file", path=".clawlog/config")


async def test_a_symlink_loop_is_refused(disk: Bench) -> None:
    (disk.root / "loop1").symlink_to("loop2")
    (disk.root / "loop2").symlink_to("loop1")
    with pytest.raises(PathTraversal):
        await disk("read_file", path="loop1")


async def test_a_symlink_swapped_in_after_the_check_is_not_followed(disk: Bench) -> None:
    (disk.root / "dir").mkdir()
    (disk.root / "dir" / "f.txt").write_text("inside")
    resolved = disk.env.guard.resolve(disk.root, "dir/f.txt")
    (disk.root / "dir" / "f.txt").unlink()
    (disk.root / "dir").rmdir()
    (disk.root / "dir").symlink_to("/etc")  # the race: a component became a symlink
    with pytest.raises(PathTraversal, match="changed into a symlink"):
        fsio.read_bytes(resolved, 100)
