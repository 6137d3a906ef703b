"""The peers of the agent-level benchmark (``scripts/bench_agents.py``): the same turn on
LangGraph, the OpenAI Agents SDK and AutoGen AgentChat, each through its own extension point
for a fake model and with its own durable state on.

The turn (every framework): the model asks for one call of ``lookup`` (a pure-Python tool
returning a short string), three times in a row, then answers with a text: four model steps,
three tool calls. Each fake model decides by counting the tool results after the turn's user
message, so it needs no shared script and serves any number of sessions and turns.

* LangGraph: ``create_react_agent`` over a ``BaseChatModel`` subclass (``bind_tools`` returns
  itself, as ``GenericFakeChatModel`` cannot take tools), checkpointed by
  ``AsyncSqliteSaver`` with ``durability="sync"`` (every step's checkpoint written before the
  next step starts), the connection at ``synchronous=FULL``.
* OpenAI Agents SDK: a custom ``Model`` (its documented extension point), ``Runner.run``
  with a ``SQLiteSession`` per session (one file for all), tracing off.
* AutoGen AgentChat: an ``AssistantAgent`` per session with a ``ReplayChatCompletionClient``
  (its fake client) and ``max_tool_iterations=4``; it has no log, so after each turn
  ``save_state()`` is written to the session's file and fsynced.

Every peer is a class with ``open()``, ``turn(session, text)`` (returns the answer),
``stored()`` (records and bytes it has written) and ``close()``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TOOL_CALLS_PER_TURN = 3
ANSWER = "done: three lookups"


def lookup_result(key: str) -> str:
    """The tool every framework calls: pure Python, a short string."""
    return f"value of {key}"


def last_index(items: Sequence[Any], matches: Callable[[Any], bool]) -> int:
    """The index of the last item that ``matches`` (0 if none), searched from the end: every
    fake model finds its turn's user message this way, so what it costs does not grow with
    the conversation and is not charged to a framework's overhead."""
    for index in range(len(items) - 1, -1, -1):
        if matches(items[index]):
            return index
    return 0


def tool_step(results_so_far: int) -> bool:
    """True while the turn still asks for a tool call."""
    return results_so_far < TOOL_CALLS_PER_TURN


# --- LangGraph ---------------------------------------------------------------------------


class LangGraphPeer:
    """LangGraph's prebuilt ReAct agent, checkpointed in SQLite at every step."""

    name = "langgraph"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._saver: Any = None
        self._graph: Any = None
        self._connection: Any = None

    async def open(self) -> None:
        import aiosqlite
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent

        class FakeToolModel(BaseChatModel):
            """Three tool calls, then the answer, counted from the turn's messages."""

            @property
            def _llm_type(self) -> str:
                return "bench-fake"

            def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeToolModel:
                return self

            def _generate(
                self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                **kwargs: Any,
            ) -> ChatResult:  # fmt: skip
                last_user = last_index(messages, lambda m: isinstance(m, HumanMessage))
                done = sum(1 for m in messages[last_user:] if isinstance(m, ToolMessage))
                if tool_step(done):
                    message = AIMessage(
                        content="",
                        tool_calls=[
                            {"name": "lookup", "args": {"key": f"k{done}"}, "id": f"c{done}"}
                        ],
                    )
                else:
                    message = AIMessage(content=ANSWER)
                return ChatResult(generations=[ChatGeneration(message=message)])

        @tool
        def lookup(key: str) -> str:
            """Look a key up."""
            return lookup_result(key)

        self._connection = await aiosqlite.connect(str(self.path))
        await self._connection.execute("PRAGMA journal_mode=WAL")
        await self._connection.execute("PRAGMA synchronous=FULL")
        self._saver = AsyncSqliteSaver(self._connection)
        await self._saver.setup()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._graph = create_react_agent(FakeToolModel(), [lookup], checkpointer=self._saver)

    async def turn(self, session: str, text: str) -> str:
        state = await self._graph.ainvoke(
            {"messages": [("user", text)]},
            {"configurable": {"thread_id": session}},
            durability="sync",
        )
        return str(state["messages"][-1].content)

    def stored(self) -> tuple[int, int]:
        conn = sqlite3.connect(self.path)
        try:
            checkpoints, checkpoint_bytes = conn.execute(
                "SELECT count(*), coalesce(sum(length(checkpoint) + length(metadata)), 0) "
                "FROM checkpoints"
            ).fetchone()
            writes, write_bytes = conn.execute(
                "SELECT count(*), coalesce(sum(length(value)), 0) FROM writes"
            ).fetchone()
        finally:
            conn.close()
        return checkpoints + writes, checkpoint_bytes + write_bytes

    async def close(self) -> None:
        await self._connection.close()


# --- OpenAI Agents SDK -------------------------------------------------------------------


