"""``clawlog demo``: a scripted release team on an SQLite log, then what the log says.

A lead agent with a team of two posts a release plan, runs a subagent, tries a dangerous
exec that the tool policy refuses (a deny pattern), and hands a billing question to
another agent. Running it
again continues the same log: the sessions' history grows and the board gains tasks.
"""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ScriptedModel
from clawlog.actors.system import System
from clawlog.events import EventStoreError
from clawlog.events.streams import session_stream
from clawlog.tools.exec import ExecTool

from . import readers
from .demo_script import billing_brain, lead_brain, teammate_brain
from .errors import CliError
from .logfile import describe, open_log
from .render import console

__all__ = ["run_demo"]

USER = "demo-user"


async def run_demo(path: str) -> None:
    system = await _open(path)
    out = console()
    async with system:
        await _cast(system, path)
        run = await _run_number(system)
        chat = f"run-{run}"
        out.print(f"[bold]clawlog demo[/bold]: run {run} on {escape(path)}")
        out.print("user → lead: Plan the v1.0 release")
        answer = await system.send(
            "lead", USER, "Plan the v1.0 release", channel="cli", chat_id=chat, user=USER
        )
        out.print(f"lead → user: {answer}", markup=False)
        await _wait_for_teammates(system, run)
        for text in ("I have a billing question", "Was invoice 42 paid?"):
            agent = await system.routed_agent("cli", chat) or "lead"
            out.print(f"user → ({agent}): {text}", markup=False)
            answer = await system.send("lead", USER, text, channel="cli", chat_id=chat, user=USER)
            out.print(f"  ← {answer}", markup=False)
    async with open_log(path) as store:
        # Tables even through a pipe: the demo is read by people.
        await readers.board(store, "release", form="table")
        await readers.routes(store, form="table")
        await readers.history(store, "lead", USER, form="table")
        await readers.audit_refusals(store, form="table")


async def _open(path: str) -> System:
    """The demo's System on the SQLite file ``path`` (made if missing), or a CliError."""
    if path.startswith(("postgresql://", "postgres://")):
        raise CliError("the demo writes an SQLite file: give it a path, not a URL")
    location = Path(path)
    if location.is_dir():
        raise CliError(f"{location} is a directory, not a clawlog log file")
    if not location.parent.is_dir():
        raise CliError(f"{location.parent}: no such directory")
    try:
        return await System.open(location)
    except (EventStoreError, OSError) as exc:  # another writer, a foreign file, no access
        raise CliError(describe(str(location), exc)) from exc


async def _cast(system: System, path: str) -> None:
    workspace = Path(path).with_suffix(".workspace")
    lead = AgentConfig(
        key="lead",
        name="Release lead",
        description="plans releases",
        workspace=str(workspace / "lead"),
        instructions="You lead the release team.",
    )
    await system.register_agent(
        lead, ScriptedModel(lead_brain, name="demo-lead"), tools=[ExecTool()]
    )
    for key, role in (("dev", "developer"), ("qa", "tester")):
        await system.register_agent(
            AgentConfig(key=key, description=role),
            ScriptedModel(teammate_brain, name=f"demo-{key}"),
        )
    await system.register_agent(
        AgentConfig(key="billing", description="answers billing"),
        ScriptedModel(billing_brain, name="demo-billing"),
    )
    await system.create_team(
        "release",
        name="Release crew",
        lead="lead",
        members=[("dev", "developer"), ("qa", "tester")],
    )


async def _run_number(system: System) -> int:
    runs = 0
    for recorded in await system.store.read_stream(session_stream("lead", USER)):
        if recorded.type == "session.turn_started" and recorded.event.text.startswith("Plan"):  # type: ignore[union-attr]
            runs += 1
    return runs + 1


async def _wait_for_teammates(system: System, run: int) -> None:
    """Until every task of this run is completed and reported to the lead."""
    async with system.store.subscribe(1, stream_prefix="team/release") as events:
        completed = 0
        async for recorded in events:
            if recorded.type == "team.task_completed":
                completed += 1
                if completed >= 3 * run:
                    return
