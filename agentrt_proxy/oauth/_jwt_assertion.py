"""A JWT client assertion signed with ES256 (``private_key_jwt``, RFC 7523 §2.2; MCP SEP-1046).

The standard library has no elliptic curves and the program takes no new dependency, so the
P-256 signature is computed here: ECDSA over NIST P-256 with SHA-256 and a deterministic nonce
(RFC 6979), the key read from a PKCS#8 or SEC 1 PEM. It only signs, a few times an hour, in the
operator's own process. Python's integers are not constant-time, so the key is exposed to
whoever can time this process closely; whoever can do that can also read its environment,
where the key comes from.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time

from agentrt_proxy.oauth._wire import OAuthError
from agentrt_proxy.text import oauth_text

__all__ = ["ASSERTION_TYPE", "assertion", "private_scalar", "sign"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
LIFETIME = 300  # seconds an assertion is valid

# NIST P-256 (SEC 2 secp256r1).
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
A = P - 3
G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)
P256_OID = bytes.fromhex("06082a8648ce3d030107")

Jacobian = tuple[int, int, int]


def _double(p: Jacobian) -> Jacobian:
    x, y, z = p
    if y == 0 or z == 0:
        return (0, 1, 0)
    yy = y * y % P
    s = 4 * x * yy % P
    zz = z * z % P
    m = (3 * x * x + A * zz * zz) % P
    nx = (m * m - 2 * s) % P
    return (nx, (m * (s - nx) - 8 * yy * yy) % P, 2 * y * z % P)


def _add(p: Jacobian, q: Jacobian) -> Jacobian:
    if p[2] == 0:
        return q
    if q[2] == 0:
        return p
    z1z1, z2z2 = p[2] * p[2] % P, q[2] * q[2] % P
    u1, u2 = p[0] * z2z2 % P, q[0] * z1z1 % P
    s1, s2 = p[1] * q[2] * z2z2 % P, q[1] * p[2] * z1z1 % P
    if u1 == u2:
        return _double(p) if s1 == s2 else (0, 1, 0)
    h, r = (u2 - u1) % P, (s2 - s1) % P
    hh = h * h % P
    hhh = h * hh % P
    v = u1 * hh % P
    nx = (r * r - hhh - 2 * v) % P
    return (nx, (r * (v - nx) - s1 * hhh) % P, h * p[2] * q[2] % P)


def _multiply_x(k: int) -> int:
    """The affine x of k·G (a Montgomery ladder: the same steps whatever the bits)."""
    r0: Jacobian = (0, 1, 0)
    r1: Jacobian = (G[0], G[1], 1)
    for i in reversed(range(256)):
        if (k >> i) & 1:
            r0, r1 = _add(r0, r1), _double(r1)
        else:
            r1, r0 = _add(r0, r1), _double(r0)
    x, _, z = r0
    return x * pow(z * z % P, -1, P) % P


def _nonce(d: int, digest: bytes) -> int:
    """RFC 6979 §3.2 with HMAC-SHA256: the nonce for ``digest`` under key ``d``."""
    x, h = d.to_bytes(32, "big"), (int.from_bytes(digest, "big") % N).to_bytes(32, "big")
    v, k = b"\x01" * 32, b"\x00" * 32
    k = hmac.new(k, v + b"\x00" + x + h, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    k = hmac.new(k, v + b"\x01" + x + h, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    while True:
        v = hmac.new(k, v, hashlib.sha256).digest()
        candidate = int.from_bytes(v, "big")
        if 1 <= candidate < N:
            return candidate
        k = hmac.new(k, v + b"\x00", hashlib.sha256).digest()
        v = hmac.new(k, v, hashlib.sha256).digest()


def sign(d: int, message: bytes) -> bytes:
    """The ES256 signature of ``message`` (JWS form: r and s, 32 bytes each)."""
    digest = hashlib.sha256(message).digest()
    z = int.from_bytes(digest, "big")
    k = _nonce(d, digest)
    r = _multiply_x(k) % N
    s = pow(k, -1, N) * (z + r * d) % N
    if r == 0 or s == 0:  # never for a real key; RFC 6979 would draw the next nonce
        raise OAuthError(oauth_text.SIGNATURE_DEGENERATE)
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def _tlv(data: bytes, at: int) -> tuple[int, bytes, int]:
    """One DER element at ``at``: its tag, its contents and where the next begins."""
    if at + 2 > len(data):
        raise ValueError("truncated")
    tag, length = data[at], data[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[at : at + count], "big")
        at += count
    if at + length > len(data):
        raise ValueError("truncated")
    return tag, data[at : at + length], at + length


def _children(data: bytes) -> list[tuple[int, bytes]]:
    out, at = [], 0
    while at < len(data):
        tag, value, at = _tlv(data, at)
        out.append((tag, value))
    return out


def _ec_private_key(der: bytes, curve_known: bool) -> int:
    """SEC 1 ``ECPrivateKey``: version 1, the scalar, and the curve unless the wrapper named it."""
    tag, body, _ = _tlv(der, 0)
    parts = _children(body) if tag == 0x30 else []
    if len(parts) < 2 or parts[0] != (0x02, b"\x01") or parts[1][0] != 0x04:
        raise ValueError(oauth_text.KEY_NOT_EC)
    params = next((value for tag, value in parts[2:] if tag == 0xA0), None)
    if not curve_known and params != P256_OID:
        raise ValueError(oauth_text.KEY_NOT_P256)
    d = int.from_bytes(parts[1][1], "big")
    if not 1 <= d < N:
        raise ValueError(oauth_text.KEY_SCALAR_RANGE)
    return d


def private_scalar(pem: str) -> int:
    """The P-256 private key of a PKCS#8 (``PRIVATE KEY``) or SEC 1 (``EC PRIVATE KEY``) PEM."""
    lines = [line.strip() for line in pem.strip().splitlines()]
    if len(lines) < 3 or not lines[0].startswith("-----BEGIN ") or not lines[-1].startswith("-----END "):
        raise OAuthError(oauth_text.KEY_NOT_PEM)
    kind = lines[0][len("-----BEGIN ") :].rstrip("-")
    try:
        der = base64.b64decode("".join(lines[1:-1]), validate=True)
        if kind == "EC PRIVATE KEY":
            return _ec_private_key(der, curve_known=False)
        if kind != "PRIVATE KEY":
            raise ValueError(oauth_text.KEY_WRONG_BLOCK.format(kind=kind))
        tag, body, _ = _tlv(der, 0)
        parts = _children(body) if tag == 0x30 else []
        if len(parts) < 3 or parts[1][0] != 0x30 or parts[2][0] != 0x04 or P256_OID not in parts[1][1]:
            raise ValueError(oauth_text.KEY_NOT_PKCS8)
        return _ec_private_key(parts[2][1], curve_known=True)
    except (ValueError, IndexError) as err:
        raise OAuthError(oauth_text.KEY_UNUSABLE.format(error=err)) from None


def _part(document: object) -> str:
    raw = json.dumps(document, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def assertion(client_id: str, audience: str, d: int, now: float | None = None) -> str:
    """A signed client assertion: the client as issuer and subject, the issuer as audience."""
    issued = int(time.time() if now is None else now)
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    signing_input = _part({"alg": "ES256", "typ": "JWT"}) + "." + _part(claims)
    signature = base64.urlsafe_b64encode(sign(d, signing_input.encode("ascii"))).rstrip(b"=").decode("ascii")
    return signing_input + "." + signature
