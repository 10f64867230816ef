"""The command line: one program, one subcommand per job.

Exit codes: 0 success, 1 failure, 2 usage error. Subcommand modules are imported only
when chosen, so ``--help`` and ``--version`` start as fast as the interpreter allows and
``serve`` never pays for what it does not use before answering ``initialize``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from agentrt_proxy import __version__
from agentrt_proxy.errors import AgentrtError, UsageError
from agentrt_proxy.errors.bugs import write_traceback
from agentrt_proxy.text.cli_text import (
    PROGRAM,
    damaged_copy,
    help_text,
    no_command,
    unexpected_error,
    unknown_command,
    usage_hint,
)

# Each command's module is imported only when it is chosen (lazy on purpose: ``--help`` and
# ``--version`` start as fast as the interpreter, and ``serve`` loads nothing it does not use
# before answering ``initialize``).


def _serve(args: list[str]) -> int:
    from agentrt_proxy.cli import _serve as serve

    return serve.command(args)


def _pin(args: list[str]) -> int:
    from agentrt_proxy.cli import _pin as pin

    return pin.pin_command(args)


def _check(args: list[str]) -> int:
    from agentrt_proxy.cli import _pin as pin

    return pin.check_command(args)


def _scan(args: list[str]) -> int:
    from agentrt_proxy.cli import _scan as scan

    return scan.command(args)


def _recheck(args: list[str]) -> int:
    from agentrt_proxy.cli import _recheck as recheck

    return recheck.command(args)


def _runs(args: list[str]) -> int:
    from agentrt_proxy.cli import _reading as reading

    return reading.runs_command(args)


def _show(args: list[str]) -> int:
    from agentrt_proxy.cli import _reading as reading

    return reading.show_command(args)


def _approve(args: list[str]) -> int:
    from agentrt_proxy.cli import _deciding as deciding

    return deciding.approve_command(args)


def _reject(args: list[str]) -> int:
    from agentrt_proxy.cli import _deciding as deciding

    return deciding.reject_command(args)


def _budget(args: list[str]) -> int:
    from agentrt_proxy.cli import _budget as budget

    return budget.command(args)


def _verify(args: list[str]) -> int:
    from agentrt_proxy.cli import _verify_file as verify_file

    if verify_file.wants_file(args):
        return verify_file.command(args)  # an export, offline: no database
    from agentrt_proxy.cli import _verify_chain as verify_chain

    return verify_chain.verify_command(args)


def _export(args: list[str]) -> int:
    from agentrt_proxy.cli import _export as export

    return export.command(args)


def _watch(args: list[str]) -> int:
    from agentrt_proxy.cli import _watch as watch

    return watch.command(args)


def _console(args: list[str]) -> int:
    from agentrt_proxy.cli import _console as console

    return console.command(args)


def _login(args: list[str]) -> int:
    from agentrt_proxy.cli import _login as login

    return login.login_command(args)


def _logout(args: list[str]) -> int:
    from agentrt_proxy.cli import _login as login

    return login.logout_command(args)


def _demo(args: list[str]) -> int:
    from agentrt_proxy.cli import demo

    return demo.command(args)


# name -> the function that runs it: it takes the arguments after the name and returns the exit code.
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "serve": _serve,
    "pin": _pin,
    "check": _check,
    "scan": _scan,
    "recheck": _recheck,
    "runs": _runs,
    "show": _show,
    "approve": _approve,
    "reject": _reject,
    "budget": _budget,
    "verify": _verify,
    "export": _export,
    "watch": _watch,
    "console": _console,
    "login": _login,
    "logout": _logout,
    "demo": _demo,
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "-help", "--help", "help"):
        sys.stdout.write(help_text())
        return 0
    if args and args[0] in ("-version", "--version", "version"):
        sys.stdout.write(f"{PROGRAM} {__version__}\n")
        return 0
    if not args:
        sys.stderr.write(no_command())
        return 2
    name = "serve" if args[0].startswith("-") else args.pop(0)
    if name not in COMMANDS:
        sys.stderr.write(unknown_command(name))
        return 2
    try:
        return COMMANDS[name](args)
    except ImportError as err:
        if not (err.name or "").startswith("agentrt_proxy"):
            raise
        # Every command ships in the package: only a damaged copy of the program gets here.
        sys.stderr.write(damaged_copy(name, err))
        return 1
    except UsageError as err:
        sys.stderr.write(f"{PROGRAM}: {name}: {err}\n{usage_hint(name)}")  # one line and a hint
        return 2
    except AgentrtError as err:
        # A refusal a command did not word itself: one line naming it, never a traceback.
        sys.stderr.write(f"{PROGRAM}: {name}: {err}\n")
        return 1
    except BrokenPipeError:
        # A reader such as `head` stopped reading: stop quietly, as a Go program would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # the one frame for a bug: a line for the operator, the rest in a file
        sys.stderr.write(unexpected_error(name, err, write_traceback(err)))
        return 1
