"""Argument validation's choice of draft (``upstream/validation.py``): the compile a tool's load runs once."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from agentrt_proxy.upstream import validation


def compiled(schema: dict[str, Any]) -> Any:
    return validation._compile(schema)


def test_a_schema_without_dollar_schema_is_read_as_draft_2020_12() -> None:
    schema = {"type": "object", "properties": {"pair": {"prefixItems": [{"type": "string"}], "items": False}}}
    validator = compiled(schema)
    assert isinstance(validator, jsonschema.Draft202012Validator)
    assert validator.is_valid({"pair": ["a"]})
    assert not validator.is_valid({"pair": ["a", "b"]})


def test_a_schema_2020_12_refuses_is_read_as_draft_07() -> None:
    schema = {"type": "object", "properties": {"pair": {"items": [{"type": "string"}], "additionalItems": False}}}
    validator = compiled(schema)
    assert isinstance(validator, jsonschema.Draft7Validator)
    assert validator.is_valid({"pair": ["a"]})
    assert not validator.is_valid({"pair": ["a", "b"]})
    assert not validator.is_valid({"pair": [1]})


def test_a_schema_neither_draft_accepts_is_refused() -> None:
    with pytest.raises(jsonschema.SchemaError):
        compiled({"type": "object", "properties": {"n": {"type": "string", "minLength": "two"}}})


def test_a_named_draft_is_the_one_used_and_checked() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "required": ["a"]}
    assert isinstance(compiled(draft4), jsonschema.Draft4Validator)
    with pytest.raises(jsonschema.SchemaError):
        compiled({**draft4, "required": []})  # draft-04 wants at least one name
