"""Re-run a recorded session: the agent loop again, served from the log, compared step by
step with the recording ("what would have happened if" with a changed config or model).

    report = await rerun(store, "lead", "demo-user", config=deny_tools("exec"))
    report.matched, report.divergence   # the first step that went another way, or None

A throwaway System on ``memory:`` runs the real Session actor and tool pipeline with the
recorded agent config (or the caller's), a :class:`ReplayModel` (or the caller's model)
and a :class:`ReplayGateway`: no tool executes and the source log is only read. It uses
the application's model catalog when given (``model_catalog=``, as ``System.open``'s): a
recorded config with a cost budget needs its model's price, and the session's context
window and estimated costs come from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from clawlog.events import LogReader, RecordedEvent
from clawlog.events.domain.session import SessionCleared
from clawlog.events.folds.custom_tool import CustomToolDefinitions
from clawlog.events.logging import get_logger
from clawlog.events.streams import agent_stream, custom_tools_stream, session_stream
from clawlog.tools import ApprovalConfig, PolicyConfig
from clawlog.tools.custom import CustomTool
from clawlog.tools.exec import ExecTool

from ..agents.compaction import COMPACTOR
from ..agents.config import AgentConfig
from ..agents.messages import SendMessage
from ..agents.prompt import PromptBuilder
from ..errors import (
    CompactionFailedError,
    InvalidArgument,
    NothingRecorded,
    ReplayError,
    TurnCancelledError,
    TurnFailedError,
)
from ..providers.base import Model
from ..providers.catalog import ModelCatalog
from ..system import System
from .compactions import RecordedCompactions, between_turns
from .compare import Divergence, compare_turn
from .prompt import recorded_prompt
from .recording import (
    RecordedTurn,
    config_before,
    parse_turns,
    read_session,
)
from .serving import ContextNote, RecordedTool, ReplayGateway, ReplayModel

__all__ = ["KNOWN_TOOLS", "ConfigChange", "RerunReport", "deny_tools", "rerun"]

#: Events read per page when reading a replayed turn back.
_PAGE = 1000

_log = get_logger(__name__)

#: A changed config, or a change applied to the recorded one.
ConfigChange = AgentConfig | Callable[[AgentConfig], AgentConfig]


class RerunReport(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of a re-run: it matched the recording, or where it first diverged."""

    agent: str
    session_key: str
    stream: str
    matched: bool
    divergence: Divergence | None = None
    #: Turns replayed, and the model replies and tool calls compared equal before the
    #: divergence (all of them when the run matched).
    turns: int = 0
    model_replies: int = 0
    tool_calls: int = 0
    #: Where the re-run's model requests differed from the recorded ones (context only:
    #: the served replies cannot show what a model would have said to them).
    context: list[ContextNote] = msgspec.field(default_factory=list)
    #: True when the config differed from the recorded one; the model served, and why.
    config_changed: bool = False
    model: str = "recorded"
    #: Recorded compactions (``session.compacted``) served again: a re-run compacts its
    #: conversation where the recording did, with the recorded summaries.
    compactions: int = 0


def deny_tools(*names: str) -> Callable[[AgentConfig], AgentConfig]:
    """A config change for :func:`rerun`: the recorded config with ``names`` denied."""

    def change(config: AgentConfig) -> AgentConfig:
        deny = [*config.tools_deny, *(n for n in names if n not in config.tools_deny)]
        return msgspec.structs.replace(config, tools_deny=deny)

    return change


