"""Why a pinned tool is not offered: the load checks' refusals (upstream/checks.py) and how a
live tool drifted from its pin (upstream/review.py).

The operator reads them in ``check``'s and ``pin``'s reports and on the proxy's standard error; a
withheld tool's answer repeats one to the model (``model_text.tool_unpinned``), so the leak test
walks this module too. Values are filled in already quoted (``go_quote``) where the report shows
them quoted.
"""

from __future__ import annotations

# How the server's hints contradict the operator's class.
HINT_NOT_READ_ONLY = "classified read_only, but the server does not claim readOnlyHint"
HINT_DESTRUCTIVE = "classified {cls}, but the server claims destructiveHint"
HINT_NOW = "the server now says: {mismatch}"

# The schema checks.
SCHEMA_REACHES_OUT = (
    "the input schema's {key} at {pointer} is {item}, which could make the schema compiler read outside it"
)
HIDES_UNKNOWN = "the rule hides {name}, which is not a top-level property of the input schema"
HIDES_PATTERN_PROPERTIES = (
    "the rule hides parameters and the input schema has patternProperties, which could still match them"
)
HIDES_MENTIONED = "the rule hides {name} and the input schema's {keyword} mentions it"

# The runtime's own acceptance of the tool spec.
RUNTIME_BAD_CLASS = "the runtime refuses it: tool {name}: invalid side effect {cls}"
RUNTIME_NO_TIMEOUT = "the runtime refuses it: tool {name}: timeout must be positive"
RUNTIME_BAD_SCHEMA = "the runtime refuses it: tool {name}: input schema: {error}"

# The tool against its pin.
NO_LONGER_OFFERED = "the server no longer offers it"
SCHEMA_CHANGED_UNREAD = "the input schema changed since the pin ({error})"
SCHEMA_CHANGED = "the input schema changed since the pin"
DESCRIPTION_CHANGED = "the description changed since the pin, and a description is model input"
HINTS_CHANGED = "the hints changed since the pin ({hints})"
HINT_FLIP = "{hint} {before} -> {after}"
ANNOTATIONS_TITLE_CHANGED = "the annotations' title changed since the pin"
TITLE_CHANGED = "the title changed since the pin, and a title is model input"
OUTPUT_SCHEMA_CHANGED = "the output schema changed since the pin"

# The checks after the hints.
NO_TIMEOUT = "no timeout: set Rule.Timeout or Server.DefaultTimeout"
NAME_NOT_PATTERN = "the name {name} does not match {pattern}"
SCHEMA_NOT_OBJECT = "the input schema is not a JSON object"
SCHEMA_NOT_OBJECT_SCHEMA = 'the input schema is not an object schema ("type":"object")'
FIXED_NOT_JSON = "the fixed value for {parameter} is not valid JSON"

# The whole load's refusals of one tool (upstream/_registry.py).
NAME_TAKEN = "the name {name} is already taken by tool {remote}"
SCAN_REFUSED = "refused at pin by the scan's hard findings ({rules}); never offered"

# Why a server's prompt is withheld (upstream/_passthrough_routes.py, upstream/pins.py).
PROMPT_NAMELESS = "a prompt without a name"
PROMPT_ARGUMENTS_NOT_ARRAY = "prompt {name!r}: arguments is not an array"
PROMPT_ARGUMENT_NAMELESS = "prompt {name!r}: an argument without a name"
PROMPT_LISTED_TWICE = "the server lists it twice"
PROMPT_NOT_PINNED = "not pinned: run pin to pin it"
PROMPT_DIFFERS = "it differs from its pin ({difference})"
PROMPT_NAME_TAKEN = "is already taken"
PROMPT_NAME_NOT_PATTERN = "does not match ^[a-zA-Z0-9_-]{{1,64}}$"
PROMPT_NAME_REFUSED = "the name {name} {why}"
