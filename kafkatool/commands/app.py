"""The ``kafkatool`` root command and the one error boundary that maps failures to exit codes.

Commands load lazily: ``kafkatool --version`` and ``--help`` import no command module (their names and one-line
helps are in ``registry``), ``kafkatool dump ...`` imports only ``kafkatool.commands.dump``. Every message about
the run has one form, ``kafkatool <command>: error|warning: ...``, on stderr.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Annotated, Any

import typer

import kafkatool
from kafkatool.commands import interrupts
from kafkatool.commands.examples import ROOT as ROOT_EXAMPLES
from kafkatool.commands.help import Group
from kafkatool.commands.options import memory_opt, set_root_memory
from kafkatool.commands.registry import BY_NAME, COMMANDS
from kafkatool.errors import ExitCode, KafkaToolError
from kafkatool.util.printable import shown

PROG = "kafkatool"


class RootGroup(Group):
    """The root: its subcommands are imported the first time they are asked for (by name: a run, the help of one
    command, a completion), and listed from the registry without importing anything."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [e.name for e in COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in BY_NAME:
            _register(BY_NAME[cmd_name].module)
            self.commands.update(_built(BY_NAME[cmd_name].module))
        return self.commands.get(cmd_name)

    def short_help_of(self, name: str) -> str:
        return BY_NAME[name].short_help


app = typer.Typer(
    name=PROG,
    cls=RootGroup,
    help="Offline operator toolkit for Apache Kafka log directories: dump, verify and rebuild indexes, "
    "convert message formats, simulate old-consumer fetches, scan with Spark. No broker needed.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=ROOT_EXAMPLES,
)


def _version(value: bool) -> None:
    if value:
        print(f"kafkatool {kafkatool.__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    memory: Annotated[str | None, memory_opt(
        "--memory", help="Memory budget of the whole run, for every command (e.g. 256MiB, 1GiB; env "
        "KAFKATOOL_MEMORY). A command's own --memory wins. [default: 256MiB; spark-scan with Spark: 2GiB]")] = None,
) -> None:
    """Offline operator toolkit for Apache Kafka log directories."""
    set_root_memory(memory)
    if _own_process:  # the console script's process runs a command: per-segment arrays reuse their pages
        from kafkatool.util.heap import keep_freed_heap  # not at start-up: ctypes (test_startup)

        keep_freed_heap()


# True when ``main`` runs as the console script (its own process, argv from sys.argv): only then may the CLI change
# the process's allocator (util/heap). ``main(argv)`` in another program's process (tests, a notebook) leaves it.
_own_process = False


_registered: dict[str, typer.Typer] = {}  # command module -> the Typer app its commands were registered on


def _register(module: str) -> typer.Typer:
    """Import the command module ``module`` and register its commands on an app of their own."""
    if module not in _registered:
        sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        importlib.import_module(f"kafkatool.commands.{module}").register(sub)
        _registered[module] = sub
    return _registered[module]


_built_commands: dict[str, dict[str, Any]] = {}


def _built(module: str) -> dict[str, Any]:
    """The click commands of ``module`` (a one-command app is a group here too: its commands by name), built once
    per process: building them reads every option's annotations, ~10 ms a module, and a process that runs
    commands in-process (tests, notebooks) runs many."""
    if module not in _built_commands:
        _built_commands[module] = dict(typer.main.get_group(_register(module)).commands)
    return _built_commands[module]


_root: list[Any] = []  # the root click group, built on the first run


def _root_command() -> Any:
    if not _root:
        _root.append(typer.main.get_command(app))
    return _root[0]


_complete = False  # every command registered on ``app`` itself (get_app)


def get_app() -> typer.Typer:
    """The Typer app with every command registered on it (for docs, completions and tests):
    ``typer.main.get_command(get_app()).commands`` has them all. A run of one command never calls this."""
    global _complete
    if not _complete:
        for module in dict.fromkeys(e.module for e in COMMANDS):
            importlib.import_module(f"kafkatool.commands.{module}").register(app)
        _complete = True
    return app


def command_words(args: list[str]) -> list[str]:
    """The command ``args`` runs (``["canary", "run"]``) as far as it can be read before parsing: the root's known
    options skipped, then the command and a group's subcommand."""
    words: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--memory":
            i += 2
            continue
        if a.startswith("-"):
            if words:
                i += 1
                continue
            return words
        if not words:
            if a not in BY_NAME:
                return words
            words.append(a)
        elif words == ["canary"] and a in ("plan", "run", "verify", "rehearse", "apply", "rollback"):
            words.append(a)
            return words
        else:
            return words
        i += 1
    return words


