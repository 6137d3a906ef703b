"""Server configuration: from the API, or from an IronClaw-style ``mcp-servers.json``.

    {"servers": [
        {"name": "everything", "command": "node", "args": ["server.js", "stdio"]},
        {"name": "notion", "url": "https://mcp.notion.com/mcp", "enabled": false,
         "description": "Notion workspace tools", "headers": {"Authorization": "${NOTION}"}}
     ],
     "schema_version": 1}

A server with a ``command`` speaks stdio; one with a ``url`` speaks streamable HTTP, or SSE
when ``"transport": "sse"`` (or the URL ends in ``/sse``). ``${VAR}`` in ``env`` and
``headers`` values is read from the environment at load time, so secrets stay out of the
file. A ``{"mcpServers": {name: {...}}}`` map (the common client shape) is read too.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

from clawlog.events.domain.mcp import McpTransport

from ..errors import McpConfigError

__all__ = ["McpServerConfig", "Transport", "load_servers_file", "registered_name"]

#: The name this package has always exported for :data:`McpTransport`.
Transport = McpTransport
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
_TOOL_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TRANSPORT_ALIASES = {
    "stdio": "stdio",
    "sse": "sse",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamablehttp": "streamable-http",
    "http": "streamable-http",
}
#: Model providers accept tool names of at most 64 characters.
MAX_TOOL_NAME = 64
#: Fields recorded in ``mcp.server_configured.settings``.
SETTINGS = (
    "call_timeout_s",
    "connect_timeout_s",
    "health_interval_s",
    "health_timeout_s",
    "backoff_initial_s",
    "backoff_max_s",
    "max_attempts",
)


class McpServerConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One MCP server. Defaults follow seed 001 §12: health check every 30 s; reconnect
    with exponential backoff from 2 s to 60 s, at most 10 attempts in a row."""

    #: 1-48 of a-z 0-9 _ -: names the stream ``mcp/{name}`` and the group ``mcp:{name}``.
    name: str
    #: Inferred when empty: ``command`` → stdio, ``url`` → streamable-http (sse for ``/sse``).
    transport: Transport | Literal[""] = ""
    command: str = ""
    args: list[str] = msgspec.field(default_factory=list)
    #: Extra environment of a stdio server; values are secrets (never recorded).
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    #: HTTP headers for sse / streamable-http; values are secrets (never recorded).
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    enabled: bool = True
    description: str = ""
    #: Tools are offered as ``{tool_prefix}_{tool}``; None → ``mcp_{name}``; "" → no prefix
    #: (a tool that would then shadow a built-in is skipped).
    tool_prefix: str | None = None
    #: The deadline of every call (the SDK can hang past its own timeouts).
    call_timeout_s: float = 60.0
    #: Start, handshake and tool listing together.
    connect_timeout_s: float = 30.0
    health_interval_s: float = 30.0
    health_timeout_s: float = 10.0
    backoff_initial_s: float = 2.0
    backoff_max_s: float = 60.0
    #: Connection attempts in a row (the first included) before the server is failed.
    max_attempts: int = 10
    #: IronClaw's OAuth block: read, not supported yet (connecting fails with a clear error).
    oauth: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _NAME.fullmatch(self.name) is None:
            raise McpConfigError(
                f"invalid MCP server name {self.name!r}: 1-48 of a-z 0-9 _ - starting "
                "with a letter or digit"
            )
        transport = self.transport or _infer_transport(self)
        msgspec.structs.force_setattr(self, "transport", transport)
        if transport == "stdio":
            if not self.command:
                raise McpConfigError(f"MCP server {self.name!r}: stdio needs a command")
        else:
            _check_url(self.name, self.url)
        self._check_numbers()

    def _check_numbers(self) -> None:
        for field in SETTINGS[:-1]:
            if not getattr(self, field) > 0:
                raise McpConfigError(f"MCP server {self.name!r}: {field} must be positive")
        if self.backoff_max_s < self.backoff_initial_s:
            raise McpConfigError(
                f"MCP server {self.name!r}: backoff_max_s is below backoff_initial_s"
            )
        if self.max_attempts < 1:
            raise McpConfigError(f"MCP server {self.name!r}: max_attempts must be at least 1")

    @property
    def prefix(self) -> str:
        return f"mcp_{self.name}" if self.tool_prefix is None else self.tool_prefix

    @property
    def group(self) -> str:
        """The policy group of this server's tools (``group:mcp:{name}`` in policies)."""
        return f"mcp:{self.name}"

    def backoff_s(self, failures: int) -> float:
        """Seconds before the next attempt after ``failures`` failed attempts in a row."""
        return min(self.backoff_max_s, self.backoff_initial_s * 2 ** max(failures - 1, 0))

    def settings(self) -> dict[str, float]:
        return {field: float(getattr(self, field)) for field in SETTINGS}

    def secrets(self) -> list[str]:
        """Values to scrub from everything this server returns or we record."""
        return [*self.env.values(), *self.headers.values()]


