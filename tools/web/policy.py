"""What a web fetch may reach: the per-agent :class:`WebPolicy` and :func:`check_url`, the
pure (no DNS, no I/O) part of the SSRF guard.

``check_url`` parses and normalizes a URL (:mod:`.urls`), then applies the policy's schemes,
host deny list, host allow list and, when the host is an IP literal in any spelling, the
blocked address ranges (:mod:`.addresses`). A host name that passes still has to have every
address it resolves to checked; the :class:`~.fetcher.Fetcher` does that and connects only to
a checked address.
"""

from __future__ import annotations

import functools

import msgspec

from ..errors import PolicyError, ToolCallError, WebRequestRefused
from .addresses import address_refusal
from .urls import DEFAULT_PORTS, ParsedTarget, parse_url

__all__ = ["WebPolicy", "check_url", "host_matches"]


class WebPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What the web tools of one agent may fetch, and how much.

    The blocked address ranges (:data:`.addresses.BLOCKED_RANGES`) are not configurable and
    the host lists never open them: ``allow_loopback`` is the one documented exception, for
    tests and trusted deployments.

    Raises:
        PolicyError: a field of the wrong type (a bare string for a tuple), a host pattern
            that is not a bare host name, an IP literal on ``allow_hosts`` in a blocked
            range (``allow_hosts=("10.0.0.5",)``: it would never be fetched), schemes
            other than http and https, or limits out of range.
    """

    allow_hosts: tuple[str, ...] = ()
    """Non-empty: only these hosts, each exact (``example.com``) or a wildcard
    (``*.example.com``: any subdomain, not the bare domain). Compared after normalization
    (lower case, IDN as punycode, no trailing dot)."""
    deny_hosts: tuple[str, ...] = ()
    """Always refused, same patterns as ``allow_hosts``; checked first."""
    allow_loopback: bool = False
    """Allow 127.0.0.0/8 and ::1, and nothing else: every other blocked range (and the mapped,
    NAT64 and 6to4 forms of loopback) stays blocked. For tests and trusted deployments."""
    max_bytes: int = 5 * 1024 * 1024
    """The body is cut there (``FetchedPage.truncated``); seed 004's MAX_RESPONSE_SIZE."""
    timeout_s: float = 30.0
    """The whole fetch: resolving, connecting and reading every redirect hop."""
    max_redirects: int = 5
    """Redirect hops followed before the fetch fails; 0 returns the 3xx response as is."""
    schemes: tuple[str, ...] = ("http", "https")
    """Allowed URL schemes; a subset of http and https (nothing else can be fetched)."""

    def __post_init__(self) -> None:
        self._check_types()
        unknown = set(self.schemes) - set(DEFAULT_PORTS)
        if unknown or not self.schemes:
            raise PolicyError(
                "WebPolicy.schemes must be a non-empty subset of ('http', 'https'), "
                f"got {self.schemes!r}"
            )
        if self.max_bytes < 1 or self.timeout_s <= 0 or self.max_redirects < 0:
            raise PolicyError(
                "WebPolicy needs max_bytes >= 1, timeout_s > 0 and max_redirects >= 0, got "
                f"max_bytes={self.max_bytes}, timeout_s={self.timeout_s}, "
                f"max_redirects={self.max_redirects}"
            )
        for pattern in (*self.allow_hosts, *self.deny_hosts):
            _normalize_pattern(pattern)
        for pattern in self.allow_hosts:
            self._check_reachable(pattern)

    def _check_types(self) -> None:
        """msgspec does not check a Struct's types when the application builds one: a bare
        string for a tuple would be read one character at a time."""
        for field in ("allow_hosts", "deny_hosts", "schemes"):
            value = getattr(self, field)
            if isinstance(value, str) or not isinstance(value, tuple | list):
                example = "('docs.python.org',)" if field != "schemes" else "('https',)"
                raise PolicyError(
                    f"WebPolicy.{field} must be a tuple of strings such as {example}, "
                    f"not {type(value).__name__} {value!r}"
                )
            if not all(isinstance(item, str) for item in value):
                raise PolicyError(f"WebPolicy.{field} must hold strings only, got {value!r}")
        for field in ("max_bytes", "max_redirects"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise PolicyError(f"WebPolicy.{field} must be an int, not {value!r}")
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, int | float):
            raise PolicyError(
                f"WebPolicy.timeout_s must be a number of seconds, not {self.timeout_s!r}"
            )
        if not isinstance(self.allow_loopback, bool):
            raise PolicyError(
                f"WebPolicy.allow_loopback must be True or False, not {self.allow_loopback!r}"
            )

    def _check_reachable(self, pattern: str) -> None:
        """A host on the allow list that the guard always refuses (an IP literal in a
        blocked range, ``localhost`` without ``allow_loopback``) would never be fetched: a
        mistake in the policy, said when it is made rather than at the first fetch."""
        if pattern.startswith("*."):
            return
        target = parse_url(f"http://{pattern}/")
        if target.literal is not None:
            reason = address_refusal(target.literal, allow_loopback=self.allow_loopback)
        elif _is_localhost(target.host) and not self.allow_loopback:
            reason = f"{target.host} names this machine (loopback)"
        else:
            return
        if reason is not None:
            raise PolicyError(
                f"WebPolicy.allow_hosts holds {pattern!r}, which the web tools never reach: "
                f"{reason}. The blocked ranges are not configurable (allow_loopback=True "
                "opens 127.0.0.0/8 and ::1 only); remove it from allow_hosts"
            )


