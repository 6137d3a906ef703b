"""Every argument reaches the command as exactly one literal word, whatever it holds: run
for real (a program printing its argv as JSON), through the tool pipeline and on its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clawlog.events import EventStore
from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry
from clawlog.tools.custom import CustomTool
from clawlog.tools.driver import StoreSink, run_tool_call
from clawlog.tools.errors import CommandDenied, InvalidParameters
from clawlog.tools.exec.analysis import analyze

from .support import definition, printed_argv

ARGUMENT_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))

#: Every shell metacharacter, alone and in the shapes an injection takes.
NASTY = [
    "",
    " ",
    "two words",
    "'",
    '"',
    "\\",
    "a;b",
    "a && b",
    "a || b",
    "a | b",
    "$(id)",
    "`id`",
    "${IFS}",
    "$HOME",
    "$1",
    "$@",
    "*",
    "?",
    "[a-z]*",
    "~",
    "~root",
    "{a,b}",
    "-rf",
    "--help",
    "-",
    "line one\nline two",
    "tab\there",
    "\r",
    "> /tmp/x",
    "< /etc/hostname",
    "2>&1",
    "#comment",
    "!",
    "a=b",
    "'; echo injected; '",
    '"; echo injected; "',
    "\\'\\\"",
    "\u00e9\u4e2d\U0001f600",
]


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(agent="main", session_key="s1", workspace=str(tmp_path / "ws"))


@pytest.mark.parametrize("value", NASTY, ids=repr)
async def test_a_metacharacter_argument_arrives_as_one_literal_word(
    value: str, argv_program: str, tmp_path: Path, store: EventStore
) -> None:
    tool = CustomTool(
        definition(f'{argv_program} {{{{.a}}}} pre{{{{.a}}}}post "q {{{{.a}}}}"', "a")
    )
    pipeline = ToolPipeline(ToolRegistry([tool]))
    sink = StoreSink(store, "session/main/s1")
    result = await run_tool_call(pipeline, context(tmp_path), "t", {"a": value}, sink)
    assert printed_argv(result) == [value, f"pre{value}post", f"q {value}"]
    types = [e.type for e in await store.read_stream("session/main/s1")]
    assert types == ["tool.call_requested", "tool.call_started", "tool.call_completed"]


async def test_arguments_of_every_json_type_become_their_json_words(
    argv_program: str, tmp_path: Path
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "f": {"type": "number"},
            "b": {"type": "boolean"},
            "l": {"type": "array"},
            "o": {"type": "object"},
            "missing": {"type": "string"},
        },
    }
    command = f"{argv_program} {{{{.s}}}} {{{{.i}}}} {{{{.f}}}} {{{{.b}}}} {{{{.l}}}} {{{{.o}}}} {{{{.missing}}}} end"
    tool = CustomTool(definition(command, parameters=schema))
    args = {"s": "x", "i": 7, "f": 1.5, "b": False, "l": [1, "a b"], "o": {"k": None}}
    result = await tool.execute(context(tmp_path), args)
    assert printed_argv(result) == ["x", "7", "1.5", "false", '[1,"a b"]', '{"k":null}', "end"]


@settings(
    deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=ARGUMENT_TEXT, b=ARGUMENT_TEXT)
async def test_any_text_arrives_literally_or_is_refused_by_the_exec_analysis(
    a: str, b: str, argv_program: str, tmp_path: Path
) -> None:
    tool = CustomTool(definition(f"{argv_program} {{{{.a}}}} --b={{{{.b}}}}", "a", "b"))
    args = {"a": a, "b": b}
    if analyze(tool.rendered_command(args)).action == "deny":
        with pytest.raises(CommandDenied):
            await tool.execute(context(tmp_path), args)
        return
    result = await tool.execute(context(tmp_path), args)
    assert printed_argv(result) == [a, f"--b={b}"]


async def test_a_nul_character_is_refused_before_anything_runs(
    argv_program: str, tmp_path: Path, store: EventStore
) -> None:
    marker = tmp_path / "ran"
    tool = CustomTool(definition(f"touch {marker}; {argv_program} {{{{.a}}}}", "a"))
    with pytest.raises(InvalidParameters, match="NUL character"):
        await tool.execute(context(tmp_path), {"a": "a\x00b"})
    pipeline = ToolPipeline(ToolRegistry([tool]))
    sink = StoreSink(store, "session/main/s1")
    result = await run_tool_call(pipeline, context(tmp_path), "t", {"a": "a\x00b"}, sink)
    assert result.is_error and "null byte" in result.for_llm
    refused = (await store.read_stream("session/main/s1"))[-1]
    assert refused.type == "tool.call_refused"
    assert not marker.exists()
