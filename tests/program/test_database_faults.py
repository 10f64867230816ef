"""The database failing under the real program (issue 14, items 2 and 3): deleted or replaced
while serving. Each: the answer says nothing was executed, the fake
bank's ledger agrees, stderr has one line saying what happened, and nothing goes on being
written to a file nobody can open.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import is_error, text_of
from tests.program.test_serve_process import ALLOW_PAY, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_database_deleted_or_replaced_while_serving_refuses_every_call_and_executes_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], how: str
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        first = await host.call("bank_pay", {"to": "ann", "amount": 1})
        assert text_of(first) == "paid 1.00 to ann" and w.payments() == 1
        db = Path(w.db)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        if how == "replaced":
            db.write_bytes(b"")  # another file at the path: not the one the proxy opened
        for arguments in ({"to": "bob", "amount": 2}, {"to": "bob", "amount": 2}, {"to": "cy", "amount": 3}):
            result = await host.call("bank_pay", arguments)
            assert is_error(result) and text_of(result).startswith("UNAVAILABLE: "), text_of(result)
        assert w.payments() == 1  # nothing executed after the file went
        assert "deleted or replaced" in host.stderr
        assert "Traceback" not in host.stderr
        if how == "deleted":
            assert not db.exists()  # never a fresh database while it runs
        else:
            assert db.read_bytes() == b""