class OpenAIAgentsPeer:
    """The OpenAI Agents SDK's Runner with a custom Model and a SQLiteSession per session."""

    name = "openai_agents"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._agent: Any = None
        self._sessions: dict[str, Any] = {}

    async def open(self) -> None:
        from agents import Agent, Model, ModelResponse, Usage, function_tool, set_tracing_disabled
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        set_tracing_disabled(True)

        class FakeToolModel(Model):
            """Three tool calls, then the answer, counted from the turn's input items."""

            async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                                   **kwargs: Any) -> ModelResponse:  # fmt: skip
                items = [input] if isinstance(input, str) else list(input)
                last_user = last_index(items, lambda item: _field(item, "role") == "user")
                done = sum(
                    1
                    for item in items[last_user:]
                    if _field(item, "type") == "function_call_output"
                )
                if tool_step(done):
                    output: Any = ResponseFunctionToolCall(
                        type="function_call", name="lookup", call_id=f"c{done}",
                        arguments=json.dumps({"key": f"k{done}"}), id=f"fc{done}",
                    )  # fmt: skip
                else:
                    output = ResponseOutputMessage(
                        id="m", type="message", role="assistant", status="completed",
                        content=[ResponseOutputText(type="output_text", text=ANSWER,
                                                    annotations=[])],
                    )  # fmt: skip
                return ModelResponse(output=[output], usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the benchmark does not stream")

        @function_tool
        def lookup(key: str) -> str:
            """Look a key up."""
            return lookup_result(key)

        self._agent = Agent(name="bench", instructions="bench", model=FakeToolModel(),
                            tools=[lookup])  # fmt: skip

    async def turn(self, session: str, text: str) -> str:
        from agents import Runner, SQLiteSession

        if session not in self._sessions:
            self._sessions[session] = SQLiteSession(session, str(self.path))
        result = await Runner.run(self._agent, text, session=self._sessions[session])
        return str(result.final_output)

    def stored(self) -> tuple[int, int]:
        conn = sqlite3.connect(self.path)
        try:
            rows, size = conn.execute(
                "SELECT count(*), coalesce(sum(length(message_data)), 0) FROM agent_messages"
            ).fetchone()
        finally:
            conn.close()
        return rows, size

    async def close(self) -> None:
        for session in self._sessions.values():
            session.close()


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


# --- AutoGen AgentChat -------------------------------------------------------------------


class AutoGenPeer:
    """An AutoGen AssistantAgent per session, its state saved to a file after each turn."""

    name = "autogen"

    def __init__(self, path: Path, turns_per_session: int) -> None:
        self.path = path
        self.path.mkdir(parents=True, exist_ok=True)
        self._turns = turns_per_session
        self._agents: dict[str, Any] = {}
        self.saves = 0
        self.saved_bytes = 0

    async def open(self) -> None:
        pass

    def _agent(self, session: str) -> Any:
        from autogen_agentchat.agents import AssistantAgent
        from autogen_core import FunctionCall
        from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
        from autogen_core.tools import FunctionTool
        from autogen_ext.models.replay import ReplayChatCompletionClient

        usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
        script: list[str | CreateResult] = []
        for _ in range(self._turns):
            for k in range(TOOL_CALLS_PER_TURN):
                call = FunctionCall(
                    id=f"c{k}", name="lookup", arguments=json.dumps({"key": f"k{k}"})
                )
                script.append(
                    CreateResult(finish_reason="function_calls", content=[call], usage=usage,
                                 cached=False)
                )  # fmt: skip
            script.append(ANSWER)
        info = ModelInfo(vision=False, function_calling=True, json_output=False,
                         family=ModelFamily.UNKNOWN, structured_output=False)  # fmt: skip
        client = ReplayChatCompletionClient(script, model_info=info)
        tool = FunctionTool(lookup_result, description="Look a key up.", name="lookup")
        return AssistantAgent(
            "bench", model_client=client, tools=[tool], max_tool_iterations=TOOL_CALLS_PER_TURN + 1
        )

    async def turn(self, session: str, text: str) -> str:
        if session not in self._agents:
            self._agents[session] = self._agent(session)
        agent = self._agents[session]
        result = await agent.run(task=text)
        state = await agent.save_state()
        data = json.dumps(state).encode()
        await asyncio.to_thread(_write_durably, self.path / f"{session}.json", data)
        self.saves += 1
        self.saved_bytes += len(data)
        return str(result.messages[-1].content)

    def stored(self) -> tuple[int, int]:
        return self.saves, self.saved_bytes

    async def close(self) -> None:
        self._agents.clear()


def _write_durably(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, fsynced (a checkpoint that survives a crash)."""
    partial = path.with_suffix(".tmp")
    with open(partial, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


Peer = LangGraphPeer | OpenAIAgentsPeer | AutoGenPeer


def make_peer(name: str, directory: Path, turns_per_session: int) -> Peer:
    """A peer by name, its files under ``directory``."""
    if name == "langgraph":
        return LangGraphPeer(directory / "langgraph.db")
    if name == "openai_agents":
        return OpenAIAgentsPeer(directory / "openai_agents.db")
    if name == "autogen":
        return AutoGenPeer(directory / "autogen", turns_per_session)
    raise ValueError(f"unknown peer {name!r}: use langgraph, openai_agents or autogen")
