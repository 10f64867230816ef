"""The texts a model reads of a tool, a prompt or a server's instructions.

A tool: its name, title (and ``annotations.title``), description, and through its input and
output schemas every property name, title and description, and every string among enum values,
``const``, ``default`` and ``examples``, walked through ``properties``, ``items``, ``$defs`` and
the combinators. A prompt: its name, title, description and each argument's. What is not text a
model reads (numbers, the schema's keywords) is not scanned. A resource or a resource template:
its name, title and description (and its annotations' title). A server's instructions: the whole
text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from agentrt_proxy.scan._model import Definition, Text

__all__ = ["instructions_definition", "prompt_definition", "resource_definition", "tool_definition"]

MAX_DEPTH = 32  # a schema nested deeper is not a schema anyone wrote by hand
_VALUE_KEYS = ("enum", "const", "default", "examples")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "not", "additionalProperties", "contains", "if", "then", "else", "propertyNames")


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list) and depth < MAX_DEPTH:
        for item in value:
            yield from _strings(item, depth + 1)
    elif isinstance(value, dict) and depth < MAX_DEPTH:
        for key, item in value.items():
            yield key
            yield from _strings(item, depth + 1)


def _schema_texts(schema: Any, path: str, depth: int = 0) -> Iterator[Text]:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return
    for key in ("title", "description"):
        if isinstance(schema.get(key), str):
            yield Text(f"{path}.{key}", schema[key])
    for key in _VALUE_KEYS:
        if key in schema:
            for index, text in enumerate(_strings(schema[key])):
                yield Text(f"{path}.{key}[{index}]", text, "value")
    for key in _SCHEMA_MAPS:
        children = schema.get(key)
        if isinstance(children, Mapping):
            for name, child in children.items():
                where = f"{path}.{key}.{name}"
                if isinstance(name, str):
                    yield Text(f"{where}(name)", name, "name")
                yield from _schema_texts(child, where, depth + 1)
    for key in _SCHEMA_LISTS:
        children = schema.get(key)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield from _schema_texts(child, f"{path}.{key}[{index}]", depth + 1)
    for key in _SCHEMA_ONE:
        yield from _schema_texts(schema.get(key), f"{path}.{key}", depth + 1)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def tool_definition(tool: Mapping[str, Any]) -> Definition:
    """The texts of one entry of a ``tools/list`` result (a decoded JSON object)."""
    name = _str(tool.get("name"))
    texts = [Text("name", name, "name")]
    if isinstance(tool.get("title"), str):
        texts.append(Text("title", tool["title"]))
    annotations = tool.get("annotations")
    if isinstance(annotations, Mapping) and isinstance(annotations.get("title"), str):
        texts.append(Text("annotations.title", annotations["title"]))
    if isinstance(tool.get("description"), str):
        texts.append(Text("description", tool["description"]))
    texts.extend(_schema_texts(tool.get("inputSchema"), "inputSchema"))
    texts.extend(_schema_texts(tool.get("outputSchema"), "outputSchema"))
    return Definition(name=name, kind="tool", texts=tuple(texts))


def prompt_definition(prompt: Mapping[str, Any]) -> Definition:
    """The texts of one entry of a ``prompts/list`` result."""
    name = _str(prompt.get("name"))
    texts = [Text("name", name, "name")]
    for key in ("title", "description"):
        if isinstance(prompt.get(key), str):
            texts.append(Text(key, prompt[key]))
    arguments = prompt.get("arguments")
    if isinstance(arguments, list):
        for argument in arguments:
            if not isinstance(argument, Mapping) or not isinstance(argument.get("name"), str):
                continue
            where = f"arguments.{argument['name']}"
            texts.append(Text(f"{where}(name)", argument["name"], "name"))
            for key in ("title", "description"):
                if isinstance(argument.get(key), str):
                    texts.append(Text(f"{where}.{key}", argument[key]))
    return Definition(name=name, kind="prompt", texts=tuple(texts))


def instructions_definition(instructions: str) -> Definition:
    """A server's ``instructions`` (its initialize result), which a host may put before the model."""
    return Definition(name="(instructions)", kind="instructions", texts=(Text("instructions", instructions),))


def resource_definition(resource: Mapping[str, Any]) -> Definition:
    """The texts of one entry of a ``resources/list`` or ``resources/templates/list`` result."""
    name = _str(resource.get("name")) or _str(resource.get("uri")) or _str(resource.get("uriTemplate"))
    texts = [Text("name", name, "name")]
    for key in ("title", "description"):
        if isinstance(resource.get(key), str):
            texts.append(Text(key, resource[key]))
    annotations = resource.get("annotations")
    if isinstance(annotations, Mapping) and isinstance(annotations.get("title"), str):
        texts.append(Text("annotations.title", annotations["title"]))
    return Definition(name=name, kind="resource", texts=tuple(texts))
