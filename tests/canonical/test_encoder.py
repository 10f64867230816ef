"""The one Go-compatible encoder: each style writes what the writer it replaces wrote.

Before the four writers (the store's ``_go_json``, the canonical ``_encode``, the schema form's
``_write``, the manifest's ``_indent``) are removed, every style is compared with its writer on
random trees.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt_proxy.canonical import encoder, schema_form, strict
from agentrt_proxy.canonical.encoder import CANONICAL, MANIFEST, POLICY, SCHEMA, STORE, Raw, encode
from agentrt_proxy.canonical.values import Number
from agentrt_proxy.upstream import manifest

CHARS = list('ab<>&\u2028\u2029"\\/\n\r\t\b\f\x00\x01\x1f\x7f\x85é😀 \u202e')
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]
NUMBER_LITERAL = r"-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,12})?([eE][+-]?[0-9]{1,3})?"

texts = st.text(st.sampled_from(CHARS), max_size=8)
texts_with_surrogates = st.text(st.sampled_from(CHARS + SURROGATES), max_size=8)
literals = st.from_regex(NUMBER_LITERAL, fullmatch=True)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
any_floats = st.floats()
ints = st.integers(min_value=-(10**30), max_value=10**30)


def trees(leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[str], *, tuples: bool) -> st.SearchStrategy[Any]:
    def containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        lists = st.lists(children, max_size=4)
        objects = st.dictionaries(keys, children, max_size=4)
        return lists | objects | lists.map(tuple) if tuples else lists | objects

    return st.recursive(leaves, containers, max_leaves=24)


SCALARS = st.none() | st.booleans() | ints | literals.map(Number)


def old_encode(value: Any, html_safe: bool) -> str:
    out: list[str] = []
    strict._encode(value, html_safe, out)
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(trees(SCALARS | texts_with_surrogates | any_floats | st.just(Raw("[1]")), texts_with_surrogates, tuples=True))
def test_the_store_style_writes_what_go_json_wrote(value: Any) -> None:
    assert encode(value, STORE) == encoder._go_json(value) == encoder.go_json(value)


@settings(max_examples=400, deadline=None)
@given(trees(SCALARS | texts_with_surrogates | finite_floats, texts, tuples=True))
def test_the_canonical_and_policy_styles_write_what_the_canonical_encoder_wrote(value: Any) -> None:
    # Keys without lone surrogates: after the boundary none can occur, and the old encoder sorted
    # such keys before replacing them (the one style rule that changed: Go sorts them replaced).
    assert encode(value, CANONICAL) == old_encode(value, True)
    assert encode(value, POLICY) == old_encode(value, False)


def unique_after_replacement(keys: list[str]) -> bool:
    replaced = [key.translate({ord(s): "\ufffd" for s in SURROGATES}) for key in keys]
    return len(set(replaced)) == len(replaced)


schema_trees = trees(
    st.none() | st.booleans() | literals.map(lambda literal: ("number", literal)) | texts_with_surrogates,
    texts_with_surrogates,
    tuples=False,
).filter(lambda tree: _keys_unique(tree))


def _keys_unique(tree: Any) -> bool:
    if isinstance(tree, dict):
        return unique_after_replacement(list(tree)) and all(_keys_unique(v) for v in tree.values())
    if isinstance(tree, list):
        return all(_keys_unique(v) for v in tree)
    return True


def as_decoded(tree: Any, number: Any) -> Any:
    if isinstance(tree, tuple):
        return number(tree[1])
    if isinstance(tree, dict):
        return {key: as_decoded(value, number) for key, value in tree.items()}
    if isinstance(tree, list):
        return [as_decoded(value, number) for value in tree]
    return tree


@settings(max_examples=400, deadline=None)
@given(schema_trees)
def test_the_schema_style_writes_what_the_schema_form_wrote(tree: Any) -> None:
    out: list[str] = []
    schema_form._write(as_decoded(tree, schema_form._Literal), out)
    assert encode(as_decoded(tree, lambda literal: Number(schema_form.format_number(literal))), SCHEMA) == "".join(out)


@settings(max_examples=400, deadline=None)
@given(trees(SCALARS | texts_with_surrogates | finite_floats, texts_with_surrogates, tuples=False))
def test_the_manifest_style_writes_what_the_manifest_writer_wrote(value: Any) -> None:
    out: list[str] = []
    manifest._indent(value, "", out)
    assert encode(value, MANIFEST) == "".join(out)
