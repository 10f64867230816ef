"""Go duration strings and RFC 3339 time stamps (proxy-and-mcp-module §2.1.1, design "Shared values")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt_proxy.canonical.durations import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    SECOND,
    DurationError,
    format_go,
    format_time,
    format_time_seconds,
    parse_go,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("15s", 15 * SECOND),
        ("10m", 10 * MINUTE),
        ("300ms", 300 * MILLISECOND),
        ("0s", 0),
        ("0", 0),
        ("24h", 24 * HOUR),
        ("1h30m", HOUR + 30 * MINUTE),
        ("1.5s", 1500 * MILLISECOND),
        ("1.5µs", 1500),
        ("1.5μs", 1500),  # Greek mu, as Go accepts
        ("2us", 2 * MICROSECOND),
        ("7ns", 7),
        (".5s", 500 * MILLISECOND),
        ("1.s", SECOND),
        ("+5s", 5 * SECOND),
        ("-1s", -SECOND),
        ("10m0s", 10 * MINUTE),
        ("2m0s", 2 * MINUTE),
        ("1h0m0.000000001s", HOUR + 1),
    ],
)
def test_go_durations_parse_to_nanoseconds(text: str, ns: int) -> None:
    assert parse_go(text) == ns


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5", 'time: missing unit in duration "5"'),
        ("15", 'time: missing unit in duration "15"'),
        ("1.", 'time: missing unit in duration "1."'),
        ("", 'time: invalid duration ""'),
        ("s", 'time: invalid duration "s"'),
        (".s", 'time: invalid duration ".s"'),
        (" 5s", 'time: invalid duration " 5s"'),
        ("1ss", 'time: unknown unit "ss" in duration "1ss"'),
        ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
        ("5 s", 'time: unknown unit " s" in duration "5 s"'),
        ("99999999999h", 'time: invalid duration "99999999999h"'),
        # Go's time package quotes with its own quote: every byte of a control or non-ASCII character as \xHH
        ("1é", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
        ("5s\x1b[2J", 'time: unknown unit "s\\x1b[" in duration "5s\\x1b[2J"'),
        ('1"\\', 'time: unknown unit "\\"\\\\" in duration "1\\"\\\\"'),
        # and reads only ASCII digits (U+0661 is a digit to Python's \d)
        ("\u0661s", 'time: invalid duration "\\xd9\\xa1s"'),
    ],
)
def test_malformed_durations_are_refused_with_gos_message(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_go(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (999, "999ns"),
        (MICROSECOND, "1µs"),
        (1500, "1.5µs"),
        (50 * MILLISECOND, "50ms"),
        (300 * MILLISECOND, "300ms"),
        (SECOND, "1s"),
        (1500 * MILLISECOND, "1.5s"),
        (15 * SECOND, "15s"),
        (2 * MINUTE, "2m0s"),
        (10 * MINUTE, "10m0s"),
        (24 * HOUR, "24h0m0s"),
        (HOUR + 1, "1h0m0.000000001s"),
        (-SECOND, "-1s"),
        (2**63 - 1, "2562047h47m16.854775807s"),
    ],
)
def test_durations_format_as_go_prints_them(ns: int, text: str) -> None:
    assert format_go(ns) == text


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_formatted_durations_parse_back(ns: int) -> None:
    assert parse_go(format_go(ns)) == ns


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1, "1970-01-01T00:00:00.000000001Z"),
        (1_500_000_000, "1970-01-01T00:00:01.5Z"),
        (1_700_000_000_100_000_000, "2023-11-14T22:13:20.1Z"),
        (1_700_000_000_123_456_789, "2023-11-14T22:13:20.123456789Z"),
        (1_700_000_000_000_000_000, "2023-11-14T22:13:20Z"),
    ],
)
def test_times_are_rfc3339_utc_with_trimmed_fractions(ns: int, text: str) -> None:
    assert format_time(ns) == text
    assert parse_time(text) == ns


def test_times_for_the_model_are_to_the_second() -> None:
    assert format_time_seconds(1_700_000_000_999_999_999) == "2023-11-14T22:13:20Z"


def test_parse_time_takes_offsets() -> None:
    assert parse_time("2023-11-15T00:13:20.5+02:00") == 1_700_000_000_500_000_000
    assert parse_time("2023-11-14T21:13:20-01:00") == 1_700_000_000 * SECOND
    with pytest.raises(ValueError):
        parse_time("2023-11-14 22:13:20Z")


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=253_402_300_799 * SECOND))
def test_time_stamps_round_trip(ns: int) -> None:
    text = format_time(ns)
    assert parse_time(text) == ns
    assert not text.endswith("0Z") or "." not in text
