"""The `rmqtool` console script."""

from __future__ import annotations

import sys

import typer

from rmqtool import __version__
from rmqtool.cli import append, bench, decode, inspect_cmd
from rmqtool.errors import RmqError

app = typer.Typer(
    name="rmqtool",
    help="Read, query, verify and write Apache RocketMQ 4.9.x message stores without a broker.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(decode.app, name="decode")
app.command("inspect")(inspect_cmd.inspect)
app.command("append")(append.append)
app.command("import")(append.import_)
app.command("export")(append.export)
app.add_typer(bench.app, name="bench")


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
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="rmqtool", standalone_mode=False)
    except RmqError as e:
        print(f"rmqtool: error: {e}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        print("rmqtool: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as e:
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:
            print(ctx.get_help(), file=sys.stderr)
            sys.exit(2)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"rmqtool: error: {e.format_message()}{hint}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
