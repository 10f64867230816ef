"""What the configuration's checks tell the operator: every refusal of a file, a field or a value.

These belong with the other sentences in ``agentrt_proxy/text/``, but ``config`` and ``text`` are
independent siblings of one layer in the import contracts, so config's words live here, in one
module (tests/architecture/test_text_in_one_place.py lets no other module of config hold any).
Each is a ``str.format`` template; a value a reader must see exactly is filled in already quoted
(``go_quote``) by the caller, under a field named ``q_...``. No model reads these.
"""

from __future__ import annotations

# ------------------------------------------------------------------------------ the file (_loading.py)
IN_FILE = "config {path}: {message}"
CONFIG = "config: {error}"
NOT_AN_OBJECT = "{where} must be a JSON object"
THE_CONFIGURATION = "the configuration"
MUST_BE_STRING = "{field} must be a string"
MUST_BE_BOOLEAN = "{field} must be true or false"
MUST_BE_STRINGS = "{field} must be an array of strings"
DURATION_NOT_STRING = '{label}: a duration is a string such as "15s", not {shown}'
DURATION_BAD = "{label}: {error}"
DURATION_NEGATIVE = "{label}: duration {q_value} is negative"
UNKNOWN_FIELD = "unknown field {q_name}{where}"
UNKNOWN_FIELD_IN = " in {where}"
NOT_USABLE_JSON = "not usable JSON: {reason}"
TRAILING_DATA = "trailing data after the configuration"

# The top level
DATABASE_REQUIRED = "database is required"
SESSION_NAME = "session {q_session} must be 1 to 64 letters, digits, '_' or '-'"
SERVERS_NOT_ARRAY = "servers must be an array of server entries"
SERVERS_REQUIRED = "at least one server is required"
LEASE_TTL_SHORT = "lease_ttl {ttl} is shorter than 3s"
TASK_TTL_SHORT = "task_ttl {ttl} is shorter than 1s"
STATUS_TOOL_NAME = "status_tool {q_name} does not match ^[a-zA-Z0-9_-]{{1,64}}$"
POLICY_NOT_OBJECT = "policy must be an object of side-effect class to outcome"
POLICY_UNKNOWN_CLASS = "policy: unknown side effect {q_class}"
POLICY_BAD_OUTCOME = "policy: {side_effect}: outcome {q_outcome} is not allow, require_approval, or deny"
MAX_PENDING_WHOLE = "max_pending must be a whole number"
MAX_PENDING_NEGATIVE = "max_pending must not be negative"
BYTES_WHOLE = "{name} must be a whole number of bytes"
BYTES_RANGE = "{name} {number} is not between {low} and {high}"
BYTES_BOUND = "{number} ({reads})"

# A server entry
IN_SERVER = "server {q_name}: {field}"
SERVER_AT = "servers[{index}]"
SERVER_NAME_REQUIRED = "servers[{index}]: name is required"
SERVER_NAME_TWICE = "servers[{index}]: the name {q_name} is used twice"
SERVER_ONE_OF = "server {q_name}: exactly one of command or endpoint is required"
SERVER_EMPTY_PROGRAM = "server {q_name}: command[0], the program, is empty"
SERVER_MANIFEST_REQUIRED = "server {q_name}: manifest is required"
SERVER_ENV_STDIO_ONLY = "server {q_name}: env and inherit_env apply only to a stdio server (command)"
SERVER_HEADERS_HTTP_ONLY = "server {q_name}: headers apply only to a streamable HTTP server (endpoint)"
FORWARD_NOT_ARRAY = "server {q_name}: forward must be an array of {choices}"
FORWARD_NOT_ONE = "server {q_name}: forward: {shown} is not one of {choices}"
FORWARD_TWICE = "server {q_name}: forward names {q_item} twice"
PROMPT_NAMES_NEED_PROMPTS = 'server {q_name}: prompt_names applies only with "prompts": true'
PROMPT_NAMES_NOT_OBJECT = "server {q_name}: prompt_names must be an object of prompt name to the host's name"
PROMPT_NAME_PATTERN = "server {q_name}: prompt_names: the name for {q_prompt} must match ^[a-zA-Z0-9_-]{{1,64}}$"
NO_REFERENCE_HERE = (
    "server {q_name}: {field}: ${{env:...}} is read only in env and headers values; "
    "give the server the value through env or inherit_env"
)
ENV_BAD_NAME = "server {q_name}: env: {q_variable} is not a variable name"
ENV_VALUE_NOT_STRING = "server {q_name}: env {variable}: the value must be a string"
ENV_NOT_ENTRIES = "{where} must be an object of variable name to value, or an array of NAME=value strings"
ENV_FIELD = "env {variable}"
REFERENCE_FAILED = "server {q_name}: {field}: {error}"
INHERIT_ENV_BAD = "server {q_name}: inherit_env entry {q_entry} is not a variable name"
ENV_ENTRY_BAD = "server {q_name}: env entry {q_entry} is not NAME=value"
HEADERS_NOT_OBJECT = "server {q_name}: headers must be an object of header name to value"
HEADER_BAD_NAME = "server {q_name}: headers: {q_header} is not an HTTP header name"
HEADER_NOT_ONE_LINE = "server {q_name}: headers: the value of {header} must be a one-line string"
HEADER_FIELD = "headers: {header}"
HEADER_READ_NOT_ONE_LINE = (
    "server {q_name}: headers: the value of {header}, as read from the environment, must be a one-line string"
)
ENDPOINT_NOT_URL = "server {q_name}: endpoint {q_endpoint} is not an http:// or https:// URL"