def host_matches(pattern: str, host: str) -> bool:
    """Whether ``host`` (normalized, as in :class:`ParsedTarget`) matches one allow/deny
    pattern: exact (``example.com``) or a wildcard (``*.example.com``: any subdomain, not
    ``example.com`` itself). Patterns are normalized like hosts (case, IDN, trailing dot,
    IPv4 spellings)."""
    normalized = _normalize_pattern(pattern)
    if normalized.startswith("*."):
        return host.endswith(normalized[1:])
    return host == normalized


def check_url(url: str, policy: WebPolicy) -> ParsedTarget:
    """Parse and normalize ``url`` and apply ``policy`` without any DNS lookup.

    Raises :class:`~tools.errors.InvalidUrl` for a URL that cannot be parsed and
    :class:`~tools.errors.WebRequestRefused` for one the policy refuses (the message names
    the rule). A host name that passes must still have its addresses checked.
    """
    target = parse_url(url)
    if target.scheme not in policy.schemes:
        allowed = " and ".join(policy.schemes)
        raise WebRequestRefused(
            f"{target.url}: {target.scheme} is not allowed here; only {allowed} URLs"
        )
    for pattern in policy.deny_hosts:
        if host_matches(pattern, target.host):
            raise WebRequestRefused(f"{target.host} is on the deny list ({pattern}): refused")
    if policy.allow_hosts and not any(host_matches(p, target.host) for p in policy.allow_hosts):
        allowed = ", ".join(policy.allow_hosts)
        raise WebRequestRefused(f"{target.host} is not on the allow list ({allowed}): refused")
    if target.literal is not None:
        reason = address_refusal(target.literal, allow_loopback=policy.allow_loopback)
        if reason is not None:
            raise WebRequestRefused(f"{reason}: refused")
    elif _is_localhost(target.host) and not policy.allow_loopback:
        raise WebRequestRefused(f"{target.host} names this machine (loopback): refused")
    return target


def _is_localhost(host: str) -> bool:
    """RFC 6761: ``localhost`` and every name under it are this machine, whatever DNS says."""
    return host == "localhost" or host.endswith(".localhost")


@functools.lru_cache(maxsize=1024)
def _normalize_pattern(pattern: str) -> str:
    wildcard = pattern.startswith("*.")
    body = pattern[2:] if wildcard else pattern
    unbracketed = body.partition("]")[2] if body.startswith("[") else body
    if any(char in unbracketed for char in "/?#@:*"):
        raise PolicyError(
            f"the host pattern {pattern!r} must be a bare host name (or '*.' + one), "
            "without scheme, port, path or other wildcards"
        )
    try:
        host = parse_url(f"http://{body}/").host
    except ToolCallError as exc:
        raise PolicyError(f"the host pattern {pattern!r} is not a host name: {exc}") from None
    return f"*.{host}" if wildcard else host
