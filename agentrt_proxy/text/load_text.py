"""What loading a server tells the operator: ``check``'s and ``serve``'s report lines on its
tools, prompts and resources, and why a server or its manifest cannot be loaded
(upstream/_registry.py, upstream/_manifest.py, upstream/passthrough_pins.py).

No model reads these (why one tool is withheld, which a model may read, is in ``pin_text``).
Values are filled in sanitized or quoted by the caller.
"""

from __future__ import annotations

# ------------------------------------------------------------------------------ the tools' report
REGISTERED = "{server}: registered {tool} as {name} ({cls})"
HINT_MISMATCH_ALLOWED = " [hint mismatch allowed: {mismatch}]"
REFUSED = "{server}: refused {tool}: {reason}"
UNCLASSIFIED = "{server}: unclassified {tool}: no rule"
UNPINNED = "{server}: unpinned {tool}: not in the manifest"

# ------------------------------------------------------------------------------ a server that cannot load
NO_MANIFEST = "mcp: manifest is required; run Pin first"
MANIFEST_OTHER_SERVER = "mcp: manifest is for server {q_pinned}, not {q_server}"
RULES_NOT_PINNED = "mcp: server {q_server}: rules name tools the manifest does not pin: {tools}"
NO_TOOL_REGISTERED = "mcp: server {q_server}: no tool registered{nor_else}"
NOR_ELSE = ", and it offers none of the {kinds} it opted into"
LOAD_TIMED_OUT = "mcp: server {q_server}: load: timed out after {after}"

# ------------------------------------------------------------------------------ the manifest file
MANIFEST_NOT_JSON = "{file}: not usable JSON: {reason}"
MANIFEST_NOT_STRING = "{file}: {where} must be a string"
MANIFEST_NOT_OBJECT = "{file}: a manifest is a JSON object"
MANIFEST_TOOLS = "{file}: tools must be an object of tool name to pinned tool"
MANIFEST_SCAN = "{file}: scan must be an object"
MANIFEST_SCAN_PART = "{file}: scan.{key} must be an object of tool name to a list of findings"
MANIFEST_PROMPTS = "{file}: prompts must be an object of prompt name to pinned prompt"
MANIFEST_PROMPT_AT = "prompts[{q_key}]"
MANIFEST_PROMPT_NAME = "{file}: {where} must be an object whose name is {q_key}"
MANIFEST_PROMPT_BAD = "{file}: {where}: {error}"
MANIFEST_TOOL_AT = "tools[{q_key}]"
MANIFEST_ENTRY = "{file}: {where} must be an object"
MANIFEST_ANNOTATIONS = "{file}: {where}.annotations must be an object"
MANIFEST_DISPLAY = "{file}: {where}.display must be an object"

# ------------------------------------------------------------------------------ prompts and resources
LIST_PROMPTS_FAILED = "mcp: server {q_server}: list prompts: {error}"
LIST_PROMPTS_TWICE = "mcp: server {q_server}: list prompts: the server lists {q_prompt} twice"
RESOURCES_NOT_OFFERED = "{server}: resources: the server does not offer resources; none pass through"
RESOURCES_PASSED = "{server}: resources: passed through{subscriptions}"
WITH_SUBSCRIPTIONS = " (with subscriptions)"
PROMPTS_NOT_OFFERED = "{server}: prompts: the server does not offer prompts; none pass through"
PROMPTS_UNLISTED = "{server}: prompts: cannot be listed: {error}"
PROMPTS_NOT_PINNED = "{server}: prompts: the manifest pins none; run pin to pin them"
PROMPT_OFFERED = "{server}: offered prompt {prompt} as {name}"
PROMPT_WITHHELD = "{server}: withheld prompt {prompt}: {why}"
PROMPT_GONE = "{server}: pinned prompt {prompt}: the server no longer offers it"

# ------------------------------------------------------------------ serving's start (_servers.py, loaded_tool.py)
LIST_TOOLS_BAD_SCHEMA = "mcp: server {q_server}: list tools: tool {q_tool}: input schema: {error}"
SERVER_MANIFEST_ERROR = "server {q_server}: manifest: {error}"
SERVER_FAILED = "mcp: server {q_server}: {kind}"
STATUS_TOOL_TAKEN = (
    "server {q_server} registers tool {q_remote} under {q_name}, the status tool's name: "
    "rename one (status_tool or the rule's rename)"
)
NAME_REGISTERED_TWICE = "server {q_server} registers {q_name}, which another server already registered"
NO_CONNECTION = "tool {name}: no connection to server {server!r}"
ENDED_SESSION = "ended its session"
ENDED_SESSION_HOW = "ended its session ({ended})"

# ------------------------------------------------- a server's resource or prompt list (passthrough.py)
LIST_ANSWERED_ERROR = "the server answered {method} with error {code}: {message}"
LIST_NO_ARRAY = "the {method} result has no {key} array"
LIST_RAW_UNREADABLE = "the raw {method} result: {error}"
LIST_TOO_MANY_ITEMS = "more than {limit} items in {method}"
LIST_CURSOR_REPEATS = "the cursor {q_cursor} repeats"
LIST_TOO_MANY_PAGES = "more than {limit} pages of {method}"

# ------------------------------------------------------------------ the scan at pin (scan_gate.py)
OVERRIDE_MALFORMED = "-override {item!r}: give TOOL:RULE, the tool and the rule its finding names"
SCAN_REFUSED_PREFIX = "server {server}: scan: refused "
SCAN_OTHERS_REMAIN = " (overridden, but other hard findings remain)"
SCAN_NOT_PINNED = "server {server}: scan: {tool} is not pinned and never offered; to pin it anyway: -override {pairs}"
SCAN_OVERRIDDEN_PREFIX = "server {server}: scan: overridden "
SCAN_RECORDED = " (recorded in the manifest)"
SCAN_PREFIX = "server {server}: scan: "
