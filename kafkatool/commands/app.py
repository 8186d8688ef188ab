"""The ``kafkatool`` root command and the one error boundary that maps failures to exit codes."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Annotated, Any

import typer

import kafkatool
from kafkatool.commands.options import memory_opt, set_root_memory
from kafkatool.errors import ExitCode, KafkaToolError
from kafkatool.util.printable import shown


def _click_classes(name: str) -> tuple[type[BaseException], ...]:
    """``name`` from click's exceptions as typer uses them: typer >= 0.2x vendors click (``typer._click``, and
    click itself may not even be installed); older typer raises click's own classes."""
    out = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            out.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(out)


_USAGE_ERRORS: tuple[type[BaseException], ...] = _click_classes("ClickException")
_EXITS: tuple[type[BaseException], ...] = (typer.Exit, *_click_classes("Exit"))
_ABORTS: tuple[type[BaseException], ...] = (typer.Abort, *_click_classes("Abort"))

app = typer.Typer(
    name="kafkatool",
    help="Offline operator toolkit for Apache Kafka log directories: dump, verify and rebuild indexes, "
    "convert message formats, simulate old-consumer fetches, scan with Spark. No broker needed.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
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


# Subcommand modules, in the order ``--help`` lists them. Each has ``register(app)``.
COMMAND_MODULES: list[str] = [
    "dump",
    "metadata",
    "reindex_time",
    "downconvert",
    "upconvert",
    "fetch_sim",
    "canary",
    "spark_scan",
    "sample",
    "completion",
]

_loaded: list[str] = []  # command modules registered so far


def _register(only: str | None = None) -> None:
    """Register every command module (``only``: just that one, for a run of that command: importing all of
    them costs a third of a second of CPU at every start). The order is always COMMAND_MODULES'."""
    for name in COMMAND_MODULES if only is None else [only]:
        if name not in _loaded:
            importlib.import_module(f"kafkatool.commands.{name}").register(app)
            _loaded.append(name)
    if only is None:
        order = {name.replace("_", "-"): i for i, name in enumerate(COMMAND_MODULES)}
        app.registered_commands.sort(key=lambda c: order.get(c.name or "", len(order)))


def _command_module(args: list[str]) -> str | None:
    """The module of the subcommand ``args`` run, when only known root options come before it (else None:
    ``--help``, ``--version``, a typo... need the whole app)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--memory":
            i += 2
        elif a.startswith("--memory="):
            i += 1
        elif a.startswith("-"):
            return None
        else:
            name = a.replace("-", "_")
            return name if name in COMMAND_MODULES else None
    return None


def get_app() -> typer.Typer:
    """The fully registered Typer app (for docs, completions and tests)."""
    _register()
    return app


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, map every failure to one line and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in args or bool(os.environ.get("KAFKATOOL_TRACEBACK"))
    rc: int
    try:
        _register(_command_module(args))
        command = typer.main.get_command(app)
        _plain_help(command)
        # make_context + invoke rather than command.main(): click's main() turns EPIPE into exit 1, and a
        # closed pipe (``| head``) is not a failure.
        with command.make_context("kafkatool", args) as ctx:
            result = command.invoke(ctx)
        rc = result if isinstance(result, int) else ExitCode.OK
    except _EXITS as e:
        rc = int(getattr(e, "exit_code", ExitCode.USAGE))
    except _ABORTS:
        rc = ExitCode.INTERRUPTED
    except _USAGE_ERRORS as e:
        if type(e).__name__ == "NoArgsIsHelpError":
            getattr(e, "show")()  # noqa: B009 - a command run without arguments: its help (on stderr)
        else:
            _err(_usage_line(e))
        rc = ExitCode.USAGE
    except KafkaToolError as e:
        if show_traceback:
            import traceback

            traceback.print_exc()
        if e.field is not None and e.path is None and e.position is None:
            _err(f"kafkatool: error: {option_for(args, e.field)}: {e.message}")
        elif e.field is not None and (option := _option_of(args, e.field)) is not None:
            _err(f"kafkatool: error: {e} ({option})")  # about bytes on disk, and the option that would change it
        else:
            _err(f"kafkatool: error: {e}")
        rc = e.exit_code
    except KeyboardInterrupt:
        _err("kafkatool: interrupted")
        rc = ExitCode.INTERRUPTED
    except BrokenPipeError:
        rc = ExitCode.OK  # the reader went away (``| head``): not an error
    except OSError as e:
        if show_traceback:
            import traceback

            traceback.print_exc()
        where = f"{shown(e.filename)}: " if e.filename else ""
        _err(f"kafkatool: error: {where}{e.strerror or e}")
        rc = ExitCode.USAGE
    except MemoryError:
        _err("kafkatool: error: out of memory (lower --memory, or raise the machine's limit)")
        rc = ExitCode.USAGE
    except Exception as e:  # a bug: say so in one line, the traceback on request
        if show_traceback:
            import traceback

            traceback.print_exc()
        _err(f"kafkatool: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)")
        rc = ExitCode.USAGE
    _exit(rc)


def option_for(args: list[str], field: str) -> str:
    """The option of the command ``args`` run that sets the library field ``field`` (``to_magic`` ->
    ``--to-magic``): the parameter of that name, its longest spelling; ``--`` + the field otherwise."""
    return _option_of(args, field) or "--" + field.replace("_", "-")


def _option_of(args: list[str], field: str) -> str | None:
    """The option of the command ``args`` run whose parameter is named ``field``, or None (the root's ``--memory``
    when the command has none)."""
    chain: list[Any] = [typer.main.get_command(app)]
    for a in args:
        subs = getattr(chain[-1], "commands", None)
        if subs is None:
            break
        if a in subs:
            chain.append(subs[a])
    for command in reversed(chain):
        for param in getattr(command, "params", []):
            if param.name == field and param.opts and str(param.opts[0]).startswith("-"):
                return str(max(param.opts, key=len))
            if param.name == field and getattr(param, "param_type_name", "") == "argument":
                return str(getattr(param, "metavar", None) or param.name.upper())  # an argument: its metavar (DST)
    return None


def _plain_help(cmd: object) -> None:
    """Help texts are plain text (the man pages and the README print them as they are), but typer's rich help
    reads them as rich markup and drops anything in brackets: "[default: 256MiB]", "[api.version.request=true]".
    Escape them for --help."""
    from rich.markup import escape

    for obj in (cmd, *getattr(cmd, "params", [])):
        for attr in ("help", "short_help"):
            text = getattr(obj, attr, None)
            if isinstance(text, str):
                setattr(obj, attr, escape(text))
    for sub in (getattr(cmd, "commands", None) or {}).values():
        _plain_help(sub)


def _usage_line(e: BaseException) -> str:
    """click's usage error as one line: what is wrong and where the help is (click's own show() prints the
    usage, a hint and a boxed message)."""
    message = getattr(e, "format_message", lambda: str(e))()
    ctx = getattr(e, "ctx", None)
    path = getattr(ctx, "command_path", None) or "kafkatool"
    text = " ".join(str(message).replace("Value error, ", "").split())
    return f"kafkatool: error: {text} (see '{path} --help')"


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
