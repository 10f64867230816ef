"""What the wire layer says: every refusal, failure and error message ``mcp`` writes.

These belong with the other sentences in ``agentrt_proxy/text/``, but ``mcp`` may import only
``canonical`` and ``errors`` (the import contracts), so its words live here, in one module
(tests/architecture/test_text_in_one_place.py lets no other module of mcp hold any). Each is a
``str.format`` template; a value a reader must see exactly is filled in already quoted
(``go_quote``) or escaped (``go_escape``) by the caller, under a field named ``q_...``.

Many are wire sentences: a JSON-RPC error's message a host or a server reads, or a failure the
record keeps and the tests and peers match on. Their words are part of the protocol as this
proxy speaks it: change one only with the tests and docs that name it.
"""

from __future__ import annotations

# ----------------------------------------------------------------- the package (__init__.py)
NO_ATTRIBUTE = "module {module!r} has no attribute {name!r}"

# ------------------------------------------------------------ JSON-RPC framing (jsonrpc.py)
TOO_DEEP = "the message is nested too deeply"
TOO_MANY_DIGITS = "a number in the message has more digits than the decoder reads"
NOT_INITIALIZED = "the session is not initialized: send initialize first"
TOO_MANY_VALUES = "the message holds more than {limit} JSON values and keys, the most one message may hold"
REPEATED_KEY = "the message repeats the key {key} in its {part}: one message has one meaning"
NUMBER_NOT_JSON = "{name} is not JSON"
NOT_AN_OBJECT = "a message must be a JSON object"
METHOD_NOT_STRING = "method must be a string"
PARAMS_NOT_OBJECT = "params must be an object"
NULL_REQUEST_ID = "a request id must not be null"
BAD_REQUEST_ID = "a request id must be a string or an integer"
NOT_A_MESSAGE = "not a request, notification or response"
NOT_UTF8 = "the message is not valid UTF-8"
NOT_JSON = "the message is not JSON: {error}"

# ----------------------------------------------------------------- raw spans (spans.py)
EXPECTED_VALUE = "expected a value at offset {offset}"
EXPECTED_OBJECT = "expected an object at offset {offset}"
EXPECTED_KEY = "expected a key at offset {offset}"
EXPECTED_COLON = "expected ':' at offset {offset}"
EXPECTED_OBJECT_END = "expected ',' or '}}' at offset {offset}"
EXPECTED_ARRAY = "expected an array at offset {offset}"
EXPECTED_ARRAY_END = "expected ',' or ']' at offset {offset}"

# --------------------------------------------------------- a server's entry (spec.py)
NAME_REQUIRED = "mcp: server name is required"
INHERIT_ENV_BAD = "mcp: server {q_server}: InheritEnv entry {q_name} is not a variable name"
ENV_BAD = "mcp: server {q_server}: Env entry {q_entry} is not NAME=value"
COMMAND_AND_ENDPOINT = "mcp: server {q_server}: Command and Endpoint are exclusive"
COMMAND_OR_ENDPOINT = "mcp: server {q_server}: one of Command or Endpoint is required"
MAX_MESSAGE_BYTES_BAD = "mcp: server {q_server}: MaxMessageBytes {value} is not positive"

# ------------------------------------------------------ the upstream client (client*.py)
NOT_OFFERED = "the agentrt-proxy client offers no sampling, elicitation or roots: {method} is refused"
ANSWERED_WITH_ERROR = "the server answered {method} with error {code}: {q_message}"
ANSWER_UNREADABLE = "the answer to {method} cannot be read: {reason}"
METHOD_TIMED_OUT = "{method}: timed out after {duration}"
TIMED_OUT = "timed out after {duration}"
TOOL_PREFIX = "mcp: server {q_server}: tool {q_tool}"
TOOL_FAILED = "{prefix}: {q_detail}"
TOOL_TIMED_OUT = "{prefix}: timed out after {duration}"
TOOL_TIMED_OUT_RENEWING = "{prefix}: timed out after {duration} starting a new session"
ANSWERED_TOO_LARGE = "{failure} (max_message_bytes)"
CONNECT_TIMED_OUT = "mcp: server {q_server}: {phase}: timed out after {duration}{detail}"
CONNECT_FAILED = "mcp: server {q_server}: {phase}: {q_error}{detail}"
MESSAGE_OVER_LIMIT = "the server sent a message of {size} bytes, over the limit of {limit} (max_message_bytes)"
NAMING_NO_REQUEST = "{reason}, naming no request it answers"
EXPIRED_AGAIN = "{refusal}, again in the session just begun"
NO_NEW_SESSION = "the server ended the session and no new one could be started: {detail}"

# --------------------------------------------------------------- tools/list (listing.py)
NO_TOOLS_ARRAY = "the raw tools/list result: no tools array"
LISTING_UNREADABLE = "the raw tools/list result: {error}"
TOOL_WITHOUT_NAME = "the raw tools/list result: a tool without a name"
TOOL_LISTED_TWICE = "the server lists tool {q_name} twice"
TOO_MANY_TOOLS = "more than {limit} tools"
CURSOR_REPEATS = "the cursor {q_cursor} repeats"
TOO_MANY_PAGES = "more than {limit} pages"