async def rerun(
    source: LogReader,
    agent: str,
    session_key: str,
    *,
    first_turn: int = 1,
    last_turn: int | None = None,
    config: ConfigChange | None = None,
    model: Model | None = None,
    tools: Sequence[Any] = (),
    policy: PolicyConfig | None = None,
    approvals: ApprovalConfig | None = None,
    prompt: PromptBuilder | None = None,
    turn_timeout: float = 120.0,
    model_catalog: ModelCatalog | None = None,
) -> RerunReport:
    """Re-run turns ``first_turn``..``last_turn`` (1-based, inclusive) of a session.

    ``tools`` are the application's tools beyond the built-ins (for their names, schemas
    and approval rules; never executed); a tool the recording offered and nobody passed
    is built from :data:`KNOWN_TOOLS` or gets a stand-in taking any arguments.
    ``policy`` / ``approvals`` are the System-wide tool policy and approval config to
    decide with. ``model_catalog`` is the application's (``System.open(model_catalog=)``;
    default: ``ModelCatalog.default()``): pass it when the recorded config has a cost
    budget on a model only it prices.
    """
    stream = session_stream(agent, session_key)
    events = await read_session(source, stream)
    turns = parse_turns(events)
    chosen = turns[first_turn - 1 : last_turn]
    if first_turn < 1 or not chosen:
        raise NothingRecorded(f"{stream!r} has {len(turns)} turns; none in the range asked")
    for earlier in turns[: first_turn - 1]:
        if earlier.end is None:
            raise ReplayError(f"turn {earlier.turn_id} never ended: start the re-run at it")
    recorded_config = await config_before(source, agent, chosen[0].position)
    chosen_config = _changed(recorded_config, config)
    first_request = next((i.request for t in chosen for i in t.iterations), None)
    replay_model = ReplayModel(
        chosen,
        name=first_request.model if first_request else "replay",
        provider=first_request.provider if first_request else "replay",
    )
    prefix = [e for e in events if e.position < chosen[0].position]
    prompt = prompt or await recorded_prompt(source, agent, chosen[0].position)
    named = {getattr(tool, "name", None) for tool in tools}
    custom = await custom_tools_before(source, agent, chosen[0].position)
    tools = [*tools, *(tool for tool in custom if tool.name not in named)]
    async with System.open("memory:", approvals=approvals, model_catalog=model_catalog) as system:
        if policy is not None:
            system.runtime.services["tool_policy"] = policy
        if prefix:
            await system.store.append(stream, [e.event for e in prefix], 0)
        compactions = RecordedCompactions([e for e in events if e.position >= chosen[0].position])
        system.runtime.services[COMPACTOR] = compactions
        gateway = _gateway(system, chosen_config, tools, chosen)
        try:
            await system.register_agent(
                chosen_config, model or replay_model, gateway=gateway, prompt=prompt
            )
        except InvalidArgument as exc:
            if exc.parameter != "budgets":
                raise
            raise ReplayError(
                f"the re-run cannot register agent {agent!r}: {exc.problem}. Pass the "
                "application's catalog: rerun(..., model_catalog=...), or clawlog replay "
                "--rerun ... --model-catalog FILE"
            ) from None
        report = await _replay(system, stream, chosen, replay_model, turn_timeout, first_turn)
    report = msgspec.structs.replace(
        report,
        config_changed=chosen_config != recorded_config,
        model="recorded" if model is None else model.name,
        compactions=compactions.served,
    )
    _log.info(
        "re-run finished",
        stream=stream,
        matched=report.matched,
        divergence=report.divergence.kind if report.divergence else None,
        turns=report.turns,
    )
    return report


def _exec_tool(name: str) -> ExecTool:
    return ExecTool(name=name)


#: Tools of the tools package a recording may have offered without the caller passing
#: them: built for their deny patterns and approval rules, never executed.
KNOWN_TOOLS: dict[str, Callable[[str], Any]] = {"exec": _exec_tool}


def _changed(recorded: AgentConfig, change: ConfigChange | None) -> AgentConfig:
    if change is None:
        return recorded
    return change if isinstance(change, AgentConfig) else change(recorded)


async def custom_tools_before(source: LogReader, agent: str, position: int) -> list[CustomTool]:
    """The custom tools ``agent`` had (global and its own, enabled) before ``position``, as
    they were defined then: a re-run decides their calls with the same deny table and
    approval rules, and never runs them (the results come from the log)."""
    definitions = CustomToolDefinitions()
    version, reached = 1, False
    while not reached and (page := await source.read_stream(custom_tools_stream(), version, 500)):
        for recorded in page:
            if recorded.position >= position:
                reached = True
                break
            definitions.apply(recorded)
        version = page[-1].version + 1
    return [
        CustomTool(entry.definition, unavailable="a re-run never runs tools")
        for entry in definitions.visible_to(agent)
        if entry.enabled
    ]


