"""Model providers behind one protocol: scripted (tests, demo), OpenAI-compatible, Anthropic.

The HTTP clients own one ``httpx.AsyncClient`` each, created on first use in the loop
that calls them (the System's I/O hub); close them with ``await model.aclose()``.
"""

from .anthropic import AnthropicModel
from .base import ChatMessage, Model, ModelReply, ModelRequest, ToolCall, ToolSpec, Usage
from .openai import OpenAIChatModel
from .retry import RetryPolicy
from .scripted import ScriptedModel, call, calls, reply

__all__ = [
    "AnthropicModel",
    "ChatMessage",
    "Model",
    "ModelReply",
    "ModelRequest",
    "OpenAIChatModel",
    "RetryPolicy",
    "ScriptedModel",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "call",
    "calls",
    "reply",
]
