"""The ES256 client assertion (``private_key_jwt``): the signature against RFC 6979's own test
vector and against an independent verifier, the key read from both PEM forms, bad keys refused."""

from __future__ import annotations

import base64
import json

import pytest

from agentrt_proxy.oauth._jwt_assertion import assertion, private_scalar, sign
from agentrt_proxy.oauth._wire import OAuthError

# RFC 6979 A.2.5: P-256, SHA-256, message "sample".
RFC_KEY = 0xC9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721
RFC_R = 0xEFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716
RFC_S = 0xF7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8


def test_the_signature_is_rfc_6979s_for_its_test_vector() -> None:
    assert sign(RFC_KEY, b"sample") == RFC_R.to_bytes(32, "big") + RFC_S.to_bytes(32, "big")


def _unpadded(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.parametrize("form", ["PKCS8", "TraditionalOpenSSL"])
def test_an_assertion_verifies_with_an_independent_library_and_names_the_client(form: str) -> None:
    crypto = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    key = crypto.generate_private_key(crypto.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, getattr(serialization.PrivateFormat, form), serialization.NoEncryption()
    ).decode()
    token = assertion("machine", "https://as.example", private_scalar(pem), now=1000)
    head, body, signature = token.split(".")
    raw = _unpadded(signature)
    r, s = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    key.public_key().verify(encode_dss_signature(r, s), f"{head}.{body}".encode(), crypto.ECDSA(hashes.SHA256()))
    claims = json.loads(_unpadded(body))
    assert json.loads(_unpadded(head)) == {"alg": "ES256", "typ": "JWT"}
    assert (claims["iss"], claims["sub"], claims["aud"], claims["iat"], claims["exp"]) == (
        "machine", "machine", "https://as.example", 1000, 1300,
    )  # fmt: skip


BAD_KEYS = [
    ("not a pem", "not a PEM block"),
    ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "a PUBLIC KEY block"),
    ("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----", "cannot be used for ES256"),
    ("-----BEGIN PRIVATE KEY-----\nMAMCAQA=\n-----END PRIVATE KEY-----", "not a PKCS#8 P-256 key"),
]


@pytest.mark.parametrize(("pem", "message"), BAD_KEYS)
def test_a_key_that_is_not_a_p256_private_key_is_refused(pem: str, message: str) -> None:
    with pytest.raises(OAuthError, match=message):
        private_scalar(pem)
