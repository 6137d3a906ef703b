"""The workspace toolset in the tool system: names and aliases in the registry, calls
through the pipeline leave the seed's wordings in the log, public APIs."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from clawlog.events import default_registry, open_store
from clawlog.events.domain.tool import ToolCallFailed
from clawlog.events.domain.workspace import EVENTS
from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry, builtin_tools
from clawlog.tools.driver import StoreSink, run_tool_call
from clawlog.tools.workspace import FILE_TOOLS, workspace_tools
from clawlog.tools.workspace.toolset import ALIASES

from .support import make_env


def test_every_goclaw_name_and_alias_is_registered(recorder: object) -> None:
    registry = ToolRegistry([*builtin_tools(), *workspace_tools(make_env(recorder))])  # type: ignore[arg-type]
    names = set(registry.names())
    assert set(FILE_TOOLS) | set(ALIASES) | {"memory_search", "memory_get"} <= names
    assert {"read", "write", "edit", "ls", "grep", "find", "list_dir"} <= names
    for alias, canonical in ALIASES.items():
        tool, target = registry.get(alias), registry.get(canonical)
        assert type(tool) is type(target) and tool.parameters == target.parameters  # type: ignore[union-attr]
        assert tool.group == "fs" and tool.domain == "container"  # type: ignore[union-attr]


async def test_calls_through_the_pipeline_are_recorded_with_the_seed_wording(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    pipeline = ToolPipeline(ToolRegistry(workspace_tools(make_env())))
    ctx = ToolContext(agent="main", session_key="s", workspace=str(root))
    async with await open_store(tmp_path / "log.db") as store:
        sink = StoreSink(store, "session/main/s")
        ok = await run_tool_call(pipeline, ctx, "read", {"path": "notes.txt"}, sink, call_id="c1")
        bad = await run_tool_call(
            pipeline, ctx, "read_file", {"path": "../../etc/passwd"}, sink, call_id="c2"
        )
        events = [r.event for r in await store.read_stream("session/main/s")]
    assert ok.for_llm == "     1\thello" and not ok.is_error
    assert bad.is_error and bad.error_kind == "not_authorized"
    assert "path traversal detected" in bad.for_llm
    failed = events[-1]
    assert isinstance(failed, ToolCallFailed) and failed.error_kind == "not_authorized"
    assert "path traversal detected" in failed.message


def test_the_workspace_events_are_registered() -> None:
    tags = default_registry().tags()
    assert {cls.__struct_config__.tag for cls in EVENTS} <= tags


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize(
    "package", ["clawlog.tools.workspace", "clawlog.tools.exec", "clawlog.tools.sandbox"]
)
def test_all_is_sorted_and_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names, key=_isort_key)
    assert [n for n in names if not hasattr(module, n)] == []


@pytest.mark.parametrize("package", ["workspace", "exec", "sandbox"])
def test_modules_stay_small(package: str) -> None:
    root = Path(importlib.import_module("clawlog.tools").__file__).parent / package  # type: ignore[arg-type]
    sizes = {p.name: len(p.read_text().splitlines()) for p in root.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 400} == {}
