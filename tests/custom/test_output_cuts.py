"""An env value is never shown in part where the output is cut: the model can make a
command's output any length, so it could put the cut inside a value and read its start
(the head of the clip) or its end (the tail)."""

from __future__ import annotations

from pathlib import Path

from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry
from clawlog.tools.custom import CustomTool

from .support import definition

SECRET = "S3cr3tValue-0123456789abcdefXYZ"
#: N filler characters, the value, then enough output to be clipped (cap 1,000 here).
COMMAND = (
    "head -c {{.n}} /dev/zero | tr '\\0' x; printf '%s' \"$TOKEN\"; "
    "head -c 5000 /dev/zero | tr '\\0' y"
)
CAP = 1_000


async def test_a_value_cut_by_the_clip_is_not_shown_in_part(tmp_path: Path) -> None:
    tool = CustomTool(definition(COMMAND, "n"), env={"TOKEN": SECRET}, max_output_chars=CAP)
    pipeline = ToolPipeline(ToolRegistry([tool]))
    tool.share_secrets(pipeline.scrubber)
    ctx = ToolContext(agent="main", session_key="s1", workspace=str(tmp_path / "ws"))
    # clip keeps the first CAP - CAP // 5 - len(notice) characters: put the cut at every
    # position inside the value.
    shown: list[str] = []
    for n in range(CAP - CAP // 5 - 60 - len(SECRET), CAP - CAP // 5 - 30):
        result = await tool.execute(ctx, {"n": str(n)})
        head = result.for_llm.partition("\n[…")[0].lstrip("x")
        assert "[…" in result.for_llm, result.for_llm[-200:]
        shown.append(head)
    leaked = [head for head in shown if head and SECRET.startswith(head) and head != SECRET]
    assert not leaked, f"parts of the value were shown: {leaked}"
    assert any(head.startswith("[REDA") for head in shown)  # the cut did fall in the value
