"""A small flag parser in the Go style the commands use (``-config FILE``, ``-json``).

``-name value``, ``-name=value`` and ``--name`` spellings are all accepted, flags may come
before or after positional arguments, and ``--`` ends the flags. Kept tiny and dependency
free because every start of the program pays for what it imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentrt_proxy.errors import UsageError
from agentrt_proxy.text import cli_text

__all__ = ["INT64_MAX", "INT64_MIN", "Flags", "UsageError", "parse"]

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)


@dataclass
class Flags:
    values: dict[str, str] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)
    positionals: list[str] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name, default)

    def on(self, name: str) -> bool:
        return name in self.switches

    def integer(self, name: str, default: int) -> int:
        text = self.values.get(name)
        if text is None:
            return default
        try:
            value = int(text, 10)
        except ValueError:
            raise UsageError(cli_text.FLAG_NOT_WHOLE.format(text=text, name=name)) from None
        if not INT64_MIN <= value <= INT64_MAX:
            # Go's int64 flags refuse it so; SQLite, which would be handed it, cannot hold it.
            raise UsageError(cli_text.FLAG_OUT_OF_RANGE.format(text=text, name=name))
        return value


def parse(argv: list[str], *, options: tuple[str, ...] = (), switches: tuple[str, ...] = ()) -> Flags:
    """Split ``argv`` into flag values, switches and positionals; refuse unknown flags."""
    result = Flags()
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--":
            result.positionals.extend(argv[index:])
            break
        if not arg.startswith("-") or arg == "-":
            result.positionals.append(arg)
            continue
        name, sep, value = arg.lstrip("-").partition("=")
        if name in switches:
            if sep and value not in ("true", "false"):
                raise UsageError(cli_text.FLAG_NOT_BOOLEAN.format(value=value, name=name))
            if not sep or value == "true":
                result.switches.add(name)
            else:
                result.switches.discard(name)
        elif name in options:
            if not sep:
                if index >= len(argv):
                    raise UsageError(cli_text.FLAG_NEEDS_VALUE.format(name=name))
                value = argv[index]
                index += 1
            result.values[name] = value
        else:
            raise UsageError(cli_text.FLAG_UNKNOWN.format(name=name))
    return result
