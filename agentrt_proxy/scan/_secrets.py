"""``secret.embedded``: a live credential written into a definition (soft: the server's author
leaked it; the model is not attacked by it, but the operator should know).

Known formats only, each a pattern; placeholders (``AKIAIOSFODNN7EXAMPLE``, ``xxxx``,
``your-key-here``, ``<token>``, runs of one character) are dropped, and the generic
``key = value`` form needs a value that looks random.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

__all__ = ["RULE", "secret_spans"]

RULE = "secret.embedded"

_FORMATS = tuple(
    re.compile(p)
    for p in (
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",
        r"\bgithub_pat_[A-Za-z0-9_]{60,}\b",
        r"\bglpat-[A-Za-z0-9_\-]{20,}\b",
        r"\bxox[baprse]-[A-Za-z0-9\-]{10,}\b",
        r"\bAIza[0-9A-Za-z_\-]{35}\b",
        r"\b(?:sk|rk)_live_[0-9A-Za-z]{20,}\b",
        r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{40,}\b",
        r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}\b|\bsk-proj-[A-Za-z0-9_\-]{40,}\b",
        r"\bnpm_[A-Za-z0-9]{36}\b",
        r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}\b",
        r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b",
        r"\bhf_[A-Za-z0-9]{34,}\b",
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----",
        r"\bAccountKey=[A-Za-z0-9+/]{80,}={0,2}",
        r"\bhttps://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}",
        r"\b(?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp)://[^:\s/@]+:[^@\s/]{6,}@[\w.\-]+",
    )
)
_GENERIC = re.compile(
    r"\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|password|passwd|token|secret)\b"
    r"\s*[:=]\s*['\"]?([A-Za-z0-9_\-+/=.]{16,})",
    re.I,
)
_PLACEHOLDER = re.compile(
    r"example|sample|dummy|placeholder|your|changeme|redacted|xxxx|\*\*\*|<|>|\.\.\.|test|fake|replace|insert|here|todo|1234|abcd",
    re.I,
)


def _entropy(text: str) -> float:
    counts = {ch: text.count(ch) for ch in set(text)}
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _placeholder(token: str) -> bool:
    return bool(_PLACEHOLDER.search(token)) or len(set(token)) <= 3


def secret_spans(text: str) -> Iterator[tuple[int, int]]:
    for pattern in _FORMATS:
        for match in pattern.finditer(text):
            if match.group(0).startswith("-----BEGIN") or not _placeholder(match.group(0)):
                yield match.start(), match.end()
    for match in _GENERIC.finditer(text):
        value = match.group(1)
        if not _placeholder(value) and _entropy(value) >= 3.5 and any(ch.isdigit() for ch in value):
            yield match.start(1), match.end(1)
