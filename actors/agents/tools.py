"""The agent tools: the tools that drive actors and the tool that writes to people.

Group ``sessions`` (seed 001 §6, §10): subagent, spawn, handoff, sessions_list,
sessions_history, sessions_send, session_status (:data:`ACTOR_TOOLS`). Group
``messaging`` (seed 001 §5): ``message`` (:class:`MessageTool`), with which an agent
writes to a person on a channel and chat on its own, in the middle of a turn ("working on
it...", a notice on another chat); the calling Session records it on its own stream as an
``outbox.message_posted`` of kind ``message`` (the stream's owner writes it), and the
application receives it from ``System.outbox``. clawlog does not deliver it: the
application owns the channels.

They live in ``actors`` because they reach actors (``tools`` never imports ``actors``);
:mod:`actors.agents.pipeline_gateway` wraps each one as a ``tools`` Tool, so each runs
through the normal tool pipeline (policy, validation, rate limits, loop detection,
approvals). ``run`` returns the text for the model or raises :class:`Rejected` with words
the model can act on. The team and delegation tools build on :class:`ActorTool` too.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from clawlog.events.domain.session import TurnCompleted, TurnStarted
from clawlog.events.streams import session_stream

from ..errors import Rejected
from .gateway import CallerContext
from .messages import PostMessage

__all__ = ["ACTOR_TOOLS", "ActorTool", "MessageTool"]

_MAX_TEXT = 16_000


class ActorTool:
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    group: ClassVar[str]

    def __init__(self, services: dict[str, Any], store: Any) -> None:
        self.services = services
        self.store = store

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        raise NotImplementedError


def answer_json(value: Any) -> str:
    """A tool's answer to the model: ``value`` as JSON text."""
    return msgspec.json.encode(msgspec.to_builtins(value)).decode()


