"""The strict JSON boundary, the one Go-compatible encoder, the one Go quote, request keys and
content hashes."""

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.canonical.strict import (
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
from agentrt_proxy.canonical.values import JSONBoundaryError, Number

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
