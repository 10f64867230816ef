"""``agentrt-proxy demo``: the whole product in one command, with no model, no key and no Node.

A scripted host (the project's own MCP client, no SDK) starts the real proxy (``serve``) as
a child process, in front of the fake payment server bundled in the package
(``agentrt_proxy.testing.fakebank``), in a temporary directory it creates and removes (``-keep``
keeps it). The operator is a second process running the real ``approve``/``reject``
subcommands. The demo narrates its steps (spec proxy-and-mcp-module §4.2, and later issues):

1. a read the policy allows runs and answers;
2. a payment waits for an operator, is approved from a second process, and is collected once;
3. the proxy is killed with SIGKILL while a payment is inside the server; after a restart the
   identical call reports the outcome unknown (INTERRUPTED) and waits for the operator, who
   rejects it; the identical call is then REJECTED and a different payment runs again;
4. a host that lost a response retries the identical call: one payment through the proxy,
   two straight against the server;
5. the server dies between an approval and its collection: nothing is sent, the approval stands,
   and once the server is started again the identical call pays once with no second approval;
6. a payment past the budget is OVER_BUDGET;
7. the server rewords a tool's description: ``check`` refuses the tool and shows the review (a
   unified diff), and a bare ``pin`` will not take the change (decision 0018);
8. an approval as a task: a hand-written host of the 2026-07-28 revision that declared the tasks
   extension calls once, gets a task, polls it; the operator approves and the proxy itself pays
   once and completes the task with the result (decision 0020).

It ends with the ledger, ``runs`` and ``verify`` as the operator sees them. Exit 0 only
when every step behaved as narrated; exit 1 with one line naming the first that did not.

The scene (directory, files, commands, host sessions) is ``demo_scene``; the steps live by
theme in ``demo_calls`` (1, 2, 4, 6), ``demo_crashes`` (3, 5) and ``demo_changes`` (7, 8); the
processes, the transcript and the hand-written modern host are ``demo_stage``.

Every child is started with the same program the demo runs from: the single file
(``python3 agentrt-proxy.pyz``) when the package is imported from a zip, else
``python -m agentrt_proxy`` with the package's directory on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from agentrt_proxy.cli import demo_calls, demo_changes, demo_crashes
from agentrt_proxy.cli.demo_scene import Scene
from agentrt_proxy.cli.demo_stage import DemoFailure, first_failure, indented, say, stop_everything, this_program
from agentrt_proxy.cli.flags import UsageError, parse

__all__ = ["command", "main"]

DEMO_DEADLINE_SECONDS = 180


async def walk(scene: Scene) -> None:
    """Every step in order: the set-up, two proxies' lifetimes (the first killed), then the review
    and the task, each within the demo's deadline."""
    import anyio

    say("agentrt-proxy demo: a scripted host, the proxy and a fake payment server; no model, no key, no Node.")
    say(f"agentrt-proxy below is: {scene.program.shown}")
    say(f"working in {scene.directory}")
    say()
    say("The operator's configuration, proxy.json (mode 0600): pay needs an approval, balance is a read,")
    say("refund is left unclassified so the model never sees it; hold 0s answers at once; lease_ttl 3s;")
    say("payments spend from a budget of 1400 per 30 days, priced by their amount argument.")
    indented(scene.write_configuration(), "  ")
    say()
    scene.shell(["pin", "-config", "proxy.json"], what="pin")
    scene.shell(["check", "-config", "proxy.json"], what="check")
    say()

    with anyio.fail_after(DEMO_DEADLINE_SECONDS):
        async with scene.proxy() as host:
            names = [t.name for t in host.tools]
            say(f"The host starts the proxy (serve -config proxy.json) and lists its tools: {', '.join(names)}")
            if sorted(names) != ["bank_balance", "bank_pay", "gate_status"]:
                raise DemoFailure(f"start: the proxy should offer bank_balance, bank_pay, gate_status, not {names}")
            say()
            await demo_calls.step1(scene, host)
            await demo_calls.step2(scene, host)
            await demo_crashes.step3_kill(scene, host)
        async with scene.proxy() as host:
            await demo_crashes.step3_after_restart(scene, host)
            await demo_calls.step4(scene, host)
            await demo_crashes.step5(scene, host)
            await demo_calls.step6(scene, host)
    demo_changes.step7_review(scene)
    with anyio.fail_after(DEMO_DEADLINE_SECONDS):
        await demo_changes.step8_task(scene)


def epilogue(scene: Scene) -> None:
    say("What the operator sees afterwards.")
    say("The fake bank's ledger (one line per payment it made):")
    for line in scene.ledger_lines():
        say(f"  {line}")
    scene.shell(["runs", "-db", "runs.db"], what="runs")
    out = scene.shell(["verify", "-db", "runs.db"], what="verify")
    if not out.strip():
        raise DemoFailure("verify: printed nothing")
    say()


# --------------------------------------------------------------------------- entry points


def command(argv: list[str]) -> int:
    flags = parse(argv, switches=("keep",))
    if flags.positionals:
        raise UsageError("demo takes only -keep")
    keep = flags.on("keep")
    program = this_program()
    directory = Path(tempfile.mkdtemp(prefix="agentrt-proxy-demo-")).resolve()
    os.chmod(directory, 0o700)
    scene = Scene(program, directory)
    failure: str | None = None
    try:
        import anyio

        anyio.run(walk, scene)
        epilogue(scene)
    except DemoFailure as err:
        failure = str(err)
    except TimeoutError:
        failure = f"the demo did not finish within {DEMO_DEADLINE_SECONDS} s"
    except Exception as err:  # an exception group holding a step's failure
        first = first_failure(err)
        if first is None:
            raise
        failure = str(first)
    except KeyboardInterrupt:
        failure = "interrupted"
    try:
        stop_everything(directory)
    except DemoFailure as err:
        failure = failure or str(err)
    if failure is not None:
        say(f"demo failed: {failure}")
        sys.stderr.write(f"agentrt-proxy: demo: {failure}\n")
        say(f"the demo's directory is kept for a look: {directory}")
        return 1
    say("every process the demo started has exited.")
    if keep:
        say(f"kept {directory}; read it with:")
        say(f"  {program.shown} runs -db {shlex.quote(str(directory / 'runs.db'))}")
        say(f"  {program.shown} show -db {shlex.quote(str(directory / 'runs.db'))} RUN")
        say(f"  cat {shlex.quote(str(directory / 'ledger.txt'))}")
    else:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m agentrt_proxy.demo [-keep]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return command(args)
    except UsageError as err:
        sys.stderr.write(f"agentrt-proxy: demo: {err}\nusage: agentrt-proxy demo [-keep]\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
