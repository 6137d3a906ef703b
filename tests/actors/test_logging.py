"""A library does not configure logging: clawlog's records reach the application's stdlib
handlers with their key-values, its level is the stdlib's, and the application's own structlog
configuration is left alone."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, call, reply

REPO = Path(__file__).resolve().parents[2]
LIBRARY_PACKAGES = ("actors", "events", "projections", "tools")


async def explode(ctx: object, args: dict[str, object]) -> str:
    raise ValueError("the disk is on fire")


EXPLODE = FunctionTool("explode", explode, description="Always fails")


class AppHandler(logging.Handler):
    """An application's own handler with a plain formatter: keeps each record and its line."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))

    def clawlog_warnings(self) -> list[logging.LogRecord]:
        return [
            r
            for r in self.records
            if r.name.startswith("clawlog.") and r.levelno >= logging.WARNING
        ]


@pytest.fixture
def app_handler() -> Iterator[AppHandler]:
    handler, root, clawlog = AppHandler(), logging.getLogger(), logging.getLogger("clawlog")
    level = clawlog.level
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        clawlog.setLevel(level)


@pytest.fixture
def app_structlog() -> Iterator[list[dict[str, Any]]]:
    """The application configures structlog itself, its processors ending in its own sink."""
    was_configured, saved = structlog.is_configured(), structlog.get_config()
    sink: list[dict[str, Any]] = []

    def keep(logger: object, method_name: str, event_dict: dict[str, Any]) -> str:
        sink.append(dict(event_dict))
        raise structlog.DropEvent

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            keep,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        cache_logger_on_first_use=False,
    )
    try:
        yield sink
    finally:
        structlog.reset_defaults()
        if was_configured:
            structlog.configure(**saved)


async def crash_a_tool(system: System, user: str) -> None:
    """One agent turn whose tool raises: the turn goes on and the model answers."""
    model = ScriptedModel([call("explode", call_id=f"call-{user}"), reply("it failed")])
    await system.register_agent(AgentConfig(key="main"), model, tools=[EXPLODE])
    assert await system.send("main", user, "go") == "it failed"


async def test_a_crashed_tool_reaches_the_applications_handler_with_its_fields(
    tmp_path: Path, app_handler: AppHandler
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await crash_a_tool(system, "u")
    [record] = app_handler.clawlog_warnings()
    fields = vars(record)
    assert record.name.startswith("clawlog.tools")
    assert (record.levelname, fields["event"]) == ("WARNING", "tool crashed")
    assert (fields["tool"], fields["call_id"]) == ("explode", "call-u")
    assert "the disk is on fire" in fields["error"]
    assert (fields["actor"], fields["stream"]) == ("session/main/u", "session/main/u")
    assert fields["correlation_id"]
    assert record.funcName == "run_plan"  # the call site in clawlog, not a structlog frame
    [line] = [line for line in app_handler.lines if " tool crashed " in line]
    assert line.startswith("WARNING clawlog.tools")
    for key_value in ("tool=explode", "call_id=call-u", "actor=session/main/u"):
        assert key_value in line.split()
    assert f"correlation_id={fields['correlation_id']}" in line


async def test_the_applications_structlog_configuration_is_untouched(
    tmp_path: Path, app_handler: AppHandler, app_structlog: list[dict[str, Any]]
) -> None:
    before = structlog.get_config()
    processors = list(before["processors"])
    app_log = structlog.get_logger("app")
    async with System.open(tmp_path / "log.db") as system:
        app_log.info("inside", user=42)
        await crash_a_tool(system, "u")
        assert structlog.get_config() == before
    app_log.info("after close", user=42)
    assert structlog.get_config() == before
    assert list(structlog.get_config()["processors"]) == processors
    assert [(e["event"], e["level"], e["user"]) for e in app_structlog] == [
        ("inside", "info", 42),
        ("after close", "info", 42),
    ]
    # clawlog's own warning went to the stdlib handlers, not through the app's pipeline.
    assert [r.getMessage().split()[:2] for r in app_handler.clawlog_warnings()] == [
        ["tool", "crashed"]
    ]


async def test_the_stdlib_level_of_clawlog_silences_or_lets_through_its_warnings(
    tmp_path: Path, app_handler: AppHandler
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        logging.getLogger("clawlog").setLevel(logging.ERROR)
        await crash_a_tool(system, "quiet")
        assert app_handler.clawlog_warnings() == []
        logging.getLogger("clawlog").setLevel(logging.WARNING)
        await crash_a_tool(system, "loud")
    assert [vars(r)["call_id"] for r in app_handler.clawlog_warnings()] == ["call-loud"]


def test_an_application_without_logging_set_up_still_sees_warnings_on_stderr(
    tmp_path: Path,
) -> None:
    """No handler (not even a NullHandler) on ``clawlog``: the stdlib's last resort prints it."""
    program = textwrap.dedent(
        f"""
        import asyncio
        from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, call, reply

        async def explode(ctx, args):
            raise ValueError("the disk is on fire")

        async def main():
            model = ScriptedModel([call("explode", call_id="c1"), reply("it failed")])
            async with System.open({str(tmp_path / "log.db")!r}) as system:
                tool = FunctionTool("explode", explode)
                await system.register_agent(AgentConfig(key="main"), model, tools=[tool])
                print(await system.send("main", "u", "go"))

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (0, "it failed\n"), done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("tool crashed ")]
    assert "tool=explode" in line.split() and "actor=session/main/u" in line.split()


def test_no_library_module_configures_logging() -> None:
    configuring = re.compile(
        r"structlog\.configure(_once)?\(|logging\.basicConfig\(|\.addHandler\("
    )
    sources = [p for package in LIBRARY_PACKAGES for p in (REPO / package).rglob("*.py")]
    assert len(sources) > 50
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if configuring.search(line)
    ]
    assert offenders == []
