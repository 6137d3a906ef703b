"""A long scripted session that must compact: each turn fetches a big page, then answers
at length. Shared by the compaction tests and the re-run tests."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from clawlog.actors import ModelServerError, System
from clawlog.actors.agents import AgentConfig, CompactionConfig
from clawlog.actors.agents.summarizer import SUMMARIZER_INSTRUCTIONS
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.events import RecordedEvent
from clawlog.tools import FunctionTool

AGENT, SESSION_KEY = "main", "u1"
STREAM = f"session/{AGENT}/{SESSION_KEY}"
#: A fetched page and a final answer, in characters.
PAGE_CHARS, ANSWER_CHARS = 12_000, 2_000
#: Tokens the window holds beyond the agent's system prompt and tools.
ROOM_FOR_MESSAGES = 18_300


def page(number: int) -> str:
    return f"page {number}: " + "x" * PAGE_CHARS


async def _fetch(ctx: object, args: dict[str, Any]) -> str:
    return page(int(args["page"]))


def fetch_tool() -> FunctionTool:
    return FunctionTool(
        "fetch",
        _fetch,
        description="Fetch a page",
        parameters={
            "type": "object",
            "properties": {"page": {"type": "integer"}},
            "required": ["page"],
        },
        side_effects="none",
    )


def researcher(request: ModelRequest) -> ModelReply:
    """The agent's model: a user message gets a fetch, a fetched page a long answer."""
    assert not request.system.startswith(SUMMARIZER_INSTRUCTIONS[:40]), "asked to summarize"
    if request.messages[-1].role == "user":
        return call("fetch", page=len(request.messages))
    return reply("answer " + "y" * ANSWER_CHARS)


class Summarizer(ScriptedModel):
    """A summarizer numbering its summaries; it fails the calls numbered in ``failing``."""

    def __init__(self, failing: tuple[int, ...] = ()) -> None:
        super().__init__(self._summarize, name="summarizer")
        self._failing = failing
        self._count = 0
        self._lock = threading.Lock()

    def _summarize(self, request: ModelRequest) -> ModelReply | ModelServerError:
        assert request.system.startswith(SUMMARIZER_INSTRUCTIONS[:40])
        with self._lock:
            self._count += 1
            number = self._count
        if number in self._failing:
            return ModelServerError(f"summarizer unavailable (call {number})")
        return reply(f"Summary {number}: the user asked for pages; each was long.")


async def fitted_config(system: System, **changes: Any) -> AgentConfig:
    """The agent's config with a window that leaves :data:`ROOM_FOR_MESSAGES` tokens to
    the conversation, whatever the size of its system prompt and tools (measured)."""
    probe = AgentConfig(key=AGENT)
    await system.register_agent(probe, ScriptedModel([]), tools=[fetch_tool()])
    fixed = (await system.session_status(AGENT, "probe")).context_tokens
    settings = changes.pop("compaction", CompactionConfig(target=0.6))
    return AgentConfig(
        key=AGENT,
        context_window=fixed + ROOM_FOR_MESSAGES,
        max_tokens=1000,
        compaction=settings,
        **changes,
    )


async def record_long_session(
    path: Path, summarizer: ScriptedModel, *, turns: int = 10
) -> ScriptedModel:
    """Record ``turns`` turns of the long session on ``path``; the agent's model."""
    model = ScriptedModel(researcher, name="researcher")
    async with System.open(path) as system:
        config = await fitted_config(system)
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)
        for number in range(turns):
            answer = await system.send(AGENT, SESSION_KEY, f"read page {number}")
            assert answer.startswith("answer ")
    return model


def of_type(events: list[RecordedEvent], event_type: str) -> list[Any]:
    return [e.event for e in events if e.type == event_type]
