"""The strict JSON boundary, the one Go-compatible encoder, request keys and content hashes."""

from agentrt_proxy.canonical.strict import (
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_NUMBER_LENGTH,
    JSONBoundaryError,
    Number,
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
    "iter_numbers",
    "normalise_arguments",
    "parse_strict",
    "policy_text",
    "request_key",
    "sha256_hex",
    "to_python",
]
