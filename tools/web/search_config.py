"""Setting up a search provider: its API key, kept out of every repr, and its base URL.

The key comes from the application's config object (``BraveSearch(api_key=config.brave_key)``)
or, when none is given, from a named environment variable (``BRAVE_API_KEY`` by default).
It is held in a :class:`Secret` whose ``repr`` and ``str`` are ``***``: a provider printed
in a log line, an error or a debugger shows no key, and ``msgspec`` cannot encode it into an
event by accident (it is no Struct, and ``enc_hook=repr`` gives ``Secret('***')``). The
value itself leaves only through :meth:`Secret.reveal`, into the request header.

Base URLs are the operator's, never the model's: they are checked here, once, when the
application builds the provider (http or https with a host; plain http only to a loopback
host where a key would travel, so a key never crosses a network in clear).
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from ..errors import WebSearchConfigError

__all__ = ["Secret", "api_key_from", "check_base_url", "check_timeout"]

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})


class Secret:
    """A credential that never shows itself: ``repr``, ``str`` and format are ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value, for the one place that needs it (the request header)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def api_key_from(provider: str, api_key: str | Secret | None, env_var: str, signup: str) -> Secret:
    """The key given by the application, else the one in ``env_var``.

    Raises:
        WebSearchConfigError: neither is set, or the key holds whitespace or control
            characters (it goes into an HTTP header). The message never shows the key.
    """
    if isinstance(api_key, Secret):
        api_key = api_key.reveal()
    if api_key is not None and not isinstance(api_key, str):
        raise WebSearchConfigError(
            f"{provider}: api_key must be a string or a Secret, not {type(api_key).__name__}"
        )
    source = "api_key"
    if api_key is None:
        api_key, source = os.environ.get(env_var, ""), f"the environment variable {env_var}"
    if not api_key:
        raise WebSearchConfigError(
            f"{provider} needs an API key: pass api_key= from your application's config, "
            f"or set the environment variable {env_var} ({signup})"
        )
    if api_key != api_key.strip() or not api_key.isprintable() or " " in api_key:
        raise WebSearchConfigError(
            f"{provider}: the API key from {source} holds spaces or control characters "
            "(a stray newline?); give the bare key"
        )
    if not api_key.isascii():
        raise WebSearchConfigError(
            f"{provider}: the API key from {source} holds non-ASCII characters, which an "
            "HTTP header cannot carry (a typographic quote pasted with it?); give the bare key"
        )
    return Secret(api_key)


def check_base_url(provider: str, base_url: object, *, carries_secret: bool) -> str:
    """``base_url`` without a trailing slash, if it is one the provider can use.

    Raises:
        WebSearchConfigError: not an http(s) URL with a host, one with a query, fragment or
            user name, or plain http to a non-loopback host while a secret would travel.
    """
    if not isinstance(base_url, str):
        raise WebSearchConfigError(
            f"{provider}: base_url must be a string, not {type(base_url).__name__}"
        )
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise WebSearchConfigError(f"{provider}: base_url {base_url!r} is no URL ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebSearchConfigError(
            f"{provider}: base_url {base_url!r} is not an http(s) URL with a host, such as "
            "https://search.example.org"
        )
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise WebSearchConfigError(
            f"{provider}: base_url {base_url!r} must not have a query, a fragment or a user "
            "name; give credentials through the provider's own arguments"
        )
    if carries_secret and parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise WebSearchConfigError(
            f"{provider}: plain http to {parts.hostname} would send the credentials in "
            "clear; use https (plain http is only allowed to a loopback host)"
        )
    return base_url.rstrip("/")


def check_timeout(provider: str, timeout_s: object) -> float:
    """``timeout_s`` as seconds, or :class:`WebSearchConfigError` naming the provider."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise WebSearchConfigError(
            f"{provider}: timeout_s must be a positive number of seconds, not {timeout_s!r}"
        )
    return float(timeout_s)


def _is_loopback(host: str) -> bool:
    if host.lower().rstrip(".") in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
