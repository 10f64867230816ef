"""The walk in docs/design.md ("One tools/call, module by module") is the path a real call takes.

The proxy runs in process (tests/harness.py). The call the walk describes, the model's call of
``bank_pay`` once its approval was granted, is traced: every module of the package a function
is entered in while the call is handled (on the event loop under the session's ``call_tool``, or
in a worker thread the call handed work to). Each stop the walk lists from ``proxy/session`` on
must be entered, and every module entered must be a stop, a module a stop's line names as
borrowed, or the floor the walk names (``store/*``, ``canonical``, ``text``). The first stops
read the host's line before the call exists (``mcp/stdio_streams``, ``mcp/_bounded_lines``,
``mcp/server``): only their existence is checked (tests/architecture/test_the_walk.py).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tests.architecture.test_the_walk import NAMED, STOP, section
from tests.harness import proxy_harness, text_of

pytestmark = pytest.mark.anyio

FLOOR = ("store", "canonical", "text")  # the packages every stop stands on (the walk's own words)
# Entered by the proxy's own background work, never by the call: the task owner's loop.
BACKGROUND = ("agentrt_proxy.proxy._tasks", "agentrt_proxy.proxy._task_requests", "agentrt_proxy.store._tasks")


def as_dotted(name: str) -> str:
    return "agentrt_proxy." + name.replace("/", ".")


def on_the_call(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs for the host's call: the session's ``call_tool`` is below it."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module in BACKGROUND:
            return False
        if module == "agentrt_proxy.proxy.session" and frame.f_code.co_name == "call_tool":
            return True
        frame = frame.f_back
    return False


class Tracer:
    def __init__(self) -> None:
        self.entered: set[str] = set()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if module.startswith("agentrt_proxy.") and on_the_call(frame):
            self.entered.add(module)

    def in_thread(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, handed to a worker thread by the call: traced there too."""

        @functools.wraps(function)
        def traced(*args: Any) -> Any:
            sys.setprofile(self.profile_worker)
            try:
                return function(*args)
            finally:
                sys.setprofile(None)

        return traced

    def profile_worker(self, frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event == "call" and module.startswith("agentrt_proxy.") and module not in BACKGROUND:
            self.entered.add(module)


async def test_the_walk_in_the_design_is_the_path_of_a_collecting_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = section()
    stops = [name for _, name in STOP.findall(text)]
    walked = stops[stops.index("proxy/session") :]
    allowed = {as_dotted(name) for name in NAMED.findall(text)}

    async with proxy_harness(tmp_path) as h:
        await h.call("bank_pay", {"to": "carol", "amount": 3})  # PENDING_APPROVAL
        [approval] = h.pending()
        h.approve(approval.id)
        tracer = Tracer()
        run_sync = anyio.to_thread.run_sync

        async def traced_run_sync(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            if on_the_call(sys._getframe(1)):
                function = tracer.in_thread(function)
            return await run_sync(function, *args, **kwargs)

        monkeypatch.setattr(anyio.to_thread, "run_sync", traced_run_sync)
        sys.setprofile(tracer.profile)
        try:
            result = await h.call("bank_pay", {"to": "carol", "amount": 3})
        finally:
            sys.setprofile(None)
            monkeypatch.undo()
        assert text_of(result) == "paid 3.00 to carol" and h.payments() == 1

    missed = [name for name in walked if as_dotted(name) not in tracer.entered]
    assert missed == [], f"stops of the walk the call never entered: {missed}"
    unlisted = sorted(
        module for module in tracer.entered if module not in allowed and module.split(".")[1] not in FLOOR
    )
    assert unlisted == [], f"modules the call entered that the walk does not name: {unlisted}"
