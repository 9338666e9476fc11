"""`rmqtool ha follow` and `rmqtool ha serve`: replication over the broker's HA protocol."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click
import typer

from rmqtool.cli import output

app = typer.Typer(help="Replication over the broker's HA port: follow a master as a slave, or serve a store to "
                  "slaves.\n\nExample: [bold]rmqtool ha serve /tmp/master --port 10912[/]", no_args_is_help=True)
CONFIG = typer.Option(None, "--config", help="broker.conf: the store's geometry and the HA keys (haMasterAddress, "
                      "haListenPort, haSendHeartbeatInterval, haHousekeepingInterval, haTransferBatchSize, "
                      "haSlaveFallbehindMax, slaveTimeout, brokerRole).", show_default=False)
STATUS_EVERY_S = 1.0
SYNC_NOTE = ("note: if the master is a SYNC_MASTER (its role is not on the wire), its puts wait for this "
             "follower's acknowledgements (--ack {ack}: an offset is acknowledged {when})")
ACK_WHEN = {"flushed": "once fdatasync'ed here", "written": "once written here, before fdatasync"}


class _Stop(threading.Event):
    """An event that SIGINT and SIGTERM set: the command then ends cleanly, and exits as an interrupted command
    does, 130 after SIGINT and 143 after SIGTERM (`signalled`: the first signal that came)."""

    def __init__(self) -> None:
        super().__init__()
        self.signalled: int | None = None
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame) -> None:
        if self.signalled is None:
            self.signalled = signum
        self.set()

    def exit_if_signalled(self) -> None:
        from rmqtool.errors import EXIT_INTERRUPTED, EXIT_TERMINATED

        if self.signalled is not None:
            raise typer.Exit(EXIT_TERMINATED if self.signalled == signal.SIGTERM else EXIT_INTERRUPTED)


def _stop_on_signals() -> _Stop:
    return _Stop()


@app.command("follow")
def follow(
    store: Path = typer.Argument(..., help="Store root of the slave (made when missing).", show_default=False),
    master: str | None = typer.Option(None, "--master", help="The master's HA address HOST:PORT (default: "
                                      "haMasterAddress of --config).", show_default=False),
    ack: str = typer.Option("flushed", "--ack", help="When an offset is acknowledged: flushed (after fdatasync) "
                            "or written (as the Java slave: after the write).",
                            click_type=click.Choice(["flushed", "written"])),
    until_caught_up: bool = typer.Option(False, "--until-caught-up", help="Stop once level with the master."),
    as_jsonl: bool = typer.Option(False, "--jsonl", help="One status object per second on stdout."),
    config: Path | None = CONFIG,
) -> None:
    """Follow a master's HA port as a slave: a byte-identical commitlog, queues and index built here.

    Segments are named and rolled as the broker's slave does; consume queues and the index are
    dispatched as its reput does. Reconnects on its own; Ctrl-C (or SIGTERM) closes the store
    cleanly (what was acknowledged is durable) and exits 130 (143 after SIGTERM). A store that does not line up with
    its master (ahead of it, or sent an offset that is not its end) is refused: exit 2. A store
    whose last writer was killed is recovered first.

    Example: [bold]rmqtool ha follow /tmp/slave --master 127.0.0.1:10912 --until-caught-up[/]
    """
    from rmqtool.ops.replication import following, run_until_stopped

    stop = _stop_on_signals()
    with following(store, config, master, ack=ack, stop=stop, note=output.note) as follower:
        output.note(SYNC_NOTE.format(ack=ack, when=ACK_WHEN.get(ack, "")))
        line = _StatusLine(follower.status, as_jsonl)
        run_until_stopped(lambda: follower.run(until_caught_up), stop, line.show, STATUS_EVERY_S)
        line.end()
    stop.exit_if_signalled()


class _StatusLine:
    """The follower's status: a line redrawn on a terminal, a JSON object per tick with --jsonl."""

    def __init__(self, status, as_jsonl: bool) -> None:
        self.status, self.as_jsonl = status, as_jsonl
        self.tty = sys.stderr.isatty()

    def show(self) -> None:
        doc = self.status.to_json()
        if self.as_jsonl:
            output.emit_jsonl_line(doc)
        elif self.tty:
            lag = output.duration(doc["lagMs"])
            sys.stderr.write(f"\r{'connected' if doc['connected'] else 'connecting'} to {doc['master']}: "
                             f"own {doc['ownOffset']:,} acked {doc['ackedOffset']:,} master {doc['masterOffset']:,} "
                             f"lag {doc['lagBytes']:,} B / {lag}, {doc['mbPerSecond']} MB/s   ")
            sys.stderr.flush()

    def end(self) -> None:
        if self.tty and not self.as_jsonl:
            sys.stderr.write("\n")


@app.command("serve")
def serve(
    store: Path = typer.Argument(..., help="Store root to serve (a 4.x store).", show_default=False),
    port: int | None = typer.Option(None, "--port", min=0, max=65535, help="HA port (default: haListenPort of "
                                    "--config, 10912; 0: any free port).", show_default=False),
    bind: str = typer.Option("127.0.0.1", "--bind", help="Address to listen on. The protocol has no "
                             "authentication: bind beyond loopback only on a trusted network."),
    append: str | None = typer.Option(None, "--append", help="Producer rows (JSONL, Parquet, CSV; - for stdin) to "
                                      "append while serving; one status object per row on stdout.",
                                      show_default=False),
    role: str | None = typer.Option(None, "--role", help="sync (SYNC_MASTER: a put waits for a slave's ack) or "
                                    "async (default: brokerRole of --config).", show_default=False,
                                    click_type=click.Choice(["sync", "async"])),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, help="With --append: rows per broker batch.",
                                          show_default=False),
    config: Path | None = CONFIG,
) -> None:
    """Serve a store's commitlog to slaves (Java brokers or `ha follow`) until Ctrl-C (exit 130) or SIGTERM (143).

    A slave that reports 0 gets bytes from the start of the last segment, any other from
    exactly its offset; frames of at most haTransferBatchSize bytes never cross a segment;
    heartbeats while idle. A slave whose report passes this store's end is closed with a
    one-line report. With --append each row's status is PUT_OK, FLUSH_SLAVE_TIMEOUT or
    SLAVE_NOT_AVAILABLE as a SYNC_MASTER reports it (the row is stored in every case).

    Example: [bold]rmqtool ha serve /tmp/master --port 10912 --append fixtures/rows.jsonl --role sync[/]
    """
    from rmqtool.ops.replication import append_rows, run_until_stopped, serving

    stop = _stop_on_signals()
    with serving(store, config, port=port, bind=bind, role=role, log=output.note) as master:
        host, bound = master.address
        output.note(f"serving {store} on {host}:{bound} as {master.store.cfg.brokerRole} (no authentication)")
        opts = None
        if append is not None:
            from rmqtool.cli.append import load_options

            opts = load_options(master.store.cfg, None, 4, None)

        def work() -> None:  # in a thread: a signal stops the serving between rows, stdin open or not
            if append is not None:
                append_rows(master, append, opts, batch_size, output.emit_jsonl_line, stop)
            stop.wait()

        run_until_stopped(work, stop, lambda: None, STATUS_EVERY_S)
    stop.exit_if_signalled()
