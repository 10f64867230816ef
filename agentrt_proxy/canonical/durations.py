"""Durations as Go writes them, and the store's time stamps.

Durations are ``int`` nanoseconds in code. The configuration spells them as Go does
(``"15s"``, ``"10m"``, ``"300ms"``, ``"1h30m"``), and people read them back in Go's form
(``10m0s``). Stored times are UTC RFC 3339 with the fraction trimmed of trailing zeros.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone

from agentrt_proxy.canonical import _messages as M
from agentrt_proxy.errors import InvalidValue

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "µs": MICROSECOND,
    "μs": MICROSECOND,
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")  # ASCII digits only, as Go reads them
_MAX = (1 << 63) - 1


class DurationError(InvalidValue):
    """A duration that is not one Go's ``time.ParseDuration`` reads; the message is Go's."""


def parse_go(text: str) -> int:
    """Parse a Go duration string into nanoseconds (``"0"`` alone needs no unit)."""
    original = text
    sign = 1
    if text[:1] in "+-" and text:
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise DurationError(M.INVALID_DURATION.format(q_text=_quote(original)))
    total = 0
    pos = 0
    while pos < len(text):
        match = _PART.match(text, pos)
        assert match is not None  # every part of the pattern is optional, so it always matches
        whole, frac, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not frac:
            raise DurationError(M.INVALID_DURATION.format(q_text=_quote(original)))
        if not unit:
            raise DurationError(M.MISSING_UNIT.format(q_text=_quote(original)))
        if unit not in _UNITS:
            raise DurationError(M.UNKNOWN_UNIT.format(q_unit=_quote(unit), q_text=_quote(original)))
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            value += int(frac) * scale // (10 ** len(frac))
        total += value
        if total > _MAX:
            raise DurationError(M.INVALID_DURATION.format(q_text=_quote(original)))
        pos = match.end()
    return sign * total


def _quote(text: str) -> str:
    """Go's ``time`` package quotes a duration its own way, not with ``%q``: ``"`` and ``\\``
    escaped, and every byte of a control or non-ASCII character as ``\\xHH``."""
    out = ['"']
    for char in text:
        if char < " " or char >= "\x80":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    out.append('"')
    return "".join(out)


def _format_fraction(value: int, digits: int) -> str:
    """``value`` with ``digits`` implied decimals, trailing zeros dropped."""
    whole, frac = divmod(value, 10**digits)
    frac_text = f"{frac:0{digits}d}".rstrip("0")
    return f"{whole}.{frac_text}" if frac_text else str(whole)


def format_go(ns: int) -> str:
    """Render nanoseconds as Go's ``time.Duration.String`` does: ``10m0s``, ``1.5s``, ``50ms``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < SECOND:
        if ns < MICROSECOND:
            return f"{sign}{ns}ns"
        if ns < MILLISECOND:
            return f"{sign}{_format_fraction(ns, 3)}µs"
        return f"{sign}{_format_fraction(ns, 6)}ms"
    hours, rest = divmod(ns, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    seconds = _format_fraction(rest, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"


def format_time(ns: int) -> str:
    """UTC RFC 3339 with nanoseconds, trailing zeros trimmed (Go's ``RFC3339Nano``)."""
    seconds, frac = divmod(ns, SECOND)
    stamp = _second_stamp(seconds)
    if not frac:
        return f"{stamp}Z"
    return f"{stamp}.{f'{frac:09d}'.rstrip('0')}Z"


@functools.lru_cache(maxsize=8)
def _second_stamp(seconds: int) -> str:
    # A call stamps ~9 times within the same second: strftime once per second.
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def format_time_seconds(ns: int) -> str:
    """UTC RFC 3339 to the second, as the model is shown times."""
    seconds = ns // SECOND
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")


@functools.lru_cache(maxsize=64)
def parse_time(text: str) -> int:
    """Parse an RFC 3339 time (optional fraction) into Unix nanoseconds. (Cached: a call's
    lease checks parse the same expiry several times; the function is pure.)"""
    match = _TIME.match(text)
    if match is None:
        raise ValueError(M.NOT_A_TIME.format(text=text))
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    frac = match.group(7) or ""
    zone = match.group(8)
    moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    seconds = int(moment.timestamp())
    if zone != "Z":
        offset = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
        seconds -= offset if zone[0] == "+" else -offset
    return seconds * SECOND + (int(frac.ljust(9, "0")) if frac else 0)
