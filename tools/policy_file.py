"""A tool policy in a file: a :class:`PolicyConfig` and an :class:`ApprovalConfig`, in TOML
or JSON (``clawlog audit --what-if POLICY_FILE``, :func:`tools.what_if.what_if`).

The keys are the field names of the two classes, in snake_case; ``approvals`` is a table
of its own. In TOML, top-level lists come before the first table::

    subagent_deny = ["spawn", "exec"]   # optional: clawlog's defaults otherwise

    [tools]
    profile = "coding"                  # minimal, coding, messaging, full
    deny = ["exec", "group:web"]
    also_allow = []

    [tools.by_provider.openai]
    deny = ["http"]

    [agents.lead]                       # an agent's own lists (AgentConfig.tools_*)
    allow = ["group:fs", "echo"]

    [users]
    "telegram:42" = ["echo", "time"]

    [approvals]
    security = "allowlist"              # deny, allowlist, full
    ask = "on-miss"                     # off, on-miss, always
    safe_bins = ["ls", "git"]

An unknown key is an error (a misspelt ``deny`` must not pass as no deny list), and so is
a value of the wrong shape; each message names the file, the key and what to write.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from .approvals import ApprovalConfig
from .errors import PolicyError, PolicyFileError
from .policy import PolicyEngine, policy_digest
from .policy_config import PolicyConfig, ProviderToolPolicy, ToolPolicy

__all__ = ["PolicyFile", "load_policy_file", "parse_policy"]

#: The Structs of a policy file, and where a dict of them sits: (field, value type).
_NESTED: dict[type[msgspec.Struct], dict[str, type[msgspec.Struct]]] = {
    PolicyConfig: {"tools": ToolPolicy, "agents": ToolPolicy},
    ToolPolicy: {"by_provider": ProviderToolPolicy},
}
#: Fields whose value is a dict of Structs keyed by a name (agents, providers).
_KEYED = {"agents", "by_provider"}
#: Fields whose value is a dict of tool-name lists keyed by a name (users, chat groups).
_LISTS_BY_NAME = {"users", "chat_groups"}


class PolicyFile(msgspec.Struct, frozen=True, kw_only=True):
    """A policy read from a file: what decides which tools run, and which wait for a
    person."""

    policy: PolicyConfig
    approvals: ApprovalConfig
    #: Where it was read from ("" when parsed from a dict).
    path: str = ""

    def digest(self, agent: str | None = None) -> str:
        """:func:`tools.policy_digest` of this policy (for ``agent``'s calls)."""
        return policy_digest(self.policy, self.approvals, agent=agent)


def load_policy_file(path: str | Path) -> PolicyFile:
    """Read a TOML (``.toml``) or JSON (``.json``) policy file.

    Raises:
        PolicyFileError: the file cannot be read, does not parse, or holds an unknown key
            or a value of the wrong shape (the message says which, and what to write).
    """
    where = str(path)
    suffix = Path(where).suffix.lower()
    if suffix not in (".toml", ".json"):
        raise PolicyFileError(
            where, f"unknown file type {suffix or '(none)'!r}: write the policy as .toml or .json"
        )
    try:
        text = Path(where).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PolicyFileError(where, "no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyFileError(where, f"cannot be read ({exc})") from exc
    try:
        data: Any = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyFileError(where, f"is not valid TOML: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise PolicyFileError(where, f"is not valid JSON: {exc}") from exc
    return parse_policy(data, where)


def parse_policy(data: Any, path: str = "") -> PolicyFile:
    """A policy from its decoded form (a dict, as a TOML or JSON file holds it)."""
    where = path or "(given as data)"
    if not isinstance(data, dict):
        raise PolicyFileError(
            where, f"must be a table/object of settings, not a {type(data).__name__}"
        )
    settings = dict(data)
    approvals_data = settings.pop("approvals", {})
    if not isinstance(approvals_data, dict):
        raise PolicyFileError(where, "approvals must be a table (security, ask, safe_bins...)")
    _check_keys(settings, PolicyConfig, "", where)
    _check_keys(approvals_data, ApprovalConfig, "approvals", where)
    policy = _convert(settings, PolicyConfig, "", where)
    approvals = _convert(approvals_data, ApprovalConfig, "approvals", where)
    try:
        PolicyEngine(policy)  # unknown profiles
    except PolicyError as exc:
        raise PolicyFileError(where, str(exc)) from exc
    return PolicyFile(policy=policy, approvals=approvals, path=path)


def _convert(data: dict[str, Any], kind: type[Any], prefix: str, where: str) -> Any:
    try:
        return msgspec.convert(data, kind, strict=True)
    except msgspec.ValidationError as exc:
        problem = str(exc)
        found = re.search(r" - at `\$\.?(.*)`$", problem)
        key = found.group(1) if found else ""
        message = _readable(problem[: found.start()] if found else problem)
        if message.startswith("invalid enum value") and key in _CHOICES:
            message += f" (one of: {_CHOICES[key]})"
        at = ".".join(p for p in (prefix, key) if p) or "the file"
        raise PolicyFileError(where, f"{at}: {message}") from exc


#: The values a choice of the approvals table takes.
_CHOICES = {"security": "deny, allowlist, full", "ask": "off, on-miss, always"}
_TYPE_WORDS = {
    "`array`": "a list",
    "`str`": "a string",
    "`object`": "a table",
    "`int`": "an integer",
    "`float`": "a number",
    "`bool`": "true or false",
    "`null`": "nothing",
}


def _readable(message: str) -> str:
    for code, words in _TYPE_WORDS.items():
        message = message.replace(code, words)
    for name in ("ApprovalConfig.", "PolicyConfig.", "ToolPolicy."):
        message = message.replace(name, "")  # a class's own check names its field
    return message[:1].lower() + message[1:]


def _toml_key(key: str) -> str:
    """``key`` as TOML writes it: bare, or quoted ("telegram:42")."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _kind_of(value: Any) -> str:
    words = {str: "a string", bool: "true or false", int: "an integer", float: "a number"}
    return words.get(type(value), "a list" if isinstance(value, list) else "a table")


def _check_keys(data: dict[str, Any], kind: type[msgspec.Struct], at: str, where: str) -> None:
    fields = kind.__struct_fields__
    for key, value in data.items():
        name = f"{at}.{key}" if at else str(key)
        if key not in fields:
            hint = _did_you_mean(str(key), fields)
            if at and key in PolicyConfig.__struct_fields__:
                hint = (
                    f": {key} is a top-level key (in TOML, a key written after a [table] "
                    "belongs to that table): move it above the first [table]"
                )
            raise PolicyFileError(where, f"unknown key {name!r}{hint}")
        if key in _LISTS_BY_NAME and isinstance(value, dict):
            for inner_key, inner in value.items():
                if not isinstance(inner, list):
                    entry = f"{name}.{_toml_key(str(inner_key))}"
                    raise PolicyFileError(
                        where,
                        f"{entry}: expected a list of tool names, got {_kind_of(inner)} "
                        f'(write {entry} = ["echo", ...])',
                    )
        nested = _NESTED.get(kind, {}).get(key)
        if nested is None or not isinstance(value, dict):
            continue  # a wrong type is reported by the conversion, with its path
        if key in _KEYED:
            for inner_key, inner in value.items():
                if not isinstance(inner, dict):
                    # msgspec would say ``agents[...]``: the entry is named here.
                    entry = f"{name}.{_toml_key(str(inner_key))}"
                    raise PolicyFileError(
                        where,
                        f"{entry}: expected a table of lists, got {_kind_of(inner)} "
                        f"(write [{entry}] then deny = [...])",
                    )
                _check_keys(inner, nested, f"{name}.{inner_key}", where)
        else:
            _check_keys(value, nested, name, where)


def _did_you_mean(key: str, fields: tuple[str, ...]) -> str:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
    if snake in fields:
        return f": write {snake!r} (the keys are snake_case)"
    close = difflib.get_close_matches(key, fields, n=1)
    known = ", ".join(fields)
    return f": did you mean {close[0]!r}?" if close else f" (known here: {known})"
