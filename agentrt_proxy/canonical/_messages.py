"""What the canonical layer says: its refusals of a value, a duration or a schema.

These belong with the other sentences in ``agentrt_proxy/text/``, but ``canonical`` may import
only ``errors`` (the import contracts), so its words live here, in one module
(tests/architecture/test_text_in_one_place.py lets no other module of canonical hold any). Each
is a ``str.format`` template; a value a reader must see exactly is filled in already quoted by
the caller, under a field named ``q_...``. The duration refusals are Go's ``time`` package's own
words (the operator's tools match them), so they keep its ``time:`` prefix.
"""

from __future__ import annotations

# ------------------------------------------------------------------- durations (durations.py)
INVALID_DURATION = "time: invalid duration {q_text}"
MISSING_UNIT = "time: missing unit in duration {q_text}"
UNKNOWN_UNIT = "time: unknown unit {q_unit} in duration {q_text}"
NOT_A_TIME = "not an RFC 3339 time: {text!r}"

# ----------------------------------------------------------------- encoding (encoder.py)
ASCII_STYLE = "an ASCII-only style keeps lone surrogates and escapes no HTML"
NUMBER_NOT_JSON = "number {value} is not JSON"
CANNOT_ENCODE = "cannot encode {kind} as JSON"

# ------------------------------------------------------------ the strict boundary (_strict.py)
NESTED_TOO_DEEP = "nested deeper than {limit} levels"
CONSTANT_NOT_JSON = "{name} is not JSON"
NUMBER_TOO_LONG = "number {head}... is longer than {limit} characters"
EXPONENT_TOO_LARGE = "number {number} has an exponent beyond ±{limit}"
NUMBER_OVERFLOWS = "number {number} overflows a 64-bit float"

# ------------------------------------------------------------- a schema's form (schema_form.py)
INVALID_CHARACTER = "invalid character {character!r} looking for beginning of value"
SCHEMA_TOO_DEEP = "the schema is nested too deeply"
SCHEMA_TRAILING_DATA = "trailing data after the schema"
