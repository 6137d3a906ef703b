"""Shell arithmetic is refused in templates: bash (``/bin/sh`` on some hosts) evaluates
a quoted ``"${1}"`` as code there, so ``a[$(cmd)]`` as an argument would run ``cmd``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clawlog.events import EventStore
from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry
from clawlog.tools.custom import CustomTool
from clawlog.tools.custom.template import TEMPLATE_SHELL, CommandTemplate
from clawlog.tools.driver import StoreSink, run_tool_call
from clawlog.tools.errors import InvalidCustomTool

from .support import definition


@pytest.mark.parametrize(
    "template",
    [
        "echo $(( {{.n}} + 1 ))",
        "x={{.n}}; echo $((x + 1))",
        "[[ {{.n}} -eq 1 ]] && echo one",
        "if [[ -n {{.n}} ]]; then echo set; fi",
        "(( {{.n}} > 2 )) && echo big",
        "let x={{.n}}",
        "declare -i x={{.n}}; echo $x",
        "typeset -i x={{.n}}",
        "echo $[{{.n}} + 1]",
    ],
)
def test_a_template_with_shell_arithmetic_is_refused(template: str) -> None:
    with pytest.raises(InvalidCustomTool, match="shell arithmetic"):
        CommandTemplate(template)


@pytest.mark.parametrize(
    "template",
    [
        "grep -E '[[:digit:]]+' {{.file}}",
        "echo let-it-be {{.word}}",
        "sed 's/(a)/b/' {{.file}}",
        "printf '%s\\n' {{.word}} | tr a b",
    ],
)
def test_look_alikes_are_not_arithmetic(template: str) -> None:
    CommandTemplate(template)


@pytest.mark.skipif(not os.path.exists("/bin/dash"), reason="dash is not installed")
async def test_a_template_runs_on_dash_where_it_is_installed(
    tmp_path: Path, store: EventStore
) -> None:
    # bash sets BASH_VERSION even as /bin/sh; dash sets nothing of the kind.
    tool = CustomTool(definition('printf "%s|%s" "${BASH_VERSION:-no bash}" {{.a}}', "a"))
    pipeline = ToolPipeline(ToolRegistry([tool]))
    sink = StoreSink(store, "session/main/s1")
    ctx = ToolContext(agent="main", session_key="s1", workspace=str(tmp_path / "ws"))
    result = await run_tool_call(pipeline, ctx, "t", {"a": "x"}, sink)
    assert result.for_llm.startswith("no bash|x\n"), result.for_llm
    assert TEMPLATE_SHELL == "/bin/dash"