def prog(args: list[str]) -> str:
    """How messages about the run of ``args`` begin: ``kafkatool dump``, ``kafkatool canary run``."""
    return " ".join([PROG, *command_words(args)])


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, map every failure to one line and an exit code."""
    global _own_process
    _own_process = argv is None
    args = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in args or bool(os.environ.get("KAFKATOOL_TRACEBACK"))
    who = prog(args)
    with interrupts.catching() as redelivery:
        rc = _run(args, who, show_traceback, redelivery)
        redelivery.settle_quietly()  # a lost Ctrl-C still on its way after a failure: the failure's code stands
    _exit(rc)


def _run(args: list[str], who: str, show_traceback: bool, redelivery: interrupts.Redelivery) -> int:
    try:
        command = _root_command()
        # make_context + invoke rather than command.main(): click's main() turns EPIPE into exit 1, and a
        # closed pipe (``| head``) is not a failure.
        with command.make_context(PROG, args) as ctx:
            result = command.invoke(ctx)
        rc = result if isinstance(result, int) else ExitCode.OK
        redelivery.settle()  # a Ctrl-C lost as the command finished is raised here, not on the way out
    except BrokenPipeError:
        rc = ExitCode.OK  # the reader went away (``| head``): not an error
    except KafkaToolError as e:
        _traceback(show_traceback)
        if e.field is not None and e.path is None and e.position is None:
            _err(f"{who}: error: {option_for(args, e.field)}: {e.message}")
        elif e.field is not None and (option := _option_of(args, e.field)) is not None:
            _err(f"{who}: error: {e} ({option})")  # about bytes on disk, and the option that would change it
        else:
            _err(f"{who}: error: {e}")
        rc = e.exit_code
    except KeyboardInterrupt:
        interrupts.forget_caught()
        _err(f"{who}: interrupted")
        rc = ExitCode.INTERRUPTED
    except OSError as e:
        _traceback(show_traceback)
        where = f"{shown(e.filename)}: " if e.filename else ""
        _err(f"{who}: error: {where}{e.strerror or e}")
        rc = ExitCode.USAGE
    except MemoryError:
        _err(f"{who}: error: out of memory (lower --memory, or raise the machine's limit)")
        rc = ExitCode.USAGE
    except Exception as e:
        rc = _click_exit(e, who)
        if rc < 0:  # a bug: say so in one line, the traceback on request
            _traceback(show_traceback)
            _err(f"{who}: error: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)")
            rc = ExitCode.SOFTWARE
    return rc


def _click_exit(e: Exception, who: str) -> int:
    """The exit code of click's own exceptions (an exit, an abort, a usage error: printed here), or -1."""
    names = {c.__name__ for c in type(e).__mro__}
    if "Exit" in names:
        return int(getattr(e, "exit_code", ExitCode.USAGE))
    if "Abort" in names:
        return ExitCode.INTERRUPTED
    if "NoArgsIsHelpError" in names:
        getattr(e, "show")()  # noqa: B009 - a command run without arguments: its help (on stderr)
        return ExitCode.USAGE
    if "ClickException" in names:
        _err(_usage_line(e, who))
        return ExitCode.USAGE
    return -1


def _traceback(show: bool) -> None:
    if show:
        import traceback

        traceback.print_exc()


def option_for(args: list[str], field: str) -> str:
    """The option of the command ``args`` run that sets the library field ``field`` (``to_magic`` ->
    ``--to-magic``): the parameter of that name, its longest spelling; ``--`` + the field otherwise."""
    return _option_of(args, field) or "--" + field.replace("_", "-")


def _option_of(args: list[str], field: str) -> str | None:
    """The option of the command ``args`` run whose parameter is named ``field``, or None (the root's ``--memory``
    when the command has none). Hidden spellings (deprecated aliases) are never the answer."""
    chain: list[Any] = [typer.main.get_command(app)]
    for a in command_words(args):
        sub = chain[-1].get_command(None, a) if hasattr(chain[-1], "get_command") else None
        if sub is None:
            break
        chain.append(sub)
    for command in reversed(chain):
        for param in getattr(command, "params", []):
            if param.name == field and not getattr(param, "hidden", False) and param.opts \
                    and str(param.opts[0]).startswith("-"):
                return str(max(param.opts, key=len))
            if param.name == field and getattr(param, "param_type_name", "") == "argument":
                return str(getattr(param, "metavar", None) or param.name.upper())  # an argument: its metavar (DST)
    return None


def _usage_line(e: BaseException, who: str) -> str:
    """click's usage error as one line: what is wrong and where the help is (click's own show() prints the
    usage, a hint and a boxed message)."""
    message = getattr(e, "format_message", lambda: str(e))()
    ctx = getattr(e, "ctx", None)
    path = getattr(ctx, "command_path", None) or who
    text = " ".join(str(message).replace("Value error, ", "").split())
    return f"{path}: error: {text} (see '{path} --help')"


def _err(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        pass


def _exit(rc: int) -> None:
    # The work is done and ``rc`` says how it went: a Ctrl-C now (during interpreter shutdown) would only
    # print "Exception ignored ... KeyboardInterrupt" and lose the exit code.
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread (main() called from a test harness thread)
        pass
    # A closed stdout (``| head``) must not turn into a traceback at interpreter shutdown.
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(int(rc))