class SubagentTool(ActorTool):
    name = "subagent"
    group = "sessions"
    description = (
        "Run sub-tasks in child agents. action=spawn starts one in the background (its result "
        "is announced to you later); run waits for the result; list shows your subagents; "
        "cancel stops one by id, 'all' or 'last'; steer cancels one and restarts it with a "
        "new message."
    )
    parameters = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["spawn", "run", "list", "cancel", "steer"]},
            "task": {"type": "string", "description": "what the subagent should do"},
            "label": {"type": "string"},
            "id": {"type": "string", "description": "task id, or 'all' / 'last' for cancel"},
            "message": {"type": "string", "description": "the new message for steer"},
        },
        "required": ["action"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        ports = self.services["agents"]
        action = args["action"]
        if action in ("spawn", "run"):
            task = required_arg(args, "task")
            info = await ports.spawn_subagent(
                ctx, task, args.get("label", ""), wait=action == "run"
            )
            if action == "run":
                if info.status != "completed":
                    raise Rejected(f"subagent {info.task_id} {info.status}: {info.error}")
                return info.result
            return (
                f"Subagent {info.task_id} started on: {task}. Its result will be announced "
                "to you when it finishes; do not wait for it."
            )
        if action == "list":
            return answer_json(
                [
                    {k: getattr(t, k) for k in ("task_id", "label", "status", "task")}
                    for t in await ports.list_subagents(ctx)
                ]
            )
        if action == "cancel":
            cancelled = await ports.cancel_subagents(ctx, required_arg(args, "id"))
            return f"cancelled: {', '.join(cancelled)}"
        info = await ports.steer_subagent(
            ctx, required_arg(args, "id"), required_arg(args, "message")
        )
        return f"steered: the old task was cancelled and {info.task_id} started"


class SpawnTool(SubagentTool):
    name = "spawn"
    description = "Start a subagent in the background on a task; its result is announced later."
    parameters = {
        "type": "object",
        "properties": {"task": {"type": "string"}, "label": {"type": "string"}},
        "required": ["task"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        return await super().run(ctx, {**args, "action": "spawn"})


class HandoffTool(ActorTool):
    name = "handoff"
    group = "sessions"
    description = (
        "Hand this conversation to another agent: later messages on this channel and chat go "
        "to it. The target agent can hand back with action=clear."
    )
    parameters = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "the agent to hand the chat to"},
            "reason": {"type": "string"},
            "action": {"type": "string", "enum": ["transfer", "clear"], "default": "transfer"},
        },
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        ports = self.services["agents"]
        if not ctx.channel or not ctx.chat_id:
            raise Rejected("handoff needs a conversation on a channel and chat; this one has none")
        if args.get("action", "transfer") == "clear":
            previous = await ports.clear_handoff(ctx)
            return "no handoff was active" if previous is None else "handed the chat back"
        target = required_arg(args, "agent")
        try:
            await ports.handoff(ctx, target, args.get("reason", ""))
        except Exception as exc:
            raise Rejected(str(exc)) from exc
        return f"The conversation now goes to {target}. Tell the user who will answer them."


class SessionsListTool(ActorTool):
    name = "sessions_list"
    group = "sessions"
    description = "List this agent's sessions (from the log), newest first."
    parameters = {
        "type": "object",
        "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 200}},
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        prefix = session_stream(ctx.agent, "")
        last: dict[str, int] = {}
        position = 1
        while True:
            page = await self.store.read_all(
                position, 2000, stream_prefix=prefix, types=["session.turn_started"]
            )
            for recorded in page:
                last[recorded.stream.removeprefix(prefix)] = recorded.position
            if len(page) < 2000:
                break
            position = page[-1].position + 1
        keys = sorted(last, key=lambda k: -last[k])[: args.get("limit", 50)]
        return answer_json(keys)


class SessionsHistoryTool(ActorTool):
    name = "sessions_history"
    group = "sessions"
    description = "The messages of one of this agent's sessions (from the log)."
    parameters = {
        "type": "object",
        "properties": {
            "session_key": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200},
        },
        "required": ["session_key"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        key = required_arg(args, "session_key")
        lines = []
        for recorded in await self.store.read_stream(session_stream(ctx.agent, key)):
            event = recorded.event
            if isinstance(event, TurnStarted):
                lines.append({"from": event.sender, "text": event.text})
            elif isinstance(event, TurnCompleted):
                lines.append({"from": ctx.agent, "text": event.reply})
        if not lines:
            raise Rejected(f"no session {key!r} for agent {ctx.agent}")
        return answer_json(lines[-args.get("limit", 50) :])


class SessionsSendTool(ActorTool):
    name = "sessions_send"
    group = "sessions"
    description = "Send a message into another of this agent's sessions (it starts a turn there)."
    parameters = {
        "type": "object",
        "properties": {"session_key": {"type": "string"}, "text": {"type": "string"}},
        "required": ["session_key", "text"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        key = required_arg(args, "session_key")
        if key == ctx.session_key:
            raise Rejected("that is this session; answer directly instead")
        await self.services["agents"].send_to_session(
            ctx.agent, key, required_arg(args, "text"), f"session:{ctx.session_key}"
        )
        return f"sent to session {key}"


class SessionStatusTool(ActorTool):
    name = "session_status"
    group = "sessions"
    description = "Status of a session of this agent (default: this one)."
    parameters = {"type": "object", "properties": {"session_key": {"type": "string"}}}

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        key = args.get("session_key") or ctx.session_key
        # Safe for this very session too: it answers while this tool call is in flight.
        return answer_json(await self.services["agents"].session_status(ctx.agent, key))


def required_arg(args: dict[str, Any], name: str) -> str:
    """The non-blank text argument ``name``, or a refusal the model can act on."""
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise Rejected(f"parameter {name!r} is required for this action")
    return value


ACTOR_TOOLS: tuple[type[ActorTool], ...] = (
    SubagentTool,
    SpawnTool,
    HandoffTool,
    SessionsListTool,
    SessionsHistoryTool,
    SessionsSendTool,
    SessionStatusTool,
)


class MessageTool(ActorTool):
    name = "message"
    group = "messaging"
    description = (
        "Send a message to a person now, without ending your turn: by default to this "
        "conversation's channel and chat, or to another channel/chat_id. Your final answer "
        "is still delivered as usual; use this for progress notes or messages elsewhere."
    )
    parameters = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "the message", "maxLength": _MAX_TEXT},
            "channel": {"type": "string", "description": "default: this conversation's"},
            "chat_id": {"type": "string", "description": "default: this conversation's"},
        },
        "required": ["text"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        text = required_arg(args, "text")
        channel, chat_id = args.get("channel", ""), args.get("chat_id", "")
        if chat_id and not (channel or ctx.channel):
            raise Rejected("chat_id needs a channel: this conversation has none, name one")
        session = self.services["runtime"].lookup(ctx.session_stream)
        if session is None or not session.is_alive():
            raise Rejected("this session is not running; answer in your reply instead")
        request = PostMessage(text=text, channel=channel, chat_id=chat_id, call_id=ctx.call_id)
        await session.ask(request)
        return f"message sent to {channel or ctx.channel or 'this conversation'}"
