"""Model providers behind one protocol: scripted (tests, demo), OpenAI-compatible, Anthropic."""

from .base import ChatMessage, Model, ModelReply, ModelRequest, ToolCall, ToolSpec, Usage
from .errors import (
    MalformedReply,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
    ScriptExhausted,
)
from .scripted import ScriptedModel, call, calls, reply

__all__ = [
    "ChatMessage",
    "MalformedReply",
    "Model",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelRateLimited",
    "ModelReply",
    "ModelRequest",
    "ModelServerError",
    "ModelTimeout",
    "ModelUnavailable",
    "ScriptExhausted",
    "ScriptedModel",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "call",
    "calls",
    "reply",
]
