"""Path attack corpus: every case has the verdict the guard must give (seed 001 §3
resolvePath, seed 002 §3 assertSandboxPath, seed 004 §4.5, seed 003 wordings)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clawlog.tools.errors import PathDenied, PathTraversal
from clawlog.tools.workspace.paths import PathGuard, ResolvedPath

OK, TRAVERSAL, DENIED = "ok", "traversal", "denied"

# (path, verdict, the workspace-relative path it resolves to when ok). "{root}" is the
# workspace's absolute path, "{real}" its real path.
CORPUS: list[tuple[str, str, str | None]] = [
    # -- ordinary paths ----------------------------------------------------------------
    ("notes.txt", OK, "notes.txt"),
    ("./notes.txt", OK, "notes.txt"),
    ("sub/inner.txt", OK, "sub/inner.txt"),
    ("sub//inner.txt", OK, "sub/inner.txt"),
    ("sub/", OK, "sub"),
    (".", OK, ""),
    ("sub/../notes.txt", OK, "notes.txt"),
    ("sub/./deeper/../inner.txt", OK, "sub/inner.txt"),
    ("new/dir/file.txt", OK, "new/dir/file.txt"),
    ("/workspace/notes.txt", OK, "notes.txt"),
    ("/workspace", OK, ""),
    ("{root}/notes.txt", OK, "notes.txt"),
    ("{root}", OK, ""),
    ("{real}/sub/inner.txt", OK, "sub/inner.txt"),
    ("link_in/inner.txt", OK, "link_in/inner.txt"),
    ("café.txt", OK, "café.txt"),
    ("日本語/ファイル.md", OK, "日本語/ファイル.md"),
    ("emoji_😀.txt", OK, "emoji_😀.txt"),
    ("name with spaces.txt", OK, "name with spaces.txt"),
    ("-dash-start.txt", OK, "-dash-start.txt"),
    ("..hidden", OK, "..hidden"),
    ("a..b.txt", OK, "a..b.txt"),
    ("...", OK, "..."),
    ("%41bc.txt", OK, "%41bc.txt"),
    (".clawlogx/file", OK, ".clawlogx/file"),
    ("secretsfile.txt", OK, "secretsfile.txt"),
    # -- traversal: dot-dot and absolute paths ------------------------------------------
    ("../outside/x", TRAVERSAL, None),
    ("../../etc/passwd", TRAVERSAL, None),
    ("./../outside", TRAVERSAL, None),
    ("sub/../../outside/x", TRAVERSAL, None),
    ("sub/deeper/../../../outside", TRAVERSAL, None),
    ("/etc/passwd", TRAVERSAL, None),
    ("/tmp", TRAVERSAL, None),
    ("/dev/null", TRAVERSAL, None),
    ("/proc/self/root/etc/passwd", TRAVERSAL, None),
    ("/", TRAVERSAL, None),
    ("{root}/../outside/x", TRAVERSAL, None),
    ("{root}_evil/x", TRAVERSAL, None),
    ("/workspace/../etc/passwd", TRAVERSAL, None),
    ("/workspace_evil/x", TRAVERSAL, None),
    ("/../../etc/passwd", TRAVERSAL, None),
    # -- traversal: symlinks at any component -------------------------------------------
    ("link_out", TRAVERSAL, None),
    ("link_out/passwd", TRAVERSAL, None),
    ("file_link_out", TRAVERSAL, None),
    ("sub/link_up/outside/x", TRAVERSAL, None),
    ("sub/link_up", TRAVERSAL, None),
    ("link_in/link_up/outside/x", TRAVERSAL, None),
    ("chain/hop/x", TRAVERSAL, None),
    # -- traversal: bytes and encodings -------------------------------------------------
    ("notes.txt\x00.png", TRAVERSAL, None),
    ("\x00", TRAVERSAL, None),
    ("notes.txt\n", TRAVERSAL, None),
    ("sub\tinner", TRAVERSAL, None),
    ("%2e%2e/%2e%2e/etc/passwd", TRAVERSAL, None),
    ("..%2fetc%2fpasswd", TRAVERSAL, None),
    ("%2E%2E%5Cx", TRAVERSAL, None),
    ("%252e%252e/etc", TRAVERSAL, None),
    ("notes.txt%00.png", TRAVERSAL, None),
    # -- traversal: Windows forms -------------------------------------------------------
    ("C:\\Windows\\system32", TRAVERSAL, None),
    ("C:/Windows/system32", TRAVERSAL, None),
    ("c:", TRAVERSAL, None),
    ("D:secret.txt", TRAVERSAL, None),
    ("\\\\server\\share\\x", TRAVERSAL, None),
    ("..\\..\\etc\\passwd", TRAVERSAL, None),
    ("sub\\inner.txt", TRAVERSAL, None),
    # -- traversal: home directories ----------------------------------------------------
    ("~/.ssh/id_rsa", TRAVERSAL, None),
    ("~root/x", TRAVERSAL, None),
    ("~", TRAVERSAL, None),
    # -- traversal: unicode normalization tricks ----------------------------------------
    ("\uff0e\uff0e/etc/passwd", TRAVERSAL, None),  # fullwidth full stops
    ("..\uff0fetc/passwd", TRAVERSAL, None),  # fullwidth solidus
    ("\u2025/etc/passwd", TRAVERSAL, None),  # two dot leader -> ".."
    ("\ufe52\ufe52/x", TRAVERSAL, None),  # small full stops
    ("\u2024\u2024/x", TRAVERSAL, None),  # one dot leaders
    ("..\uff3cetc", TRAVERSAL, None),  # fullwidth reverse solidus
    ("..\u2215etc\u2215passwd", TRAVERSAL, None),  # division slash
    ("..\u2044etc", TRAVERSAL, None),  # fraction slash
    ("\uff5e/.ssh", TRAVERSAL, None),  # fullwidth tilde
    ("sub/\u200b../x", TRAVERSAL, None),  # zero-width space
    ("\u202enotes.txt", TRAVERSAL, None),  # right-to-left override
    ("notes\ufeff.txt", TRAVERSAL, None),  # byte order mark
    ("sub/\u2066../x", TRAVERSAL, None),  # bidi isolate
    # -- denied prefixes (seed 001 PathDenyable) ----------------------------------------
    (".clawlog", DENIED, None),
    (".clawlog/secret", DENIED, None),
    ("./.clawlog/secret", DENIED, None),
    ("sub/../.clawlog/secret", DENIED, None),
    (".clawlog/../.clawlog/x", DENIED, None),
    ("/workspace/.clawlog/secret", DENIED, None),
    ("{root}/.clawlog/secret", DENIED, None),
    ("link_to_denied/secret", DENIED, None),
    ("secrets", DENIED, None),
    ("secrets/key.txt", DENIED, None),
    ("cafe\u0301/menu.txt", DENIED, None),  # NFD spelling of the denied "café"
]


@pytest.fixture
def layout(root: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("outside")
    (root / "notes.txt").write_text("notes")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "inner.txt").write_text("inner")
    (root / ".clawlog").mkdir()
    (root / ".clawlog" / "secret").write_text("s")
    (root / "link_out").symlink_to("/etc")
    (root / "file_link_out").symlink_to("/etc/hostname")
    (root / "link_in").symlink_to("sub")
    (root / "sub" / "link_up").symlink_to("../..")
    (root / "link_to_denied").symlink_to(".clawlog")
    (root / "chain").symlink_to("sub")
    (root / "sub" / "hop").symlink_to(str(outside))
    return root


def _guard() -> PathGuard:
    guard = PathGuard([".clawlog"])
    guard.deny_paths("secrets", "café")
    return guard


@pytest.mark.parametrize(("raw", "verdict", "rel"), CORPUS, ids=[repr(c[0])[:40] for c in CORPUS])
def test_path_corpus_verdicts(layout: Path, raw: str, verdict: str, rel: str | None) -> None:
    path = raw.replace("{root}", str(layout)).replace("{real}", os.path.realpath(layout))
    guard = _guard()
    if verdict == OK:
        resolved = guard.resolve(layout, path)
        assert isinstance(resolved, ResolvedPath)
        assert resolved.rel == rel
        assert resolved.real.startswith(os.path.realpath(layout))
    elif verdict == TRAVERSAL:
        with pytest.raises(PathTraversal, match=r"^path traversal detected"):
            guard.resolve(layout, path)
    else:
        with pytest.raises(PathDenied, match=r"^permission denied"):
            guard.resolve(layout, path)


def test_the_corpus_is_large_and_covers_every_verdict() -> None:
    assert len(CORPUS) >= 60
    counts = {
        v: sum(1 for _, verdict, _ in CORPUS if verdict == v) for v in (OK, TRAVERSAL, DENIED)
    }
    assert counts[TRAVERSAL] >= 40 and counts[OK] >= 15 and counts[DENIED] >= 8


def test_a_non_string_path_is_refused(layout: Path) -> None:
    with pytest.raises(PathTraversal):
        _guard().resolve(layout, ["notes.txt"])


def test_a_deny_prefix_must_lie_inside_the_workspace() -> None:
    with pytest.raises(ValueError, match="inside the workspace"):
        PathGuard().deny_paths("../x")
    with pytest.raises(ValueError):
        PathGuard().deny_paths("/")
