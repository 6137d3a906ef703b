"""Model providers behind one protocol: scripted (tests, demo), OpenAI-compatible, Anthropic.

The HTTP clients own one ``httpx.AsyncClient`` each, created on first use in the loop
that calls them (the System's I/O hub); close them with ``await model.aclose()``. All three
stream too (:class:`StreamingModel`: text deltas, then the complete reply).
"""

from .anthropic import AnthropicModel
from .base import (
    ChatMessage,
    ContentPart,
    DocumentPart,
    ImagePart,
    Model,
    ModelReply,
    ModelRequest,
    StreamingModel,
    TextDelta,
    TextPart,
    ToolCall,
    ToolSpec,
    Usage,
)
from .catalog import ModelCatalog, ModelSpec
from .openai import OpenAIChatModel
from .retry import RetryPolicy
from .scripted import ScriptedModel, call, calls, reply, stream_cut

__all__ = [
    "AnthropicModel",
    "ChatMessage",
    "ContentPart",
    "DocumentPart",
    "ImagePart",
    "Model",
    "ModelCatalog",
    "ModelReply",
    "ModelRequest",
    "ModelSpec",
    "OpenAIChatModel",
    "RetryPolicy",
    "ScriptedModel",
    "StreamingModel",
    "TextDelta",
    "TextPart",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "call",
    "calls",
    "reply",
    "stream_cut",
]
