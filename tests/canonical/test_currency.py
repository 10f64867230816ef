"""A currency is its ISO 4217 code: three ASCII letters, folded to upper case; nothing else."""

from __future__ import annotations

import pytest

from agentrt_proxy.canonical import Number
from agentrt_proxy.canonical.currency import currency_code


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("EUR", "EUR"),
        ("eur", "EUR"),
        ("eUr", "EUR"),
        ("XXX", "XXX"),
        ("EUR ", None),
        (" EUR", None),
        ("\u0415UR", None),  # a Cyrillic capital IE
        ("E\u200bUR", None),  # a zero-width space inside
        ("ＥＵＲ", None),  # full-width letters
        ("EURO", None),
        ("EU", None),
        ("", None),
        ("€", None),
        ("E1R", None),
        (Number("123"), None),  # a JSON number is not text
        (None, None),
        (["EUR"], None),
    ],
)
def test_a_currency_is_three_ascii_letters_in_upper_case_or_nothing(value: object, code: str | None) -> None:
    assert currency_code(value) == code
