"""What the proxy's OAuth client tells the operator (oauth/): why a login, a refresh or a token
file failed, and what ``check`` says of a token. No model reads these (model_text says what a model
is told about a server that needs a login). Values are filled in quoted or escaped by the caller.
"""

from __future__ import annotations

# ------------------------------------------------------------------------------ the browser's callback (_callback.py)
CALLBACK_WRONG_ISSUER = "the callback's iss {q_iss} is not the issuer {q_issuer} (RFC 9207)"
CALLBACK_NO_ISSUER = "the callback carries no iss, which the issuer {q_issuer} advertises (RFC 9207)"
CALLBACK_ERROR = "the authorization server answered {error}{detail}"
CALLBACK_ERROR_DETAIL = " ({description})"
CALLBACK_NO_CODE = "the callback carries no code"
CALLBACK_CANNOT_LISTEN = "cannot listen on 127.0.0.1:{port} for the callback: {error}"
CALLBACK_TIMED_OUT = "no authorization came back within {seconds}s"

# ------------------------------------------------------------------------------ discovery (_discovery.py)
SERVER_METADATA_NO_ENDPOINTS = "the authorization server metadata at {q_url} names no authorization or token endpoint"
SERVER_METADATA_OTHER_ISSUER = (
    "the authorization server metadata at {q_url} is for issuer {q_named}, not {q_issuer} (RFC 8414 §3.3)"
)
SERVER_METADATA_NONE = "no authorization server metadata found for {q_issuer} (tried {tried})"
RESOURCE_METADATA_NO_SERVER = "the protected resource metadata at {q_url} names no authorization server"
RESOURCE_METADATA_OTHER = "the protected resource metadata at {q_url} is for resource {q_resource}, not {q_endpoint}"
NEEDS_NO_LOGIN = (
    "{q_endpoint} answered without asking for authorization and publishes no protected resource metadata: "
    "it needs no login"
)

# ---------------------------------------------------------------------------- the token endpoint (_grants.py, _wire.py)
TOKEN_ENDPOINT_ANSWERED = "the token endpoint {q_endpoint} answered {error}"
TOKEN_ENDPOINT_NO_TOKEN = "the token endpoint {q_endpoint} answered no access_token"
TOKEN_ENDPOINT_NOT_BEARER = "the token endpoint {q_endpoint} issued a {q_kind} token, not a Bearer one"
NO_REFRESH_TOKEN = "the token cannot be refreshed: the authorization server issued no refresh token"
ANSWER_TOO_LONG = "the answer from {q_url} is longer than {most} bytes"

# ------------------------------------------------------------------------------ the client's key (_jwt_assertion.py)
SIGNATURE_DEGENERATE = "the ES256 signature came out degenerate"
KEY_NOT_EC = "not an EC private key"
KEY_NOT_P256 = "the key is not on P-256"
KEY_SCALAR_RANGE = "the key's scalar is out of range"
KEY_NOT_PEM = "the private key is not a PEM block"
KEY_WRONG_BLOCK = "a {kind} block, not PRIVATE KEY or EC PRIVATE KEY"
KEY_NOT_PKCS8 = "not a PKCS#8 P-256 key"
KEY_UNUSABLE = "the private key cannot be used for ES256: {error}"

# ------------------------------------------------------------------------------ login (login.py)
REGISTRATION_ANSWERED = "dynamic client registration at {q_endpoint} answered {error}"
NO_REGISTRATION = (
    "server {q_server}: the authorization server {q_issuer} offers no dynamic client registration{nor_metadata}"
    ": register a client with it and give its id as auth.client_id"
)
NOR_METADATA_DOCUMENT = " and takes no client ID metadata document"
NO_PKCE = (
    "server {q_server}: the authorization server {q_issuer} does not list S256 in "
    "code_challenge_methods_supported, so PKCE cannot be relied on: refused"
)

# ------------------------------------------------------------------------------ serving and check (serving.py)
UNAUTHORIZED_NOT_REFRESHED = "it answered HTTP 401 and the token could not be refreshed"
REFRESH_FAILED = "server {server}: refreshing its OAuth token failed: {error}"
RENEWED_ON_USE = " (it is renewed on use)"
NOT_RENEWABLE = " (it cannot be renewed: log in again)"
HELD_NO_EXPIRY = "held, with no expiry given"
EXPIRED = "expired{then}"
ABOUT_TO_EXPIRE = "about to expire, in {seconds}s{then}"
HELD_EXPIRING = "held, expiring in {minutes} min"

# ------------------------------------------------------------------------------ the token file (tokens.py)
TOKEN_FILE_ERROR = "token file {file}: {error}"
TOKEN_FILE_REFUSED = "token file {error}"
TOKEN_FILE_NOT_JSON = "token file {file} is not JSON: remove it and log in again"
TOKEN_FILE_NO_LIST = "token file {file} holds no token list: remove it and log in again"
TOKEN_FILE_READABLE = "token file {file} has mode {mode}, which lets its group or others read it: chmod 600 it"
TOKEN_FILE_LOCK = "token file lock {file}: {error}"
