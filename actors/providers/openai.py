"""An OpenAI-compatible chat-completions client (``POST {base}/chat/completions``).

The wire format lives in :mod:`.openai_wire`, the streamed reply's assembly in
:mod:`.openai_stream`. Streaming asks for the usage block at the end of the stream
(``stream_options.include_usage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from .base import ContentPart, ModelReply, ModelRequest
from .http import HttpProvider, StreamAssembler
from .openai_stream import OpenAIStreamAssembler
from .openai_wire import check_part, parse_reply, request_body
from .retry import RetryPolicy

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel(HttpProvider):
    """The chat-completions API of OpenAI and the servers compatible with it.

    ``max_completion_tokens``: None picks by the model's name
    (:func:`.openai_wire.uses_max_completion_tokens`); True or False forces it for a model
    the names do not cover (a deployment alias, a compatible server).
    """

    provider = "openai"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"
    default_api_key_env = "OPENAI_API_KEY"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_completion_tokens: bool | None = None,
    ) -> None:
        super().__init__(
            model=model,
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=base_url,
            retry=retry,
            timeout_s=timeout_s,
            headers=headers,
            transport=transport,
        )
        self.max_completion_tokens = max_completion_tokens

    def check_part(self, part: ContentPart) -> None:
        """Images (base64 or URL) and PDF documents (base64 only) go in a user message;
        a document by URL raises ``ModelBadRequest`` (see :mod:`.base`)."""
        check_part(part)

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _request_body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        body = request_body(request, max_completion_tokens=self.max_completion_tokens)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _parse_reply(self, data: Any) -> ModelReply:
        return parse_reply(data)

    def _assembler(self) -> StreamAssembler:
        return OpenAIStreamAssembler()