# A tool's rule
RULES_NOT_OBJECT = "server {q_name}: rules must be an object of tool name to rule"
RULE_WHERE = "server {q_server}: tool {q_tool}"
RULE_AT = "servers[{server}].rules.{tool}"
IN_RULE = "{where}: {field}"
RULE_BAD_OUTCOME = "{where}: outcome {q_outcome} is not allow, require_approval, or deny"
RULE_CURRENCY_NEEDS_AMOUNT = "{where}: currency_field needs an amount_field"
RULE_CLEAN_CONTEXT = "{where}: clean_context {q_value} is not require_approval or deny"
RULE_CLEAN_CONTEXT_ALONE = '{where}: clean_context applies only with "requires_clean_context": true'
RULE_FIXED_NOT_OBJECT = "{where}: fixed must be an object of parameter name to value"

# ------------------------------------------------------------------------------ budgets and trust (budget_fields.py)
FIELD_EMPTY = "{where}: {name} must not be empty"
FIELD_NOT_POINTER = "{where}: {name} {q_value} is not a JSON Pointer ('~' must be followed by 0 or 1)"
TRUST_BAD = "server {q_server}: trust {q_value} is not trusted or untrusted"
BUDGETS_NOT_ARRAY = "budgets must be an array of budget entries"
BUDGET_NAME_TWICE = "budgets[{index}]: the name {q_name} is used twice"
BUDGET_AT = "budgets[{index}]"
BUDGET_NAME_FIELD = "{where}.name"
BUDGET_NAME_PATTERN = "{where}.name must be 1 to 64 letters, digits, '_', '.' or '-'"
BUDGET_WHERE = "budget {q_name}"
BUDGET_TOOLS = "{where}: tools must be a non-empty array of registered tool names"
BUDGET_TOOL_UNKNOWN = "{where}: tools: {q_tool} is not a registered tool name (rename, else <server>_<tool>)"
BUDGET_TOOL_NO_CURRENCY = "{where}: names currency {q_currency}, and tool {q_tool} declares no currency_field"
BUDGET_FIELD = "{where}: {field}"
BUDGET_OVER = "{where}: over_budget {q_value} is not deny or require_approval"
BUDGET_CURRENCY = '{where}: currency {q_value} is not a currency code (ISO 4217: three ASCII letters, such as "EUR")'
LIMIT_NOT_NUMBER = "{where}: limit must be a JSON number, not {shown}"
LIMIT_NOTHING = "nothing"
LIMIT_UNREAD = "{where}: limit {value} is not a number"
LIMIT_NEGATIVE = "{where}: limit {value} is negative"
LIMIT_PAST = "{where}: limit {value} is past {most}"
WINDOW_NOT_STRING = '{where}: window is a duration string such as "24h"'
WINDOW_BAD = "{where}: window: {error}"
WINDOW_NOT_POSITIVE = "{where}: window {q_value} must be longer than zero"

# ------------------------------------------------------------------------------ OAuth (_oauth_fields.py)
AUTH_WHERE = "server {q_server}: auth"
AUTH_HTTP_ONLY = "{where} applies only to a streamable HTTP server (endpoint); a stdio server reads its environment"
AUTH_NOT_OBJECT = '{where} must be an object such as {{"type": "oauth"}}'
AUTH_TYPE = '{where}: type {q_kind} is not "oauth" (the one kind of auth there is)'
AUTH_GRANT = "{where}: grant {q_grant} is not authorization_code or client_credentials"
AUTH_CREDENTIALS_NEED = "{where}: the client_credentials grant needs client_id and client_secret (or private_key)"
AUTH_NEEDS_CLIENT_ID = "{where}: {name} needs the client_id it belongs to"
AUTH_TWO_WAYS = "{where}: client_secret and private_key are two ways to authenticate the client: give one"
AUTH_NOT_STRING = "{where}: {name} must be a non-empty string"
AUTH_SECRET_FROM_ENV = '{where}: {name} must be "${{env:NAME}}" (read from the environment), never the secret itself'
AUTH_SECRET_UNREAD = "{where}: {name}: {error}"
AUTH_SCOPES = "{where}: scopes must be an array of strings"
AUTH_SCOPE_BAD = "{where}: scopes: {q_scope} is not one OAuth scope (no spaces, quotes or backslashes)"
AUTH_PORT = "{where}: redirect_port must be a whole number from 1 to 65535"
AUTH_METADATA_HTTPS = "{where}: client_metadata_url {q_url} must be an https:// URL"
AUTH_METADATA_DOCUMENT = "{where}: client_metadata_url {q_url} must name a document (a URL with a path)"

# ------------------------------------------------------------------------------ environment references (_env_refs.py)
# Shown as written (no fields, so its braces are not doubled).
REFERENCE_NOT_ENV = "a ${ that is not ${env:NAME} (a NAME of letters, digits and '_'; $${ for a literal ${)"
REFERENCE_UNSET = "${{env:{name}}}: {name} is not set in the proxy's environment"

# ------------------------------------------------------------------------------ the files themselves (files.py)
FILE_NOT_REGULAR = "{name} is not a regular file"
FILE_WRITABLE = "{name} has mode {mode}, which lets its group or others write it: chmod go-w it"
FILE_NOT_OURS = "{name} (mode {mode}) is owned by uid {uid}, not by the current user"
FILE_UNREADABLE = "{path}: {error}"
DATABASE_UNREADABLE = "database: {path}: {error}"
DATABASE_SYMLINK = "database: {path} is a symbolic link; name the database file itself"
DATABASE_NOT_REGULAR = "database: {path} is not a regular file"
DATABASE_REFUSED = "database: {error}"

# ------------------------------------------------------------------------------ what a server may reach (_reach.py)
SERVER_REACHES = (
    "server {q_name}: its argument {q_argument} reaches {reached}, "
    "which the proxy's policy and approvals depend on: point the server elsewhere, or set "
    "skip_path_check on it if it cannot write there"
)
