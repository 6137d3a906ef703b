"""The ``message`` tool (seed 001 §5, group ``messaging``): an agent writes to a person on
a channel and chat on its own, in the middle of a turn ("working on it...", a notice on
another chat).

It runs through the normal tool pipeline (policy, validation, rate limits, loop
detection, approvals); the message itself is recorded by the calling Session on its own
stream as an ``outbox.message_posted`` of kind ``message`` (the stream's owner writes it),
and the application receives it from ``System.outbox``. clawlog does not deliver it: the
application owns the channels.
"""

from __future__ import annotations

from typing import Any

from ..errors import Rejected
from .actor_tools import ActorTool, _required
from .gateway import CallerContext
from .messages import PostMessage

__all__ = ["MessageTool"]

_MAX_TEXT = 16_000


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
        text = _required(args, "text")
        channel, chat_id = args.get("channel", ""), args.get("chat_id", "")
        if chat_id and not (channel or ctx.channel):
            raise Rejected("chat_id needs a channel: this conversation has none, name one")
        session = self.services["runtime"].lookup(ctx.session_stream)
        if session is None or not session.is_alive():
            raise Rejected("this session is not running; answer in your reply instead")
        request = PostMessage(text=text, channel=channel, chat_id=chat_id, call_id=ctx.call_id)
        await session.ask(request)
        return f"message sent to {channel or ctx.channel or 'this conversation'}"
