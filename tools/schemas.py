"""Argument validation against a tool's JSON Schema, and the schema each model provider
accepts (seed 002 §6, seed 004 §8).

Validators are compiled once per tool with fastjsonschema (defaults are filled in); a
schema fastjsonschema cannot compile (an exotic MCP schema) falls back to jsonschema.
Errors name the bad field: ``parameter 'path' must be string``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema
import jsonschema

from .errors import InvalidSchema

__all__ = ["ArgumentError", "Validator", "compile_validator", "normalize_schema"]

Validator = Callable[[dict[str, Any]], dict[str, Any]]


class ArgumentError(ValueError):
    """The arguments do not match the schema; the message names the field."""


def compile_validator(schema: Mapping[str, Any], tool: str = "") -> Validator:
    """Compile ``schema`` once; the returned callable validates and fills defaults.

    Remote ``$ref`` (http, https, file…) is refused: a schema from an MCP server must not
    make clawlog fetch URLs.
    """
    if not isinstance(schema, Mapping):
        raise InvalidSchema(f"tool {tool!r}: parameters must be a JSON Schema object")
    plain = copy.deepcopy(dict(schema))
    try:
        compiled = fastjsonschema.compile(plain, handlers=_NO_REMOTE)
    except InvalidSchema as exc:
        raise InvalidSchema(f"tool {tool!r}: {exc}") from None
    except Exception as exc:  # a definition error, or a plain error on an odd schema
        try:
            return _jsonschema_validator(plain, tool)
        except InvalidSchema:
            raise InvalidSchema(
                f"tool {tool!r}: parameters schema does not compile: {exc}"
            ) from exc

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        try:
            result = compiled(args)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise ArgumentError(_describe_fast(exc)) from None
        return result if isinstance(result, dict) else args

    return validate


def _refuse_remote(uri: str) -> Any:
    raise InvalidSchema(f"remote $ref {uri!r} is not allowed; inline the definition")


_NO_REMOTE = dict.fromkeys(("http", "https", "file", "ftp", "data", ""), _refuse_remote)


def _jsonschema_validator(schema: dict[str, Any], tool: str) -> Validator:
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidSchema(f"tool {tool!r}: invalid parameters schema: {exc.message}") from exc
    checker = cls(schema)
    try:  # resolve references now: a broken schema is the tool's fault, found at startup
        list(checker.iter_errors({}))
    except Exception as exc:
        raise InvalidSchema(f"tool {tool!r}: parameters schema cannot be used: {exc}") from exc

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        try:
            error = jsonschema.exceptions.best_match(checker.iter_errors(args))
        except Exception as exc:  # an unresolvable $ref and the like: the schema's fault
            raise ArgumentError(f"the tool's schema cannot be checked ({exc})") from None
        if error is not None:
            field = ".".join(str(p) for p in error.absolute_path)
            where = f"parameter {field!r}: " if field else ""
            raise ArgumentError(f"{where}{error.message}")
        return args

    return validate


def _describe_fast(exc: fastjsonschema.JsonSchemaValueException) -> str:
    path = [str(p) for p in (exc.path or [])][1:]  # drop the leading "data"
    field = ".".join(path)
    rule = exc.rule or ""
    if rule == "required":
        given = exc.value if isinstance(exc.value, dict) else {}
        missing = [r for r in (exc.rule_definition or []) if r not in given]
        names = ", ".join(repr(f"{field}.{m}" if field else m) for m in missing) or "?"
        return f"missing required parameter {names}"
    if rule == "additionalProperties" and isinstance(exc.value, dict):
        allowed = set((exc.definition or {}).get("properties", {}))
        extra = sorted(set(exc.value) - allowed)
        return f"unknown parameter(s) {extra}" + (f" in {field!r}" if field else "")
    message = exc.message
    prefix = exc.name or "data"
    if message.startswith(prefix):
        message = message[len(prefix) :].strip()
    return f"parameter {field!r} {message}" if field else f"arguments {message}"


# -- provider normalization -----------------------------------------------------------
_GEMINI_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "title",
    }
)
_GEMINI_FORMATS = frozenset({"enum", "date-time"})


def normalize_schema(schema: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """The parameters schema as ``provider`` accepts it. A new dict; the input is kept.

    * ``openai`` (and OpenAI-compatible): a top-level ``object``; never
      ``"type": [T, "null"]`` (one non-null type stays, several are dropped: any value).
    * ``gemini`` (``google``): ``anyOf``/``oneOf`` flattened (enums merged, ``required``
      kept where every variant requires it), unsupported keywords removed,
      ``[T, "null"]`` becomes ``T`` with ``nullable``.
    * ``anthropic`` and anything else: as is.
    """
    plain = copy.deepcopy(dict(schema))
    kind = provider.lower()
    if kind in ("gemini", "google", "vertex"):
        return _gemini(_flatten_top(plain))
    if kind in ("openai", "azure", "openai-compatible", "openrouter", "groq", "deepseek"):
        return _openai(_flatten_top(plain))
    return plain


def _flatten_top(schema: dict[str, Any]) -> dict[str, Any]:
    if any(k in schema for k in ("anyOf", "oneOf")):
        schema = _merge_variants(schema)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


def _openai(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        if isinstance(out.get(key), dict):
            out[key] = {name: _openai(sub) for name, sub in out[key].items()}
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(out.get(key), list):
            out[key] = [_openai(sub) for sub in out[key]]
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _openai(out[key])
    kind = out.get("type")
    if isinstance(kind, list):
        non_null = [t for t in kind if t != "null"]
        if len(non_null) == 1:
            out["type"] = non_null[0]
        else:
            del out["type"]
    return out


def _gemini(node: Any) -> Any:
    if isinstance(node, list):
        return [_gemini(n) for n in node]
    if not isinstance(node, dict):
        return node
    if any(k in node for k in ("anyOf", "oneOf")):
        node = _merge_variants(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _gemini(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _gemini(value)
        elif key == "const":
            out["enum"] = [value]
        elif key == "format" and value not in _GEMINI_FORMATS:
            continue
        elif key in _GEMINI_KEYS:
            out[key] = value
    kind = out.get("type")
    if isinstance(kind, list):
        non_null = [t for t in kind if t != "null"]
        if len(non_null) < len(kind):
            out["nullable"] = True
        out["type"] = non_null[0] if non_null else "string"
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    return out


def _merge_variants(node: dict[str, Any]) -> dict[str, Any]:
    """One schema for an anyOf/oneOf: properties unioned, enums merged, a field required
    only when every variant (and the parent) requires it."""
    variants = [v for v in [*node.get("anyOf", []), *node.get("oneOf", [])] if isinstance(v, dict)]
    base = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
    non_null = [v for v in variants if v.get("type") != "null"]
    nullable = len(non_null) < len(variants)
    if not non_null:
        return base
    if all(v.get("type") == "object" or "properties" in v for v in non_null):
        merged = _merge_objects(base, non_null)
    else:
        merged = _merge_scalars(base, non_null)
    if nullable:
        merged["nullable"] = True
    return merged


def _merge_objects(base: dict[str, Any], variants: list[dict[str, Any]]) -> dict[str, Any]:
    properties: dict[str, Any] = dict(base.get("properties", {}))
    for variant in variants:
        for name, sub in variant.get("properties", {}).items():
            properties[name] = _merge_property(properties.get(name), sub)
    required_sets = [set(v.get("required", [])) for v in variants]
    common = set.intersection(*required_sets) if required_sets else set()
    required = list(dict.fromkeys([*base.get("required", []), *sorted(common)]))
    merged = {**base, "type": "object", "properties": properties}
    if required:
        merged["required"] = required
    return merged


def _enum_values(schema: dict[str, Any]) -> list[Any]:
    return [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]


def _merge_property(current: Any, new: Any) -> Any:
    if not isinstance(current, dict) or not isinstance(new, dict):
        return new if current is None else current
    enums = [*_enum_values(current), *_enum_values(new)]
    merged = {**new, **current}
    merged.pop("const", None)
    if enums:
        merged["enum"] = list(dict.fromkeys(enums))
    return merged


def _merge_scalars(base: dict[str, Any], variants: list[dict[str, Any]]) -> dict[str, Any]:
    first = variants[0]
    merged = {**first, **base}
    if all(v.get("type") == first.get("type") for v in variants):
        enums = [e for v in variants for e in _enum_values(v)]
        if enums:
            merged["enum"] = list(dict.fromkeys(enums))
            merged.pop("const", None)
    else:
        merged.pop("enum", None)
        merged.pop("const", None)
    return merged
