"""The README's Observability example runs as written: the code block is taken from
README.md and run in a fresh interpreter (the SDK configured as the example configures it,
a log file of its own), so the README cannot drift from the API."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### Observability"


def observability_example() -> str:
    """The first Python block of the README's Observability section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n### ", start + len(SECTION))
    section = text[start : end if end != -1 else len(text)]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the Observability section has no python block"
    return found.group(1)


def printed_spans(stdout: str) -> list[dict[str, object]]:
    """The JSON objects ConsoleSpanExporter printed (each a span with a ``kind``)."""
    decoder = json.JSONDecoder()
    spans: list[dict[str, object]] = []
    at = stdout.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(stdout, at)
        except json.JSONDecodeError:
            at = stdout.find("{", at + 1)
            continue
        if isinstance(value, dict) and "kind" in value and "context" in value:
            spans.append(value)
        at = stdout.find("{", end)
    return spans


def test_the_readme_observability_example_runs_and_prints_the_turns_spans(
    tmp_path: Path,
) -> None:
    script = tmp_path / "example.py"
    script.write_text(observability_example(), encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,  # its app.db lands here
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("You have some sessions.\n")
    spans = printed_spans(done.stdout)
    assert sorted(str(s["name"]) for s in spans) == [
        "chat scripted",
        "chat scripted",
        "execute_tool sessions_list",
        "invoke_agent helper",
    ]
    [turn] = [s for s in spans if s["name"] == "invoke_agent helper"]
    assert turn["parent_id"] is None
    children = [s for s in spans if s is not turn]
    assert all(s["parent_id"] == turn["context"]["span_id"] for s in children)  # type: ignore[index]
    assert '"name": "clawlog.turns"' in done.stdout  # and the metrics after them
    assert (tmp_path / "app.db").exists()