# ------------------------------------------------------------- results (results.py, oversize.py)
INPUT_REQUIRED = "the server asked for more input, which this adapter does not support"
CONTENT_NOT_ARRAY = "the result's content is not an array"
RESULT_NOT_OBJECT = "the result is not a JSON object"
RESULT_OVER_CAP = (
    "the result is {size} bytes ({size_mib:.1f} MiB) as recorded, over the limit of {cap} bytes "
    "({cap_mib:.1f} MiB, max_result_bytes); it was neither recorded nor passed on, and never cut"
)
ANSWER_LIMIT = "the limit of {limit} bytes ({limit_mib:.1f} MiB, max_message_bytes)"
ANSWER_LONGER = "the answer is longer than {limit}; it was skipped, not read"
ANSWER_OVER = "the answer is {size} bytes ({size_mib:.1f} MiB), over {limit}; it was skipped, not read"
UTF8_CUT = "unexpected end of data"  # Python's own reason for a character cut at the end (matched)

# ------------------------------------------------------------------- stdio (stdio.py)
SERVER_CLOSED = "the server closed the connection"
LINE_NEVER_ENDS = (
    "the server sent more than {skipped} bytes in one message, over {factor} times "
    "max_message_bytes, without ending it: the connection was reset"
)
EXITED_BEFORE_WRITE = "the server {exit} before the request was written"
STDIN_CLOSED = "connection closed: the server's stdin is closed"
STDIN_FAILED = "connection closed: {q_error}"
STDIN_REFUSED = "connection closed: the server's stdin refused the write"
EXITED = "exited with status {status}"
KILLED = "was killed by signal {signal}{name}"

# ------------------------------------------------------------ streamable HTTP (http*.py)
NOT_AN_HTTP_URL = "the endpoint {q_endpoint} is not an http:// or https:// URL"
WRITE_FAILED = "{method}: {detail}"
NOTHING_WRITTEN = "{method}: nothing could be written: {detail}"
CONNECT_REFUSED = "{what}: connecting failed: {detail}"
ONLY_BYTES = "only bytes are sent"
ANSWERED_HTTP = "the server answered HTTP {status} {q_reason}"
ANSWERED_HTTP_DETAIL = "the server answered HTTP {status} {q_reason}: {q_snippet}"
REDIRECT_REFUSED = "the server answered HTTP {status} {q_reason}; redirects are not followed"
SESSION_UNKNOWN = "the server no longer knows the session (HTTP {status})"
CONTENT_TYPE_REFUSED = "the server answered with content type {q_media}"
BODY_LENGTH_OVER = "mcp: response body of {length} bytes exceeds {limit}"
BODY_OVER = "mcp: response body exceeds {limit} bytes"
READING_FAILED = "reading the answer: {detail}"
NEEDS_AUTHORIZATION = "{refusal}: the server needs authorization"
NO_CREDENTIALS = "the credentials for the request could not be had: {detail}"
RESUME_GET = "GET to resume the answer"
RESUME_FAILED = "{what}: {error}"
STREAM_ENDED = "the server ended the answer's event stream without the answer"
RESUMED_TOO_OFTEN = "the answer's event stream was resumed {times} times without the answer"
SESSION_ENDED = "the server ended the session (HTTP {status})"
RESUME_REFUSED = "the server answered the GET that resumes the answer with {problem}"
RESUME_HTTP = "HTTP {status} {q_reason}"
RESUME_CONTENT_TYPE = "content type {q_media}"

# ------------------------------------------------------ the host-facing session (server*.py)
MESSAGE_TOO_LARGE = "the message is larger than {limit} bytes"
ID_IN_USE = "request id already in use"
INITIALIZE_BATCHED = "initialize must not be batched"
LOG_INTERNAL_ERROR = "internal error answering %s"  # a log record's format, filled by logging
SET_LEVEL_NEEDS_LEVEL = "logging/setLevel needs a level, one of: {levels}"
CALL_NEEDS_NAME = "tools/call needs a tool name"
ARGUMENTS_UNREADABLE = "the arguments cannot be read"
TASK_NOT_OBJECT = "params.task must be an object"
HOST_DID_NOT_ANSWER = "the host did not answer {method} in {timeout:g}s"

# ------------------------------------------- the 2026-07-28 revision (modern.py, tasks_wire.py)
META_NOT_OBJECT = "params._meta must be an object carrying {version_key} and {capabilities_key}"
META_MISSING = "params._meta is missing {keys}"
META_VERSION_NOT_STRING = "params._meta {key} must be a string"
META_CAPABILITIES_NOT_OBJECT = "params._meta {key} must be an object"
VERSION_NOT_SERVED = "protocol version {version} is not served; use one of: {served}"
INITIALIZE_REFUSED = "this session serves the {version} protocol; initialize is not accepted on it"
CAPABILITY_NEEDED = "the request needs the client capability {extension}"
TASK_IDS_NOT_STRINGS = "notifications.taskIds must be an array of strings"
