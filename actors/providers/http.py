"""What the HTTP providers share: one httpx client, error mapping at the boundary, and
streaming (SSE) with retries before the first delta.

A subclass names its endpoint, headers, request body and reply parsing, and the
:class:`StreamAssembler` that turns its stream's events into deltas and one reply.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, Protocol

import httpx
import msgspec

from ..errors import (
    InvalidArgument,
    MalformedReply,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelStreamCut,
    ModelTimeout,
    ModelUnavailable,
)
from .base import ModelReply, ModelRequest, TextDelta, check_tool_choice
from .retry import RetryPolicy, with_retries
from .sse import ServerSentEvent, iter_sse, sse_lines

__all__ = ["HttpProvider", "StreamAssembler"]


class StreamAssembler(Protocol):
    """Turns one streamed reply's events into text deltas and, at the end, the reply."""

    #: True once the provider's final event arrived; events after it are not read.
    finished: bool

    def feed(self, event: ServerSentEvent) -> str:
        """Take one event; return the text it adds ("" for none). Raises ModelError kinds
        (ModelStreamCut for a malformed chunk, the mapped kind for an error event)."""
        ...

    def reply(self) -> ModelReply:
        """The complete reply (called once ``finished``); MalformedReply for bad tool input."""
        ...


class HttpProvider:
    """Base of the OpenAI-compatible and Anthropic clients: subclasses name their
    endpoint, headers, and request/reply mapping.

    ``api_key=None`` takes the key from the environment variable ``api_key_env`` (the
    provider's usual one); ``api_key=""`` sends none (a local server that needs no key).
    """

    provider = "http"
    default_base_url = ""
    path = ""
    #: The environment variable that holds the key when ``api_key`` is not given.
    default_api_key_env = ""

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
    ) -> None:
        if not model:
            raise ValueError("a model name is required")
        self._model = model
        self._api_key = _api_key(self.provider, api_key, api_key_env or self.default_api_key_env)
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

    # --- what a subclass maps ---

    def _request_body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def _parse_reply(self, data: Any) -> ModelReply:
        raise NotImplementedError

    def _assembler(self) -> StreamAssembler:
        raise NotImplementedError

    # --- one request, one reply ---

    async def complete(self, request: ModelRequest) -> ModelReply:
        check_tool_choice(request)
        return self._parse_reply(await self._call(self._request_body(request, stream=False)))

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
        return self._decode(response.content)

    def _decode(self, content: bytes) -> Any:
        try:
            return msgspec.json.decode(content)
        except msgspec.DecodeError as exc:
            raise MalformedReply(
                f"{self.provider} sent a reply that is not valid JSON ({len(content)} bytes): {exc}"
            ) from exc

    # --- streaming ---

    async def stream(self, request: ModelRequest) -> AsyncGenerator[TextDelta | ModelReply, None]:
        """Text deltas as they arrive, then the complete reply (see ``StreamingModel``).

        A failure before the first delta is retried per ``self.retry``, like a request;
        after it, it is raised as :class:`ModelStreamCut` carrying the text delivered.
        Close the iterator early with ``contextlib.aclosing`` to drop the connection.
        """
        check_tool_choice(request)
        body = self._request_body(request, stream=True)
        headers = self._headers()
        attempt = 1
        while True:
            delivered: list[str] = []
            try:
                async with aclosing(self._stream_once(body, headers, delivered)) as items:
                    async for item in items:
                        yield item
                return
            except ModelError as error:
                # Deltas are out: never retried. A complete stream whose tool input is
                # bad JSON stays malformed_reply, as it would have unstreamed.
                if delivered and not isinstance(error, MalformedReply):
                    cut = _cut_after_delivery(self.provider, error, "".join(delivered))
                    cut.attempts = attempt  # type: ignore[attr-defined]
                    raise cut from error
                error.attempts = attempt  # type: ignore[attr-defined]
                if not error.retryable or attempt >= self.retry.max_attempts:
                    raise
                await asyncio.sleep(self.retry.delay(attempt, error))
                attempt += 1

    async def _stream_once(
        self, body: dict[str, Any], headers: dict[str, str], delivered: list[str]
    ) -> AsyncGenerator[TextDelta | ModelReply, None]:
        """One streamed request; appends each delta's text to ``delivered`` as it goes out."""
        assembler = self._assembler()
        request = self._client.build_request(
            "POST",
            self.path,
            content=msgspec.json.encode(body),
            headers={"content-type": "application/json", "accept": "text/event-stream", **headers},
        )
        response = await self._send_streaming(request)
        events = 0
        try:
            if response.status_code >= 400:
                await response.aread()
                raise self._status_error(response)
            if _is_json(response):
                # A server that ignored ``stream``: its whole reply as one delta.
                reply = self._parse_reply(self._decode(await response.aread()))
                if reply.text:
                    delivered.append(reply.text)
                    yield TextDelta(reply.text)
                yield reply
                return
            async with aclosing(iter_sse(sse_lines(response.aiter_text()))) as stream:
                async for event in stream:
                    events += 1
                    text = assembler.feed(event)
                    if text:
                        delivered.append(text)
                        yield TextDelta(text)
                    if assembler.finished:
                        break
        except httpx.TransportError as exc:
            raise ModelStreamCut(
                f"{self.provider}'s stream broke off after {events} events "
                f"({type(exc).__name__}: {self._redact(str(exc)) or 'no detail'}); "
                "the reply is incomplete and was not used"
            ) from exc
        finally:
            await response.aclose()
        if not assembler.finished:
            raise ModelStreamCut(
                f"{self.provider}'s stream ended after {events} events without its final "
                "event; the reply is incomplete and was not used"
            )
        yield assembler.reply()

    async def _send_streaming(self, request: httpx.Request) -> httpx.Response:
        """Send, returning once the headers are in (the body is read as it streams)."""
        try:
            return await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise ModelTimeout(
                f"{self.provider} did not answer in time ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise ModelUnavailable(
                f"{self.provider} is unreachable: {type(exc).__name__}: {self._redact(str(exc))}"
            ) from exc

    # --- errors ---

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


def _api_key(provider: str, api_key: str | None, env_var: str) -> str:
    """The key given, else the one in ``env_var``; refuses none at all, and stray characters."""
    if api_key is not None and not isinstance(api_key, str):
        raise InvalidArgument("api_key", f"must be a string, not {type(api_key).__name__}")
    source = "api_key"
    if api_key is None:
        api_key, source = os.environ.get(env_var, ""), f"the environment variable {env_var}"
        if not api_key:
            raise InvalidArgument(
                "api_key",
                f"{provider} needs an API key: pass api_key=, or set the environment variable "
                f"{env_var} (for a server that needs no key, pass api_key='')",
            )
    if api_key != api_key.strip() or not api_key.isprintable() or not api_key.isascii():
        raise InvalidArgument(
            "api_key",
            f"the {provider} key from {source} holds spaces, control or non-ASCII characters "
            "(a stray newline or a pasted quote?); give the bare key",
        )
    return api_key


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("application/json")


def _cut_after_delivery(provider: str, error: ModelError, partial_text: str) -> ModelStreamCut:
    """Any failure once deltas went out is a cut: never retried, the text named."""
    if isinstance(error, ModelStreamCut):
        message = str(error)
    else:
        message = f"{provider}'s stream failed after text was delivered ({error.kind}: {error})"
    return ModelStreamCut(message, partial_text=partial_text)


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
