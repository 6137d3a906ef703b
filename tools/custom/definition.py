"""Checking a custom tool definition and turning it into its event.

Everything is checked when the tool is defined, so a definition that is recorded can
always be built into a tool: the name (letters, digits, ``_`` and ``-``, at most 64, not
a built-in's), the parameters (an ``object`` JSON Schema that compiles, as every tool's
does: :func:`tools.schemas.compile_validator`), the command template (its placeholders
exist among the parameters' properties, and stand where a value stays one word: see
:mod:`tools.custom.template`; a template the exec deny table refuses whatever the
arguments is refused here already), the timeout, the working directory, and the env
(variable names exec accepts, values without NUL, sealed with the key).

A wrong field raises :class:`InvalidCustomTool` naming it; env values without a usable
key raise :class:`SecretKeyError`. Nothing is recorded then.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from clawlog.events.domain.custom_tool import CustomToolDefined

from ..errors import CustomToolTypeError, InvalidCustomTool, InvalidSchema, SecretKeyError
from ..exec.analysis import analyze
from ..exec.env import BLOCKED_ENV
from ..exec.host import RUN_ID_ENV
from ..registry import PROTECTED_NAMES
from ..schemas import compile_validator
from .secrets import SECRET_KEY_ENV, SecretBox
from .template import CommandTemplate

__all__ = ["DEFAULT_TIMEOUT_S", "MAX_TIMEOUT_S", "build_definition", "check_name"]

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 1800.0
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DESCRIPTION = 4096
_MAX_SCHEMA_BYTES = 64 * 1024
_MAX_ENV = 64
_MAX_ENV_VALUE = 16 * 1024
_MAX_BY = 256
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _type_error(parameter: str, wanted: str, value: object) -> CustomToolTypeError:
    return CustomToolTypeError(parameter, f"must be {wanted}, not {type(value).__name__}")


def check_name(name: object) -> str:
    """A custom tool's name: 1-64 letters, digits, ``_`` and ``-``, not a built-in's."""
    if not isinstance(name, str):
        raise _type_error("name", "a str", name)
    if _NAME.fullmatch(name) is None:
        raise InvalidCustomTool(
            "name", f"{name!r} is not a tool name: 1-64 letters, digits, _ and - (no spaces)"
        )
    if name in PROTECTED_NAMES:
        raise InvalidCustomTool(
            "name", f"{name!r} is a built-in tool's name (protected); choose another name"
        )
    return name


def build_definition(
    *,
    name: str,
    command: str,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    working_dir: str = "",
    env: Mapping[str, str] | None = None,
    enabled: bool = True,
    agent: str = "",
    by: str = "",
    box: SecretBox | None = None,
    key_problem: str = "",
) -> CustomToolDefined:
    """The ``tool.custom_defined`` event for a checked definition, env values sealed with
    ``box`` (``key_problem``: why there is no box, if one was configured wrongly).

    Raises:
        InvalidCustomTool: a field that cannot be used (``.parameter`` names it);
            ``CustomToolTypeError`` (also a TypeError) for a wrong type.
        SecretKeyError: ``env`` has values and there is no usable key.
    """
    check_name(name)
    if not isinstance(agent, str):
        raise _type_error("agent", "a str", agent)
    schema = _parameters(name, parameters)
    template = _command(command, schema)
    for parameter, value, limit in (
        ("description", description, _MAX_DESCRIPTION),
        ("by", by, _MAX_BY),
    ):
        if not isinstance(value, str):
            raise _type_error(parameter, "a str", value)
        if len(value) > limit:
            raise InvalidCustomTool(parameter, f"is {len(value)} characters; at most {limit}")
    if not isinstance(enabled, bool):
        raise _type_error("enabled", "a bool", enabled)
    variables = _env(env)
    if variables and box is None:
        raise SecretKeyError(
            "malformed" if key_problem else "missing",
            f"custom tool {name!r} has env values, which are stored encrypted: "
            + (key_problem or f"{SECRET_KEY_ENV} is not set in this process's environment")
            + f". Set {SECRET_KEY_ENV} to the base64 of 32 random bytes (keep it: the same "
            "key decrypts them after a restart), then define the tool again",
        )
    sealed = [box.seal(agent, name, var, value) for var, value in variables.items()] if box else []
    return CustomToolDefined(
        name=name,
        agent=agent,
        description=description,
        parameters=schema,
        command=template.text,
        timeout_s=_timeout(timeout_s),
        working_dir=_working_dir(working_dir),
        env=sealed,
        key_id=box.key_id if sealed and box is not None else "",
        enabled=enabled,
        by=by,
    )


def _parameters(name: str, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    if parameters is None:
        return dict(_EMPTY_SCHEMA)
    if not isinstance(parameters, Mapping):
        raise _type_error("parameters", "a JSON Schema object (a dict)", parameters)
    try:
        schema = msgspec.to_builtins(dict(parameters), str_keys=True)
        size = len(msgspec.json.encode(schema))
    except (TypeError, ValueError) as exc:
        raise InvalidCustomTool("parameters", f"is not plain JSON ({exc})") from None
    if size > _MAX_SCHEMA_BYTES:
        raise InvalidCustomTool(
            "parameters", f"is {size} bytes of JSON; at most {_MAX_SCHEMA_BYTES}"
        )
    if schema.get("type") != "object":
        raise InvalidCustomTool(
            "parameters", f'must be an object schema ("type": "object"), not {schema.get("type")!r}'
        )
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise InvalidCustomTool("parameters", '"properties" must map names to schemas')
    try:
        compile_validator(schema, name)
    except InvalidSchema as exc:
        raise InvalidCustomTool("parameters", str(exc)) from None
    return schema  # type: ignore[no-any-return]


def _command(command: str, schema: dict[str, Any]) -> CommandTemplate:
    template = CommandTemplate(command)
    properties = schema.get("properties", {})
    unknown = [key for key in template.keys if key not in properties]
    if unknown:
        known = ", ".join(sorted(properties)) or "none"
        raise InvalidCustomTool(
            "command",
            f"the placeholder(s) {', '.join('{{.' + k + '}}' for k in unknown)} name no "
            f"property of the parameters (properties: {known}); add them to the schema or "
            "fix the names",
        )
    # Every argument a harmless word: what is left is the template's own text.
    probe = template.render(dict.fromkeys(template.keys, "x")).display
    verdict = analyze(probe)
    if verdict.action == "deny":
        raise InvalidCustomTool(
            "command",
            f"exec refuses this command whatever the arguments ({verdict.category} pattern "
            f"{verdict.label!r}: {verdict.message}); write the command another way",
        )
    return template


def _timeout(timeout_s: float) -> float:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise _type_error("timeout_s", "a number of seconds", timeout_s)
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise InvalidCustomTool(
            "timeout_s", f"must be more than 0 and at most {MAX_TIMEOUT_S:g} s, not {timeout_s!r}"
        )
    return float(timeout_s)


def _working_dir(working_dir: str) -> str:
    if not isinstance(working_dir, str):
        raise _type_error("working_dir", "a str (an absolute path, or '')", working_dir)
    if working_dir and (not working_dir.startswith("/") or "\x00" in working_dir):
        raise InvalidCustomTool(
            "working_dir",
            f"must be an absolute path (or '' for the caller's workspace), not {working_dir!r}",
        )
    return working_dir


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise _type_error("env", "a dict of variable names to values", env)
    if len(env) > _MAX_ENV:
        raise InvalidCustomTool("env", f"has {len(env)} variables; at most {_MAX_ENV}")
    checked: dict[str, str] = {}
    for variable, value in env.items():
        if not isinstance(variable, str) or _ENV_NAME.fullmatch(variable) is None:
            raise InvalidCustomTool(
                "env", f"{variable!r} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"
            )
        if BLOCKED_ENV.match(variable) or variable == RUN_ID_ENV:
            raise InvalidCustomTool(
                "env", f"{variable} cannot be set for a tool (it changes which code programs run)"
            )
        if not isinstance(value, str):
            raise CustomToolTypeError(
                "env", f"the value of {variable} must be a str, not {type(value).__name__}"
            )
        if "\x00" in value or len(value) > _MAX_ENV_VALUE:
            raise InvalidCustomTool(
                "env", f"the value of {variable} holds a NUL or is over {_MAX_ENV_VALUE} characters"
            )
        checked[variable] = value
    return checked
