"""The `rmqtool` console script."""

from __future__ import annotations

import signal
import sys

import typer

from rmqtool import __version__
from rmqtool.cli import (
    append,
    bench,
    consumers,
    decode,
    doctor,
    ha,
    helptext,
    info,
    inspect_cmd,
    output,
    query,
    rebuild,
    recover,
    replicas,
    report,
    spark,
    verify,
)
from rmqtool.cli.output import printable
from rmqtool.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted, NotFound, RmqError
from rmqtool.files.signals import INTERRUPTS, STOPPED_BY

SPARK_COMMAND_PREFIX = "spark-"  # spark-load, spark-export and their benches: the processes that keep pandas

app = typer.Typer(
    name="rmqtool",
    help="Read, query, verify and write Apache RocketMQ 4.9.x message stores (and read 5.x stores) without a broker."
    "\n\nExample: [bold]rmqtool info fixtures/store[/]",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(decode.app, name="decode")
app.command("info")(info.info)
app.command("inspect")(inspect_cmd.inspect)
app.command("append")(append.append)
app.command("import")(append.import_)
app.command("query")(query.query)
app.command("recover")(recover.recover)
app.command("verify")(verify.verify)
app.command("salvage")(verify.salvage)
app.command("clean")(recover.clean)
app.command("rebuild")(rebuild.rebuild)
app.command("doctor")(doctor.doctor)
app.command("export")(append.export)
app.command("consumers")(consumers.consumers)
app.command("report")(report.report)
app.command("diff")(replicas.diff)
app.command("hash")(replicas.hash_)
app.add_typer(ha.app, name="ha")
app.command("spark-load")(spark.spark_load)
app.command("spark-export")(spark.spark_export)
app.add_typer(bench.app, name="bench")
helptext.reflow_app(app)  # paragraphs of docstrings re-flow to the terminal


def _version(value: bool) -> None:
    if value:
        print(f"rmqtool {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """rmqtool: the RocketMQ store toolkit."""


def main(argv: list[str] | None = None) -> None:
    """Run the app; bad input is one line on stderr and exit code 2, never a traceback."""
    from rmqtool.errors import forget_warnings

    forget_warnings()  # each command warns once of each thing (a caller running several in one process)
    STOPPED_BY.clear()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        if argv is None:  # from here Ctrl-C is a KeyboardInterrupt the command cleans up after (rmqtool.cli)
            signal.signal(signal.SIGINT, _ctrl_c)
            _pandas_for_spark_only(sys.argv[1:])
        _main(argv)
    except (KeyboardInterrupt, RuntimeError) as e:  # before the command began or after it ended: nothing to clean
        if isinstance(e, RuntimeError) and not isinstance(e.__cause__, KeyboardInterrupt):  # (Python 3.11 wraps
            raise  # one raised in a class body's __set_name__, as a module loads)
        print(f"rmqtool: {_stopped_word()}", file=sys.stderr)
        sys.exit(_stopped_code())
    finally:
        if argv is None:  # the console script: a signal during the teardown must not turn the exit into a kill
            for sig in INTERRUPTS:
                signal.signal(sig, signal.SIG_IGN)
        else:  # a caller passing arguments keeps its own handler
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _pandas_for_spark_only(args: list[str]) -> None:
    """pandas hidden from a command's own process unless it runs Spark (`io.arrowstart`): pyarrow otherwise
    imports it on its first conversion, about 0.6 s of a short command's start."""
    if not any(a.startswith(SPARK_COMMAND_PREFIX) for a in args[:2]):
        from rmqtool.io.arrowstart import without_pandas

        without_pandas()


def _main(argv: list[str] | None) -> None:
    import click

    args = sys.argv[1:] if argv is None else argv
    command = _command_for(args)
    signal.signal(signal.SIGTERM, _ctrl_c)  # SIGTERM ends a command as Ctrl-C does: cleaned up, exit 143
    try:
        with output.scan_progress(" ".join(a for a in args[:2] if not a.startswith("-"))):
            code = command.main(args=args, prog_name="rmqtool", standalone_mode=False)
    except NotFound as e:
        print(f"rmqtool: not found: {printable(e)}", file=sys.stderr)
        sys.exit(e.exit_code)
    except Interrupted as e:
        print(f"rmqtool: {_stopped_word()}: {printable(e)}", file=sys.stderr)
        sys.exit(_stopped_code())
    except RmqError as e:
        if STOPPED_BY:  # a call the signal cut fails after it: the command was stopped, not failed
            print(f"rmqtool: {_stopped_word()}: {printable(e)}", file=sys.stderr)
            sys.exit(_stopped_code())
        print(f"rmqtool: error: {printable(e)}", file=sys.stderr)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(2 if e.exit_code == 0 and _bare_group(command, args) else e.exit_code)
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:  # click 8.2+: a group alone; typer printed help
        if e.format_message().strip():
            print(e.format_message(), file=sys.stderr)
        sys.exit(2)
    except click.exceptions.Abort:
        print("rmqtool: aborted", file=sys.stderr)
        sys.exit(_stopped_code())
    except click.ClickException as e:
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"rmqtool: error: {printable(e.format_message())}{hint}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except SystemExit as e:  # typer's exit 1 when the reader went away: a closed pipe, a pager quit early
        if isinstance(sys.stdout, click.utils.PacifyFlushWrapper) or isinstance(e.__context__, BrokenPipeError):
            sys.exit(0)
        raise
    except OSError as e:  # the system refused: permissions, descriptors, a full disk
        where = f": {e.filename}" if e.filename else ""
        said = _stopped_word() if STOPPED_BY else "error"  # a system call the signal cut, as above
        print(f"rmqtool: {said}: {printable(e.strerror or e)}{printable(where)}", file=sys.stderr)
        sys.exit(_stopped_code() if STOPPED_BY else EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:  # typer's answer to a KeyboardInterrupt (Ctrl-C) inside the command
        print(f"rmqtool: {_stopped_word()}", file=sys.stderr)
        code = _stopped_code()
    if code == 0 and _bare_group(command, args):
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def _stopped_code() -> int:
    """An interrupted command's exit code: the shell's 128 + the signal that stopped it (Ctrl-C, or none seen:
    click's Abort at a prompt, a KeyboardInterrupt of its own, is SIGINT's)."""
    return EXIT_TERMINATED if STOPPED_BY[:1] == [signal.SIGTERM] else EXIT_INTERRUPTED


def _stopped_word() -> str:
    """What stopped the command, as its one line says it: terminated (SIGTERM) or interrupted (Ctrl-C)."""
    return "terminated" if STOPPED_BY[:1] == [signal.SIGTERM] else "interrupted"


def _ctrl_c(signum, frame) -> None:
    """Ctrl-C (or SIGTERM) as a KeyboardInterrupt, the signal kept for the exit code; a module cut while it loads
    may leave objects whose `__del__` fails as they go: that is not shown."""
    STOPPED_BY.append(signum)
    sys.unraisablehook = _quiet
    raise KeyboardInterrupt


def _quiet(unraisable) -> None:
    """Nothing shown; an interrupt that landed in a callback Python cannot raise from (a weakref's, a `__del__`:
    printed as "Exception ignored" and lost) comes again on the main thread."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):  # from another thread, once out of this hook
        import _thread
        import threading

        last = STOPPED_BY[-1] if STOPPED_BY else signal.SIGINT
        threading.Timer(0.05, _thread.interrupt_main, (last,)).start()


def _command_for(args: list[str]):
    """The click command that runs `args`. Only the named top-level command is built: building every
    command's options costs more than a lookup in a small store. Help, completion (which
    passes no arguments) and an unknown name get the whole tree. Its numbers are ranged as `numbers` says."""
    import copy

    from rmqtool.cli.numbers import bound_numbers

    name = args[0] if args else None
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not (commands or groups):
        return bound_numbers(typer.main.get_command(app))
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    return bound_numbers(typer.main.get_command(one))


def _bare_group(command, args: list[str]) -> bool:
    """Whether `args` named a command group (or nothing) without a subcommand: help was shown, but
    nothing was asked, so the exit code says bad input."""
    import click

    node = command
    for word in args:
        if word.startswith("-"):
            return False
        if not isinstance(node, click.Group) or word not in node.commands:
            return False
        node = node.commands[word]
    return isinstance(node, click.Group)
