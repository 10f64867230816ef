"""The plain-schema check (``upstream/_plain_schema.py``) against jsonschema itself: it may pass
arguments only where jsonschema finds nothing wrong, and it does pass a common tool's valid ones."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrt_proxy import canonical
from agentrt_proxy.upstream import validation
from agentrt_proxy.upstream._plain_schema import plain_check

NAMES = ["a", "b", "to", "cents", "$schema", "type"]
TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]
NUMBER_LITERALS = ["0", "-0", "7", "-12", "2.0", "1e2", "1.5", "-3E-1", "123456789012345678901234567890"]


def jsonschema_passes(schema: Any, arguments_text: str) -> bool:
    arguments = canonical.to_python(canonical.parse_strict(arguments_text))
    return not list(validation._compile(schema).iter_errors(arguments))


def plain_passes(schema: Any, arguments_text: str) -> bool | None:
    """The check's verdict, None when it leaves the schema to jsonschema."""
    compiled = validation._compiled(schema)
    if compiled.plain is None:
        return None
    return compiled.plain(canonical.parse_strict(arguments_text))


def schemas() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.just(True),
        st.just(False),
        st.just({}),
        st.sampled_from(TYPES).map(lambda t: {"type": t}),
        st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True).map(lambda ts: {"type": ts}),
        st.sampled_from([{"minLength": 2}, {"enum": [1, "a"]}, {"const": 1}, {"format": "uri"},
                         {"minimum": 3}, {"pattern": "^a"}, {"$ref": "#"}, {"type": "string", "maxLength": 1}]),
    )

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(["object", "array", ["object", "null"]]),
                "properties": st.dictionaries(st.sampled_from(NAMES), children, max_size=3),
                "required": st.lists(st.sampled_from(NAMES), max_size=3, unique=True),
                "additionalProperties": st.one_of(st.booleans(), children),
                "items": children,
                "title": st.just("a title"),
                "description": st.just("what it is"),
                "patternProperties": st.just({"^a": {"type": "string"}}),
            },
        )

    return st.recursive(leaf, extend, max_leaves=8)


def values() -> st.SearchStrategy[str]:
    """JSON texts, numbers written as literals of every kind."""
    scalar = st.one_of(st.none().map(lambda _: "null"), st.booleans().map(lambda b: "true" if b else "false"),
                       st.sampled_from(NUMBER_LITERALS), st.sampled_from(["a", "", "ab", "7"]).map(json.dumps))
    return st.recursive(
        scalar,
        lambda children: st.one_of(
            st.lists(children, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
            st.dictionaries(st.sampled_from(NAMES), children, max_size=3).map(
                lambda d: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in d.items()) + "}"),
        ),
        max_leaves=8,
    )


def usable(schema: Any) -> bool:
    try:
        validation._compile(schema)
    except jsonschema.SchemaError:
        return False
    return True


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(), values())
def test_the_plain_check_passes_only_what_jsonschema_passes(schema: Any, arguments_text: str) -> None:
    if not usable(schema):
        return
    if plain_passes(schema, arguments_text):
        assert jsonschema_passes(schema, arguments_text), (schema, arguments_text)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True), values())
def test_for_a_typed_property_the_plain_check_agrees_with_jsonschema_on_every_literal_but_a_float_integer(
    types: list[str], value_text: str
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": types}}, "required": ["a"],
              "additionalProperties": False}
    arguments_text = '{"a":' + value_text + "}"
    verdict = plain_passes(schema, arguments_text)
    truth = jsonschema_passes(schema, arguments_text)
    float_integer = "integer" in types and "number" not in types and value_text in ("2.0", "1e2")
    assert verdict == (truth and not float_integer), (types, value_text)


ECHO = {"type": "object", "title": "echoArguments", "properties": {"text": {"type": "string", "title": "Text"}},
        "required": ["text"]}
PAY = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
       "properties": {"to": {"type": "string"}, "cents": {"type": "integer"},
                      "tags": {"type": "array", "items": {"type": "string"}}},
       "required": ["to", "cents"], "additionalProperties": False}


@pytest.mark.parametrize(
    ("schema", "arguments_text", "passes"),
    [
        (ECHO, '{"text":"hi"}', True),
        (ECHO, '{"text":"hi","more":1}', True),
        (ECHO, "{}", False),
        (ECHO, '{"text":7}', False),  # a number is not a string, though a Number is a str
        (PAY, '{"to":"bob","cents":7}', True),
        (PAY, '{"to":"bob","cents":7,"tags":["a","b"]}', True),
        (PAY, '{"to":"bob","cents":7,"tags":["a",1]}', False),
        (PAY, '{"to":"bob","cents":true}', False),
        (PAY, '{"to":"bob","cents":7.5}', False),
        (PAY, '{"to":"bob","cents":7,"memo":"x"}', False),
    ],
)
def test_a_common_tools_arguments_are_passed_or_left_to_jsonschema(schema: Any, arguments_text: str,
                                                                   passes: bool) -> None:
    assert plain_passes(schema, arguments_text) is passes
    assert jsonschema_passes(schema, arguments_text) is passes


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "string", "minLength": 1}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "$defs": {"x": {}}, "properties": {"n": {"$ref": "#/$defs/x"}}},
        {"type": "array", "items": [{"type": "string"}]},  # draft 7's tuple form
        False,
    ],
)
def test_a_schema_with_anything_but_the_plain_keywords_is_left_to_jsonschema(schema: Any) -> None:
    assert validation._compiled(schema).plain is None
    assert plain_check(validation._compile(schema).schema) is None


def test_a_schema_of_another_draft_is_left_to_jsonschema() -> None:
    # Draft 4 reads 2.0 as no integer, and its validator is none of the two the check knows.
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}
    assert plain_check(schema) is not None
    assert validation._compiled(schema).plain is None


def test_valid_arguments_to_a_plain_schema_never_reach_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = dict(PAY, properties=dict(PAY["properties"], extra={"type": "null"}))
    validation._compiled(schema)  # compiled (checking the schema runs jsonschema on the schema itself)
    consulted: list[Any] = []
    real = jsonschema.Draft202012Validator.iter_errors

    def counted(self: Any, instance: Any, *args: Any) -> Any:
        consulted.append(instance)
        return real(self, instance, *args)

    monkeypatch.setattr(jsonschema.Draft202012Validator, "iter_errors", counted)
    assert validation.schema_error(schema, canonical.parse_strict('{"to":"ann","cents":3}')) == ""
    assert consulted == []
    error = validation.schema_error(schema, canonical.parse_strict('{"to":"ann"}'))
    assert "cents" in error
    assert len(consulted) == 1
