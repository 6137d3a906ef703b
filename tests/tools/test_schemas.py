"""Argument validation messages and provider schema normalization."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clawlog.tools import ArgumentError, InvalidSchema
from clawlog.tools.schemas import compile_validator, normalize_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1, "default": 50},
        "mode": {"type": "string", "enum": ["r", "w"]},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}},
            "required": ["depth"],
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required parameter 'path'"),
        ({"path": 3}, "parameter 'path' must be string"),
        ({"path": "a", "limit": 0}, "parameter 'limit' must be bigger than or equal to 1"),
        ({"path": "a", "mode": "x"}, "parameter 'mode' must be one of ['r', 'w']"),
        ({"path": "a", "options": {}}, "missing required parameter 'options.depth'"),
        ({"path": "a", "options": {"depth": "deep"}}, "parameter 'options.depth' must be integer"),
        ({"path": "a", "colour": "red"}, "unknown parameter(s) ['colour']"),
    ],
)
def test_a_validation_error_names_the_bad_field(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        compile_validator(SCHEMA)(args)
    assert str(caught.value) == message


def test_validation_fills_defaults() -> None:
    assert compile_validator(SCHEMA)({"path": "a"}) == {"path": "a", "limit": 50}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "wat"},
        {"$ref": "#/definitions/missing"},
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
        {"type": "object", "properties": {"a": {"$ref": "a.json"}}},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "\\p{L}+"}}},
    ],
)
def test_an_unusable_schema_is_refused_when_compiled(schema: dict[str, Any]) -> None:
    with pytest.raises(InvalidSchema, match="tool 't'"):
        compile_validator(schema, "t")


def test_local_references_are_resolved() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"type": "integer"}},
    }
    with pytest.raises(ArgumentError, match="parameter 'a' must be integer"):
        compile_validator(schema)({"a": "x"})


# -- OpenAI -----------------------------------------------------------------------------
def test_openai_never_gets_a_type_array_at_any_depth() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"]},
            "any": {"type": ["string", "number", "null"], "description": "d"},
            "items": {"type": "array", "items": {"type": ["integer", "null"]}},
            "nested": {"type": "object", "properties": {"x": {"type": ["boolean", "null"]}}},
        },
    }
    out = normalize_schema(schema, "openai")
    props = out["properties"]
    assert props["name"] == {"type": "string"}
    assert props["any"] == {"description": "d"}  # several types: any value, no "type"
    assert props["items"]["items"] == {"type": "integer"}
    assert props["nested"]["properties"]["x"] == {"type": "boolean"}
    assert "['" not in repr(out).split("type")[-1]


def test_openai_gets_a_top_level_object_even_from_a_union() -> None:
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    out = normalize_schema(schema, "openai")
    assert out["type"] == "object" and "oneOf" not in out
    assert set(out["properties"]) == {"a", "b"}
    assert "required" not in out  # neither field is required by every variant
    assert normalize_schema({"properties": {}}, "openai")["type"] == "object"


def test_normalization_does_not_change_the_input() -> None:
    schema = {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
    before = copy.deepcopy(schema)
    normalize_schema(schema, "openai")
    normalize_schema(schema, "gemini")
    assert schema == before


# -- Gemini -----------------------------------------------------------------------------
def test_gemini_flattens_action_variants_keeping_enums_and_common_required() -> None:
    schema = {
        "type": "object",
        "anyOf": [
            {
                "type": "object",
                "properties": {"action": {"const": "send"}, "text": {"type": "string"}},
                "required": ["action", "text"],
            },
            {
                "type": "object",
                "properties": {"action": {"const": "react"}, "emoji": {"type": "string"}},
                "required": ["action", "emoji"],
            },
        ],
    }
    out = normalize_schema(schema, "gemini")
    assert "anyOf" not in out
    assert out["properties"]["action"]["enum"] == ["send", "react"]
    assert set(out["properties"]) == {"action", "text", "emoji"}
    assert out["required"] == ["action"]


def test_gemini_flattens_a_property_any_of_keeping_enums_and_required() -> None:
    schema = {
        "type": "object",
        "required": ["mode"],
        "properties": {
            "mode": {
                "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "string", "enum": ["c"]}]
            }
        },
    }
    normalized = normalize_schema(schema, "gemini")
    mode = normalized["properties"]["mode"]
    assert "anyOf" not in mode and set(mode["enum"]) == {"a", "b", "c"}
    assert normalized["required"] == ["mode"]
    assert normalize_schema(schema, "anthropic") == schema


def test_gemini_gets_nullable_instead_of_null_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
    }
    props = normalize_schema(schema, "gemini")["properties"]
    assert props["a"] == {"type": "string", "nullable": True}
    assert props["b"] == {"type": "integer", "nullable": True}


def test_gemini_loses_keywords_it_rejects() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "format": "uuid"},
            "at": {"type": "string", "format": "date-time"},
            "kind": {"const": "x"},
        },
    }
    out = normalize_schema(schema, "gemini")
    assert out == {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "at": {"type": "string", "format": "date-time"},
            "kind": {"enum": ["x"], "type": "string"},
        },
    }


def test_anthropic_and_unknown_providers_get_the_schema_as_is() -> None:
    schema = {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
    assert normalize_schema(schema, "anthropic") == schema
    assert normalize_schema(schema, "") == schema
