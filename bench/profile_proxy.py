"""Run the proxy from the .pyz under cProfile, the event loop and every worker thread.

``python profile_proxy.py PYZ OUT.prof serve -config FILE``: the main thread is profiled
from the start; each function the proxy sends to a worker thread (``anyio.to_thread``:
the store's transactions) runs under that thread's own profiler; at exit all are merged
into OUT.prof (read it with ``python -m pstats``). Measurement only.
"""

from __future__ import annotations

import atexit
import cProfile
import pstats
import sys
import threading

pyz, out = sys.argv[1], sys.argv[2]
sys.argv = [pyz, *sys.argv[3:]]
sys.path.insert(0, pyz)

import anyio.to_thread  # noqa: E402

_profiles: dict[int, cProfile.Profile] = {}
_original = anyio.to_thread.run_sync


async def run_sync(func, *args, **kwargs):  # type: ignore[no-untyped-def]
    def profiled(*a):  # type: ignore[no-untyped-def]
        p = _profiles.setdefault(threading.get_ident(), cProfile.Profile())
        p.enable()
        try:
            return func(*a)
        finally:
            p.disable()

    return await _original(profiled, *args, **kwargs)


anyio.to_thread.run_sync = run_sync
main_profile = cProfile.Profile()


def dump() -> None:
    main_profile.disable()
    stats = pstats.Stats(main_profile)
    for p in _profiles.values():
        stats.add(p)
    stats.dump_stats(out)


atexit.register(dump)
from agentrt_proxy.cli.main import main  # noqa: E402

main_profile.enable()
sys.exit(main())
