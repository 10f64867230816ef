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
   once and completes the task with the result (decision 0020);
9. a payment whose answer comes after pay's timeout: its outcome is unknown, so its reservation
   stays spent though the bank paid nothing; the operator, who knows it did not, gives it back
   with ``budget release`` and reads the budget before and after (decision 0017);
10. a description that asks the model for something (to call another tool, to keep it from the
   user): the operator accepts exactly that change, and the scan still refuses the tool at pin
   time, saying what the description asks (decision 0022).

It ends with the ledger, ``runs`` and ``verify`` as the operator sees them. Exit 0 only
when every step behaved as narrated; exit 1 with one line naming the first that did not.

The scene (directory, files, commands, host sessions) is ``demo_scene``; the steps live by
theme in ``demo_calls`` (1, 2, 4, 6), ``demo_crashes`` (3, 5), ``demo_changes`` (7, 8, 10) and
``demo_release`` (9); the processes, the transcript and the hand-written modern host are
``demo_stage``.

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

from agentrt_proxy.cli import _demo_calls as demo_calls
from agentrt_proxy.cli import _demo_changes as demo_changes
from agentrt_proxy.cli import _demo_crashes as demo_crashes
from agentrt_proxy.cli import _demo_release as demo_release
from agentrt_proxy.cli._demo_scene import Scene
from agentrt_proxy.cli._demo_stage import DemoFailure, first_failure, indented, say, stop_everything, this_program
from agentrt_proxy.cli._flags import UsageError, parse
from agentrt_proxy.text import demo_text as words

__all__ = ["command", "main"]

DEMO_DEADLINE_SECONDS = 180


async def walk(scene: Scene) -> None:
    """Every step in order: the set-up, two proxies' lifetimes (the first killed), then the review
    and the task, each within the demo's deadline."""
    import anyio

    say(words.OPENING)
    say(words.program_is(scene.program.shown))
    say(words.working_in(scene.directory))
    say()
    for line in words.CONFIGURATION_EXPLAINED:
        say(line)
    indented(scene.write_configuration(), "  ")
    say()
    scene.shell(["pin", "-config", "proxy.json"], what="pin")
    scene.shell(["check", "-config", "proxy.json"], what="check")
    say()

    with anyio.fail_after(DEMO_DEADLINE_SECONDS):
        async with scene.proxy() as host:
            names = [t.name for t in host.tools]
            say(words.host_lists_tools(names))
            if sorted(names) != ["bank_balance", "bank_pay", "gate_status"]:
                raise DemoFailure(words.start_wrong_tools(names))
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
        await demo_release.step9_release(scene)
    demo_changes.step10_scan(scene)


def epilogue(scene: Scene) -> None:
    say(words.AFTERWARDS)
    say(words.LEDGER_HEADING)
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
        raise UsageError(words.ONLY_KEEP)
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
        failure = words.not_within_deadline(DEMO_DEADLINE_SECONDS)
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
        say(words.demo_failed(failure))
        sys.stderr.write(words.demo_error_line(failure))
        say(words.kept_for_a_look(directory))
        return 1
    say(words.EVERY_PROCESS_EXITED)
    if keep:
        say(words.kept_read_it(directory))
        say(words.read_runs_with(program.shown, shlex.quote(str(directory / "runs.db"))))
        say(words.read_show_with(program.shown, shlex.quote(str(directory / "runs.db"))))
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
        sys.stderr.write(words.demo_usage_error(err))
        return 2


if __name__ == "__main__":
    sys.exit(main())
