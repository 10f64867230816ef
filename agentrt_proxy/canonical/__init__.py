"""The strict JSON boundary, the one Go-compatible encoder, the one Go quote, request keys and
content hashes.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``canonical`` imports it; callers import the names above from ``canonical``, or a
public module (``clock``, ``durations``, ``encoder``…) by its name.
"""

from agentrt_proxy.canonical._strict import (
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_NUMBER_LENGTH,
    canonical_bytes,
    canonical_json,
    check_json,
    content_hash,
    iter_numbers,
    normalise_arguments,
    parse_strict,
    policy_text,
    request_key,
    sha256_hex,
    to_python,
)
from agentrt_proxy.canonical._values import JSONBoundaryError, Number
from agentrt_proxy.canonical.quoting import go_quote

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_NUMBER_LENGTH",
    "JSONBoundaryError",
    "Number",
    "canonical_bytes",
    "canonical_json",
    "check_json",
    "content_hash",
    "go_quote",
    "iter_numbers",
    "normalise_arguments",
    "parse_strict",
    "policy_text",
    "request_key",
    "sha256_hex",
    "to_python",
]