def _infer_transport(config: McpServerConfig) -> Transport:
    if config.command:
        return "stdio"
    if not config.url:
        raise McpConfigError(f"MCP server {config.name!r} needs a command or a url")
    return "sse" if urlsplit(config.url).path.rstrip("/").endswith("/sse") else "streamable-http"


def _check_url(name: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise McpConfigError(f"MCP server {name!r}: {url!r} is not an http(s) URL")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise McpConfigError(
            f"MCP server {name!r}: plain http is only allowed to localhost; use https for "
            f"{parts.hostname}"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def registered_name(prefix: str, tool: str) -> str:
    """``{prefix}_{tool}`` with characters providers reject replaced by ``_``, and cut to
    64 characters with a short hash when longer (so distinct tools keep distinct names)."""
    raw = f"{prefix}_{tool}" if prefix else tool
    name = _TOOL_CHARS.sub("_", raw)
    if len(name) > MAX_TOOL_NAME:
        digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
        name = f"{name[: MAX_TOOL_NAME - 9]}_{digest}"
    return name


def load_servers_file(path: str | Path) -> list[McpServerConfig]:
    """Read an ``mcp-servers.json``; raises :class:`McpConfigError` naming what is wrong."""
    location = Path(path)
    try:
        data = msgspec.json.decode(location.read_bytes())
    except OSError as exc:
        raise McpConfigError(f"{location}: {exc.strerror or exc}") from exc
    except msgspec.DecodeError as exc:
        raise McpConfigError(f"{location}: not valid JSON ({exc})") from exc
    entries = _entries(location, data)
    configs = [_server(location, index, entry) for index, entry in enumerate(entries)]
    names = [c.name for c in configs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise McpConfigError(f"{location}: servers listed twice: {', '.join(duplicates)}")
    return configs


def _entries(location: Path, data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        raise McpConfigError(f"{location}: expected a JSON object with a 'servers' list")
    version = data.get("schema_version", 1)
    if version != 1:
        raise McpConfigError(f"{location}: schema_version {version!r} is not supported (1 is)")
    if "servers" in data:
        servers = data["servers"]
        if not isinstance(servers, list):
            raise McpConfigError(f"{location}: 'servers' must be a list")
        return servers
    for key in ("mcpServers", "mcp_servers"):
        if isinstance(data.get(key), dict):
            return [{"name": name, **entry} for name, entry in data[key].items()]
    raise McpConfigError(f"{location}: no 'servers' list (nor an 'mcpServers' map)")


def _server(location: Path, index: int, entry: Any) -> McpServerConfig:
    where = f"{location}: server #{index + 1}"
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where} is not a JSON object")
    entry = dict(entry)
    if "type" in entry and "transport" not in entry:
        entry["transport"] = entry.pop("type")
    if "timeout_sec" in entry:  # GoClaw's name
        entry["call_timeout_s"] = entry.pop("timeout_sec")
    if "transport" in entry:
        given = str(entry["transport"])
        entry["transport"] = _TRANSPORT_ALIASES.get(given.lower().replace(" ", ""), given)
    for key in ("env", "headers"):
        if isinstance(entry.get(key), dict):
            entry[key] = {k: _expand(where, str(v)) for k, v in entry[key].items()}
    try:
        return msgspec.convert(entry, McpServerConfig)
    except (msgspec.ValidationError, McpConfigError) as exc:
        raise McpConfigError(f"{where} ({entry.get('name', '?')}): {exc}") from exc


def _expand(where: str, value: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise McpConfigError(f"{where}: environment variable {name} is not set")
        return os.environ[name]

    return _ENV_REF.sub(replace, value)
