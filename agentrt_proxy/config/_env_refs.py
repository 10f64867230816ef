"""``${env:NAME}`` in a server's ``env`` and ``headers`` values: read from the proxy's environment.

Hosts keep secrets out of their files this way, so the proxy does too: a reference is replaced by
the variable's value when the configuration is loaded. A reference may be the whole value or a
part of it (``"Bearer ${env:TOKEN}"``: a header nearly always needs such a prefix). ``$${`` writes
a literal ``${``. Any other ``${`` is refused rather than passed on as written, so a habit from
another host (``${TOKEN}``, ``${input:x}``) cannot send its own spelling to a server as the token.
A value read is inserted as it is, never read again for references.

Errors name the variable, never a value: values are usually credentials.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agentrt_proxy.config import _messages as T
from agentrt_proxy.errors import ConfigurationError

__all__ = ["MARKER", "EnvReferenceError", "expand", "has_reference"]

MARKER = "${env:"
_REFERENCE = re.compile(r"\$\$\{|\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$\{")


class EnvReferenceError(ConfigurationError):
    """A value's reference that cannot be read; ``str()`` completes ``<field>: ...``, and the
    loader turns it into the ``ConfigError`` naming the file, the server and the field."""


def has_reference(value: str) -> bool:
    """Whether ``value`` asks for a variable (used where references are not read)."""
    return MARKER in value


def expand(value: str, environ: Mapping[str, str] | None) -> str:
    """``value`` with every ``${env:NAME}`` replaced and every ``$${`` made ``${``.

    With ``environ`` ``None`` the references are checked but left as written (a caller that
    reads nothing a server is given). Raises ``EnvReferenceError`` for a variable that is not
    set or a ``${`` that is not a reference.
    """
    out: list[str] = []
    end = 0
    for match in _REFERENCE.finditer(value):
        out.append(value[end : match.start()])
        end = match.end()
        token, name = match.group(0), match.group(1)
        if token == "$${":
            out.append("${" if environ is not None else token)
        elif name is None:
            raise EnvReferenceError(T.REFERENCE_NOT_ENV)
        elif environ is None:
            out.append(token)
        elif name not in environ:
            raise EnvReferenceError(T.REFERENCE_UNSET.format(name=name))
        else:
            out.append(environ[name])
    out.append(value[end:])
    return "".join(out)
