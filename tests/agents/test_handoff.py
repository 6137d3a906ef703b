"""Handoff routes: (channel, chat) moves to another agent until it is cleared."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawlog.actors import Rejected, System
from clawlog.actors.agents import AgentConfig, CallerContext
from clawlog.actors.providers import ScriptedModel, reply


def named(name: str) -> ScriptedModel:
    return ScriptedModel(lambda request: reply(f"{name}: {request.messages[-1].content}"))


async def test_handoff_routes_later_messages_until_cleared(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="front"), named("front"))
        await system.register_agent(AgentConfig(key="billing"), named("billing"))
        ports = system.runtime.services["agents"]
        assert await system.send("front", "chat1", "hi", channel="web", chat_id="c1") == "front: hi"
        ctx = CallerContext(
            agent="front",
            session_key="chat1",
            channel="web",
            chat_id="c1",
            session_stream="session/front/chat1",
        )
        assert await ports.handoff(ctx, "billing", "billing question") is True
        assert await system.routed_agent("web", "c1") == "billing"
        answer = await system.send("front", "chat1", "my invoice?", channel="web", chat_id="c1")
        assert answer == "billing: my invoice?"
        assert await system.send("front", "other", "x", channel="web", chat_id="c2") == "front: x"
        billing_ctx = CallerContext(
            agent="billing",
            session_key="chat1",
            channel="web",
            chat_id="c1",
            session_stream="session/billing/chat1",
        )
        assert await ports.clear_handoff(billing_ctx) == "billing"
        assert (
            await system.send("front", "chat1", "back?", channel="web", chat_id="c1")
            == "front: back?"
        )
        route = [e.type for e in await system.store.read_stream("handoff/web/c1")]
        assert route[-2:] == ["handoff.routed", "handoff.cleared"] or "handoff.cleared" in route
        billing_turns = [
            e.event.text
            for e in await system.store.read_stream("session/billing/chat1")  # type: ignore[union-attr]
            if e.type == "session.turn_started"
        ]
        assert billing_turns[0].startswith("[handoff from front]")


async def test_handoff_to_self_or_unknown_agent_is_refused(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="front"), named("front"))
        ports = system.runtime.services["agents"]
        ctx = CallerContext(
            agent="front",
            session_key="s",
            channel="web",
            chat_id="c",
            session_stream="session/front/s",
        )
        with pytest.raises(Exception, match="unknown agent 'ghost'"):
            await ports.handoff(ctx, "ghost", "why not")
        with pytest.raises(Rejected, match="cannot hand off to itself"):
            await ports.handoff(ctx, "front", "loop")
