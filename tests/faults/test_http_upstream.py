"""The fault matrix, streamable-HTTP upstream (issue 14, item 10).

The server is ``fixtures/faulty_http_bank.py``: a payment is written to its ledger (it
executed), then the answer fails as the fault file says. An HTTP 500, a connection reset in the
middle of the body, or an SSE stream that stalls past the tool's timeout leaves the outcome
unknown: UNKNOWN_OUTCOME, other payments BLOCKED, an operator decides. TLS to a server whose
certificate is self-signed fails before anything is sent: the payment answers that nothing was
sent, the server saw no request, and once the certificate is trusted (SSL_CERT_FILE) the server
is picked up and the payment pays once. Each: one stderr line per event and no traceback,
nothing half recorded, and the next payment pays once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.conftest import REPO_ROOT, run_program
from tests.faults.worlds import (
    ANN,
    BOB,
    assert_nothing_half_recorded,
    assert_one_line_each,
    balance_answers,
    new_lines,
    pinned_world,
)
from tests.harness import is_error, text_of
from tests.program.test_serve_process import World, prefix, proxy

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]

FAULTY = str(REPO_ROOT / "tests" / "fixtures" / "faulty_http_bank.py")
MATRIX = {"http500": "HTTP 500", "http400": "HTTP 400", "reset": "may have", "stall": "timed out"}


@contextmanager
def http_bank(directory: Path, **tls: str) -> Iterator[str]:
    """The faulty HTTP bank, running until the block ends: its endpoint."""
    env = {
        "PYTHONPATH": str(REPO_ROOT),
        "FAKE_PAYMENTS_LEDGER": str(directory / "ledger"),
        "FAULT_FILE": str(directory / "fault"),
        "REQUEST_LOG": str(directory / "requests"),
        **tls,
    }
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
    child = subprocess.Popen([sys.executable, FAULTY], env=env, text=True, **pipes)  # type: ignore[call-overload]
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}/mcp"
    finally:
        child.kill()
        child.wait(5)


def requests(directory: Path) -> list[str]:
    path = directory / "requests"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("fault", list(MATRIX))
async def test_a_payment_meeting_an_http_fault_is_an_unknown_outcome_and_the_next_one_pays(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], fault: str
) -> None:
    with http_bank(tmp_path) as endpoint:
        w = await pinned_world(tmp_path, program_argv, program_env, {"endpoint": endpoint})
        async with proxy(w) as host:
            await balance_answers(host)
            before = host.stderr
            (tmp_path / "fault").write_text(fault)
            result = await host.call("bank_pay", ANN)
            assert w.payments() == 1
            text = text_of(result)
            assert prefix(result) == "UNKNOWN_OUTCOME" and not is_error(result), text
            assert MATRIX[fault] in text, text
            await anyio.sleep(0.3)
            lines = new_lines(host.stderr, before)
            assert_one_line_each(lines)
            assert sum("its outcome is unknown" in line for line in lines) == 1, lines
            other = await host.call("bank_pay", BOB)
            assert prefix(other) == "BLOCKED" and w.payments() == 1, text_of(other)
            [waiting] = w.pending()
            await w.reject(waiting, "checked with the bank: paid")
            assert_nothing_half_recorded(w)
            after = await host.call("bank_pay", BOB)
            assert text_of(after) == "paid 2.00 to bob" and w.payments() == 2, text_of(after)
            assert_nothing_half_recorded(w)
            assert "Traceback" not in host.stderr


def recorded_failures(w: World) -> list[str]:
    """The failure each tool step of the database recorded, in order."""
    with w.store() as store, store.read() as conn:
        rows = conn.execute(
            "SELECT observation_json FROM steps WHERE observation_json LIKE '%tool_error%' ORDER BY rowid"
        )
        return [json.loads(obs)["content"].get("failure", "") for (obs,) in rows]


async def test_a_payment_refused_with_http_404_in_the_new_session_too_is_unknown_never_nothing_sent(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    with http_bank(tmp_path) as endpoint:
        w = await pinned_world(tmp_path, program_argv, program_env, {"endpoint": endpoint})
        async with proxy(w) as host:
            await balance_answers(host)
            before = host.stderr
            (tmp_path / "fault").write_text("http404_twice")
            result = await host.call("bank_pay", ANN)
            text = text_of(result)
            # The server was sent the payment whole twice (in the forgotten session and in the new
            # one) and acted on it both times: the proxy must not say nothing was sent.
            assert w.payments() == 2
            assert requests(tmp_path).count("POST tools/call") == 3  # balance, then the payment twice
            assert prefix(result) == "UNKNOWN_OUTCOME", text
            assert "HTTP 404" in text and "refused by the server" in text and "nothing was sent" not in text, text
            assert recorded_failures(w) == ["http_status"]
            lines = new_lines(host.stderr, before)
            assert_one_line_each(lines)
            assert sum("its outcome is unknown" in line for line in lines) == 1, lines
            assert not any("nothing was sent" in line for line in lines), lines
            [waiting] = w.pending()
            assert waiting.kind == "interrupted_side_effect"
            await w.reject(waiting, "checked with the bank: paid twice")
            assert_nothing_half_recorded(w)
            after = await host.call("bank_pay", BOB)
            assert text_of(after) == "paid 2.00 to bob" and w.payments() == 3, text_of(after)


def self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_tls_to_a_self_signed_server_sends_nothing_and_once_trusted_the_payment_pays_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    cert, key = self_signed(tmp_path)
    with http_bank(tmp_path) as plain:  # the pin, over plain HTTP: the same tools
        w = await pinned_world(tmp_path, program_argv, program_env, {"endpoint": plain})
    trust = tmp_path / "trusted.pem"  # absent: nothing but the system's roots is trusted
    with http_bank(tmp_path, TLS_CERT=str(cert), TLS_KEY=str(key)) as endpoint:
        w.config.write_text(w.config.read_text().replace(plain, endpoint))
        refused = await anyio.to_thread.run_sync(
            lambda: run_program(["check", "-config", str(w.config)], env={"SSL_CERT_FILE": str(trust)}, timeout=30)
        )
        assert refused.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
        sent_before = [r for r in requests(tmp_path) if r.startswith("POST")]
        w = World(w.directory, w.config, w.argv, {**w.env, "SSL_CERT_FILE": str(trust)})
        async with proxy(w) as host:
            result = await host.call("bank_pay", ANN)
            assert is_error(result) and "nothing was sent to the server" in text_of(result), text_of(result)
            assert [r for r in requests(tmp_path) if r.startswith("POST")] == sent_before  # no byte of MCP
            assert w.payments() == 0
            lines = new_lines(host.stderr, "")
            assert_one_line_each(lines)
            assert any("CERTIFICATE_VERIFY_FAILED" in line for line in lines), lines
            trust.write_bytes(cert.read_bytes())  # the operator trusts the certificate
            await balance_answers(host, seconds=40)  # the supervisor connects again on its own
            after = await host.call("bank_pay", ANN)
            assert text_of(after) == "paid 1.00 to ann" and w.payments() == 1, text_of(after)
            assert_nothing_half_recorded(w)
            assert "Traceback" not in host.stderr
