"""Errors of model providers, each with the ``kind`` recorded in ``session.model_failed``.

ModelError
 ├── ModelRateLimited     429 (carries retry_after)         kind "rate_limited"
 ├── ModelServerError     5xx                               kind "server_error"
 ├── ModelTimeout         no answer in time                 kind "timeout"
 ├── ModelUnavailable     connection refused / reset        kind "unavailable"
 ├── ModelAuthError       401 / 403                         kind "auth"
 ├── ModelBadRequest      other 4xx (the request is wrong)  kind "bad_request"
 ├── MalformedReply       the reply is not what the wire format promises
 │                                                          kind "malformed_reply"
 └── ScriptExhausted      the scripted model has no more replies
"""

from __future__ import annotations

__all__ = [
    "MalformedReply",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelRateLimited",
    "ModelServerError",
    "ModelTimeout",
    "ModelUnavailable",
    "ScriptExhausted",
]


class ModelError(Exception):
    """Root of provider errors. ``retryable`` errors are retried with backoff."""

    kind = "error"
    retryable = False


class ModelRateLimited(ModelError):
    kind = "rate_limited"
    retryable = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelServerError(ModelError):
    kind = "server_error"
    retryable = True


class ModelTimeout(ModelError):
    kind = "timeout"
    retryable = True


class ModelUnavailable(ModelError):
    kind = "unavailable"
    retryable = True


class ModelAuthError(ModelError):
    kind = "auth"


class ModelBadRequest(ModelError):
    kind = "bad_request"


class MalformedReply(ModelError):
    kind = "malformed_reply"


class ScriptExhausted(ModelError):
    kind = "script_exhausted"
