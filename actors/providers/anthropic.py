"""An Anthropic messages client (``POST {base}/v1/messages``).

The wire format lives in :mod:`.anthropic_wire`, the streamed reply's assembly in
:mod:`.anthropic_stream`. Prompt caching is on by default: the system prompt and the tools
are marked ``cache_control`` so later calls of a session read them from the cache (at a
tenth of the input price; the first call writes them at 1.25 times it). Prompts shorter
than the model's minimum cacheable length are simply not cached.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from .anthropic_stream import AnthropicStreamAssembler
from .anthropic_wire import ANTHROPIC_VERSION, parse_reply, request_body
from .base import ContentPart, ModelReply, ModelRequest
from .http import HttpProvider, StreamAssembler
from .retry import RetryPolicy

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel"]


class AnthropicModel(HttpProvider):
    """Anthropic's messages API. ``prompt_caching=False`` sends no ``cache_control``."""

    provider = "anthropic"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"
    default_api_key_env = "ANTHROPIC_API_KEY"

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
        prompt_caching: bool = True,
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
        self.prompt_caching = prompt_caching

    def check_part(self, part: ContentPart) -> None:
        """Every part kind goes: images and PDF documents, base64 or by URL (see
        :mod:`.base`)."""

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _request_body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        body = request_body(request, prompt_caching=self.prompt_caching)
        if stream:
            body["stream"] = True
        return body

    def _parse_reply(self, data: Any) -> ModelReply:
        return parse_reply(data)

    def _assembler(self) -> StreamAssembler:
        return AnthropicStreamAssembler()
