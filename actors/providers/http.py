"""What the HTTP providers share: one httpx client, error mapping at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import msgspec

from ..errors import (
    MalformedReply,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
)
from .retry import RetryPolicy, with_retries

__all__ = ["HttpProvider"]


class HttpProvider:
    """Base of the OpenAI-compatible and Anthropic clients: subclasses name their
    endpoint, headers, and request/reply mapping."""

    provider = "http"
    default_base_url = ""
    path = ""

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not model:
            raise ValueError("a model name is required")
        self._model = model
        self._api_key = api_key
        self.retry = retry or RetryPolicy()
        self._client = httpx.AsyncClient(
            base_url=(base_url or self.default_base_url).rstrip("/"),
            timeout=httpx.Timeout(timeout_s),
            headers=dict(headers or {}),
            transport=transport,
        )
        self._closed = False

    @property
    def name(self) -> str:
        return self._model

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._client.aclose()

    async def __aenter__(self) -> HttpProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _headers(self) -> dict[str, str]:
        return {}

    async def _call(self, body: dict[str, Any]) -> Any:
        """POST ``body`` to the provider's endpoint, retrying per ``self.retry``."""
        headers = self._headers()
        return await with_retries(lambda: self._post(self.path, body, headers), self.retry)

    async def _post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        """POST JSON; return the decoded body or raise the mapped ModelError."""
        try:
            response = await self._client.post(
                path,
                content=msgspec.json.encode(body),
                headers={"content-type": "application/json", **headers},
            )
        except httpx.TimeoutException as exc:
            raise ModelTimeout(
                f"{self.provider} did not answer in time ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise ModelUnavailable(
                f"{self.provider} is unreachable: {type(exc).__name__}: {self._redact(str(exc))}"
            ) from exc
        if response.status_code >= 400:
            raise self._status_error(response)
        try:
            return msgspec.json.decode(response.content)
        except msgspec.DecodeError as exc:
            raise MalformedReply(
                f"{self.provider} sent a reply that is not valid JSON "
                f"({len(response.content)} bytes): {exc}"
            ) from exc

    def _status_error(self, response: httpx.Response) -> ModelError:
        status, detail = response.status_code, self._redact(_error_detail(response))
        text = f"{self.provider} answered HTTP {status}: {detail}"
        if status in (401, 403):
            return ModelAuthError(text)
        if status == 429:
            return ModelRateLimited(text, retry_after=_retry_after(response))
        if status >= 500:
            return ModelServerError(text)
        return ModelBadRequest(text)

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[REDACTED]") if self._api_key else text


def _error_detail(response: httpx.Response) -> str:
    try:
        body = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)[:500]
    return str(error or body)[:500]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None