def _gateway(
    system: System, config: AgentConfig, tools: Sequence[Any], turns: Sequence[RecordedTurn]
) -> ReplayGateway:
    inner = system.default_gateway(config, tools)
    registry = getattr(getattr(inner, "pipeline", None), "registry", None)
    offered = {name for t in turns for i in t.iterations for name in i.request.tools}
    missing = sorted(n for n in offered if registry is not None and registry.get(n) is None)
    if missing:
        asked = {c.name for t in turns for i in t.iterations for c in i.calls if c.asked}
        standing_in = [
            KNOWN_TOOLS[n](n) if n in KNOWN_TOOLS else RecordedTool(n, requires_approval=n in asked)
            for n in missing
        ]
        inner = system.default_gateway(config, [*tools, *standing_in])
    return ReplayGateway(inner, turns)


async def _replay(
    system: System,
    stream: str,
    turns: Sequence[RecordedTurn],
    replay_model: ReplayModel,
    turn_timeout: float,
    first_turn: int,
) -> RerunReport:
    _, agent, session_key = stream.split("/", 2)
    supervisor = system.actor(agent_stream(agent))
    assert supervisor is not None
    compared: list[RecordedTurn] = []
    divergence: Divergence | None = None
    for number, recorded in enumerate(turns, start=first_turn):
        if number > first_turn:  # the first one's are in the copied prefix
            await _redo_between(system, agent, session_key, recorded.before)
        replay_model.start_turn(recorded.turn_id)
        started = recorded.started
        message = SendMessage(
            session_key=session_key,
            text=started.text,
            sender=started.sender,
            channel=started.channel,
            chat_id=started.chat_id,
            user=started.user,
            turn_id=started.turn_id,
            skip_quality_gates=started.skip_quality_gates,
            parts=list(started.parts),
        )
        # The turn's events follow what the stream holds now: only they are read back
        # (reading the whole stream after each turn made a re-run quadratic).
        first_version = await system.store.stream_version(stream) + 1
        with contextlib.suppress(TurnFailedError, TurnCancelledError):
            await supervisor.ask(message, turn_timeout)  # a failed turn is compared too
        now = _turn(await _read_from(system.store, stream, first_version), recorded.turn_id)
        compared.append(recorded)
        divergence = compare_turn(number, recorded, now)
        if divergence is not None:
            break
    before = divergence.position if divergence is not None else 2**62
    iterations = [i for t in compared for i in t.iterations if i.reply_position < before]
    return RerunReport(
        agent=agent,
        session_key=session_key,
        stream=stream,
        matched=divergence is None,
        divergence=divergence,
        turns=len(compared),
        model_replies=sum(1 for i in iterations if i.reply is not None),
        tool_calls=sum(
            1 for i in iterations for c in i.calls if c.events and c.events[-1][0] < before
        ),
        context=list(replay_model.notes),
    )


async def _redo_between(
    system: System, agent: str, session_key: str, before: Sequence[Any]
) -> None:
    """Clear and compact the session again where the recording did between two turns
    (the compactions are served from the log: see :mod:`.compactions`)."""
    for step in between_turns(before):
        if isinstance(step, SessionCleared):
            await system.clear(agent, session_key, by=step.by)
        else:
            with contextlib.suppress(CompactionFailedError):  # recorded again, as it was
                await system.compact(agent, session_key)


async def _read_from(log: LogReader, stream: str, version: int) -> list[RecordedEvent]:
    """The events of ``stream`` from ``version`` on."""
    events: list[RecordedEvent] = []
    while page := await log.read_stream(stream, version + len(events), _PAGE):
        events.extend(page)
        if len(page) < _PAGE:
            break
    return events


def _turn(events: list[RecordedEvent], turn_id: str) -> RecordedTurn:
    for turn in parse_turns(events):
        if turn.turn_id == turn_id:
            return turn
    raise ReplayError(f"the re-run did not start turn {turn_id}")
