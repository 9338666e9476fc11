"""Every `--json` and `--jsonl` output checked against docs/json-schema.md: each field the command prints is
documented in the section its heading names the command in, each documented field (not in parentheses) is
printed, and each value has a documented type. The commands run in this process (`rmqtool.cli.app.main`) on
copies of fixtures/store, golden/basic, golden/v5-rocksdb and golden/ha, and on small stores made here."""

from __future__ import annotations

import io
import json
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
import typer
from cli_helpers import CONF, FIXTURE, RMQTOOL, RUN_GUARD_S, writable_copy
from json_schema_doc import Checker, one_per_field, parse, references
from stores5x import make_ha_store, make_timer_store

from rmqtool.cli.app import app, main
from rmqtool.structures import timerlog
from rmqtool.structures.commitlog import message

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "json-schema.md"
MODES = ("--json", "--jsonl")
BIG_RECORD = 1478  # a record of the fixture store of 9754 bytes (sysFlag 0)
BODY_BYTE = BIG_RECORD + message.header_len(0) + 5000  # a byte of its body: flipped, its CRC fails
FIRST_MSG_ID = "20010DB800000000000000000000000700002A9F0000000000000000"  # the fixture's first record (IPv6)
CLIENT_MSG_ID = "C000020112340BADF00D000000000000"  # its UNIQ_KEY: not an offset msgId (the offset is negative)
OFFSETS = """{
\t"offsetTable":{
\t\t"OrderTopic@billing":{0:3,1:0,2:1
\t\t},
\t\t"GoneTopic@billing":{0:5
\t\t}
\t}
}"""
DELAY_OFFSETS = '{\n\t"offsetTable":{1:1,5:0\n\t}\n}'


def _walk(cmd: click.Command, path: tuple[str, ...] = ()):
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _walk(sub, (*path, name))
    else:
        yield " ".join(path), cmd


def json_commands() -> list[str]:
    """`command --json`/`--jsonl` for every command that has the option, and `ha serve --append`."""
    out = []
    for path, cmd in _walk(typer.main.get_command(app)):
        opts = {o for p in cmd.params for o in getattr(p, "opts", ())}
        out += [f"{path} {m}" for m in MODES if m in opts]
    return [*out, "ha serve --append"]


COMMAND_PATHS = {p for p, _ in _walk(typer.main.get_command(app))}


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x20
    path.write_bytes(bytes(data))


class Stores:
    """The stores the commands run on: read-only ones shared, writable ones made per call."""

    def __init__(self, root: Path, golden: Path) -> None:
        self.root, self.golden_root = root, golden
        self.n = 0
        self.made: dict[str, Path] = {}

    def tmp(self, name: str) -> Path:
        self.n += 1
        path = self.root / f"{self.n}" / name
        path.parent.mkdir(parents=True)
        return path

    def copy(self, src: Path) -> Path:
        return writable_copy(src, self.tmp("store"))

    def once(self, name: str, make: Callable[[Path], None]) -> Path:
        if name not in self.made:
            path = self.tmp(name)
            make(path)
            self.made[name] = path
        return self.made[name]

    @property
    def golden(self) -> Path:
        return self.golden_root / "basic" / "store"

    @property
    def golden_conf(self) -> Path:
        return self.golden_root / "basic" / "broker.conf"

    @property
    def v5(self) -> Path:
        return self.golden_root / "v5-rocksdb" / "store"

    def damaged(self) -> Path:
        """The fixture with one body byte of the record at BIG_RECORD flipped: a CRC error."""
        store = self.copy(FIXTURE)
        _flip(store / "commitlog" / f"{0:020d}", BODY_BYTE)
        return store

    def consumed(self) -> Path:
        """The fixture with committed consumer offsets (one on a topic the store lacks) and delay offsets."""
        store = self.copy(FIXTURE)
        (store / "config").mkdir()
        (store / "config" / "consumerOffset.json").write_text(OFFSETS)
        (store / "config" / "consumerOffset.json.bak").write_text(OFFSETS.replace("{0:3,", "{0:2,"))
        (store / "config" / "delayOffset.json").write_text(DELAY_OFFSETS)
        return store

    def timer(self, broken: bool = False) -> Path:
        def make(dst: Path) -> None:
            make_timer_store(FIXTURE, dst, [(0, 239, 1_700_000_000_000, 5000), (239, 176, 1_700_000_000_001, 1)])
            if broken:
                _flip(dst / "timerlog" / f"{0:020d}", timerlog.UNIT_LEN + timerlog.UNIT.offset("magic") + 3)
        return self.once(f"timer{broken}", make)

    def ha5(self) -> Path:
        return self.once("ha5", lambda dst: make_ha_store(FIXTURE, dst))

    def interrupted(self) -> Path:
        """The fixture as a killed `import` left it: its write journal and an abort file."""
        store = self.copy(FIXTURE)
        (store / ".rmqtool-write-journal").write_text(json.dumps({
            "command": "import", "pid": 4242, "startedMs": 1_700_000_000_000, "mark": {"commitlogEnd": 151686}}))
        (store / "abort").write_bytes(b"")
        return store

    def export_file(self) -> Path:
        def make(dst: Path) -> None:
            code, _out, err = run_inprocess(["export", str(FIXTURE), "--config", str(CONF), "--out", str(dst)])
            assert code == 0, err
        return self.once("export.jsonl", make)


def run_inprocess(argv: list[str]) -> tuple[int, str, str]:
    """`rmqtool ARGV` in this process: (exit code, stdout, stderr)."""
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0
        out.flush()
        err.flush()
    return code, out.buffer.getvalue().decode("utf-8"), err.buffer.getvalue().decode("utf-8")


@dataclass
class Case:
    command: str  # as the doc's headings name it: `decode commitlog --jsonl`
    label: str
    argv: Callable[[Stores], list]
    codes: tuple[int, ...] = (0,)

    @property
    def id(self) -> str:
        return f"{self.command} [{self.label}]"


F, C = FIXTURE, CONF  # for the cases below, whose argv are functions of a Stores `s`


def _cases() -> list[Case]:
    out: list[Case] = []

    def add(command: str, label: str, argv: Callable[[Stores], list], codes: tuple[int, ...] = (0,)) -> None:
        out.append(Case(command, label, argv, codes))

    # read-only, on the fixture and golden stores
    add("info --json", "fixture", lambda s: ["info", F, "--config", C, "--json"])
    add("info --json", "golden", lambda s: ["info", s.golden, "--config", s.golden_conf, "--json"])
    add("info --json", "v5 rocksdb", lambda s: ["info", s.v5, "--json"])
    add("info --json", "timer log", lambda s: ["info", s.timer(), "--config", C, "--json"])
    add("info --json", "5.x HA", lambda s: ["info", s.ha5(), "--config", C, "--json"])
    add("info --json", "interrupted write", lambda s: ["info", s.interrupted(), "--config", C, "--json"])
    add("inspect --json", "sound", lambda s: ["inspect", F, "--phy-offset", 0, "--json"])
    add("inspect --json", "bad CRC", lambda s: ["inspect", s.damaged(), "--phy-offset", BIG_RECORD, "--json"], (1,))
    for mode in MODES:
        add(f"query {mode}", "msgId", lambda s, m=mode: ["query", F, "--msg-id", FIRST_MSG_ID, m])
        add(f"query {mode}", "key", lambda s, m=mode: ["query", s.golden, "--config", s.golden_conf, "--topic",
                                                       "PaymentTopic", "--key", "order-1", m])
        add(f"query {mode}", "consumed", lambda s, m=mode: ["query", s.consumed(), "--config", C, "--topic",
                                                            "OrderTopic", "--queue", 0, "--queue-offset", 0,
                                                            "--count", 5, m])
        add(f"query {mode}", "delayed", lambda s, m=mode: ["query", s.consumed(), "--config", C, "--topic",
                                                           "SCHEDULE_TOPIC_XXXX", "--queue", 4, "--queue-offset", 0,
                                                           m])
        add(f"query --time {mode}", "found", lambda s, m=mode: ["query", F, "--topic", "OrderTopic", "--queue", 0,
                                                               "--time", 0, m])
        add(f"query --time {mode}", "past the end", lambda s, m=mode: ["query", F, "--topic", "OrderTopic",
                                                                      "--queue", 0, "--time", "2100-01-01", m])
        add(f"query --time {mode}", "every queue", lambda s, m=mode: ["query", s.golden, "--config", s.golden_conf,
                                                                     "--topic", "OrderTopic", "--time",
                                                                     "2026-11-22T11:43:15.661Z", m])
        add(f"query {mode}", "key in every topic", lambda s, m=mode: ["query", s.golden, "--config", s.golden_conf,
                                                                      "--key", "shared-1", m])
        add(f"decode commitlog {mode}", "fixture", lambda s, m=mode: ["decode", "commitlog", F, "--config", C,
                                                                     "--count", 30, m])
        add(f"decode commitlog {mode}", "bad CRC", lambda s, m=mode: ["decode", "commitlog", s.damaged(),
                                                                     "--config", C, "--phy-offset", BIG_RECORD,
                                                                     "--count", 2, m], (1,))
        add(f"decode consumequeue {mode}", "file", lambda s, m=mode: ["decode", "consumequeue", F, "--config", C,
                                                                     "--topic", "OrderTopic", "--queue", 0, m])
        add(f"decode consumequeue {mode}", "one file", lambda s, m=mode: [
            "decode", "consumequeue", F / "consumequeue" / "OrderTopic" / "0" / f"{0:020d}", "--config", C, m])
        add(f"decode consumequeue {mode}", "rocksdb", lambda s, m=mode: ["decode", "consumequeue", s.v5, "--topic",
                                                                        "OrderTopic", "--queue", 0, m])
        add(f"decode timerlog {mode}", "timer log", lambda s, m=mode: ["decode", "timerlog", s.timer(), "--config",
                                                                      C, m])
        add(f"decode timerlog {mode}", "broken unit", lambda s, m=mode: ["decode", "timerlog", s.timer(True),
                                                                        "--config", C, m], (1,))
        add(f"decode index {mode}", "fixture", lambda s, m=mode: ["decode", "index", F, "--config", C, m])
    add("decode checkpoint --json", "4.x", lambda s: ["decode", "checkpoint", F, "--json"])
    add("decode checkpoint --json", "5.x", lambda s: ["decode", "checkpoint", s.ha5(), "--json"])
    add("decode epoch --json", "store", lambda s: ["decode", "epoch", s.ha5(), "--json"])
    add("decode epoch --json", "one file", lambda s: ["decode", "epoch", s.ha5() / "epochFileCheckpoint", "--json"])
    add("decode config --json", "golden", lambda s: ["decode", "config", s.golden, "--json"])
    add("decode config --json", "offsets and .bak", lambda s: ["decode", "config", s.consumed(), "--json"])
    add("decode msgid --json", "IPv6", lambda s: ["decode", "msgid", FIRST_MSG_ID, "--json"])
    add("decode msgid --json", "client msgId", lambda s: ["decode", "msgid", CLIENT_MSG_ID, "--json"])
    add("verify --json", "fixture", lambda s: ["verify", F, "--config", C, "--json"])
    add("verify --json", "bad CRC", lambda s: ["verify", s.damaged(), "--config", C, "--json"], (1,))
    add("salvage --json", "bad CRC", lambda s: ["salvage", s.damaged(), "--config", C, "--out",
                                                s.tmp("salvaged.jsonl"), "--json"], (1,))
    add("salvage --json", "into a new store", lambda s: ["salvage", s.damaged(), "--config", C, "--into",
                                                         s.tmp("salvaged"), "--json"], (1,))
    add("doctor --json", "healthy", lambda s: ["doctor", F, "--config", C, "--json"])
    add("doctor --json", "bad CRC", lambda s: ["doctor", s.damaged(), "--config", C, "--json"], (1,))
    add("doctor --json", "applied", lambda s: ["doctor", s.damaged(), "--config", C, "--apply", "--json"])
    add("doctor --json", "missing segment", lambda s: ["doctor", _without_segment(s.copy(F)), "--config", C,
                                                       "--json"], (2,))
    add("consumers --json", "offsets", lambda s: ["consumers", s.consumed(), "--config", C, "--json"], (1,))
    add("consumers --reset --json", "dry run", lambda s: ["consumers", s.consumed(), "--config", C, "--reset",
                                                          "billing", "--topic", "OrderTopic", "--to-earliest",
                                                          "--dry-run", "--json"])
    add("consumers --reset --json", "to a time", lambda s: ["consumers", s.consumed(), "--config", C, "--reset",
                                                            "billing", "--topic", "OrderTopic", "--to-time", 0,
                                                            "--json"])
    add("consumers --clone --json", "one topic", lambda s: ["consumers", s.consumed(), "--config", C, "--clone",
                                                            "billing", "--to", "audit", "--topic", "OrderTopic",
                                                            "--json"])
    add("consumers --delete --json", "dry run", lambda s: ["consumers", s.consumed(), "--config", C, "--delete",
                                                           "billing", "--dry-run", "--json"])
    add("diff --json", "identical", lambda s: ["diff", F, s.copy(F), "--config", C, "--json"])
    add("diff --json", "bad CRC", lambda s: ["diff", F, s.damaged(), "--config", C, "--json"], (1,))
    for pair, codes in (("sync", (0,)), ("ahead", (1,))):
        add("diff --json", f"golden/ha {pair}", lambda s, p=pair: _ha_pair(s, p), codes)
    add("diff --json", "5.x epochs", lambda s: ["diff", s.ha5(), s.copy(s.ha5()), "--config", C, "--json"])
    add("hash --json", "fixture", lambda s: ["hash", F, "--config", C, "--json"])
    # writers, each on its own copy
    add("recover --json", "dry run", lambda s: ["recover", s.damaged(), "--config", C, "--dry-run", "--json"])
    add("recover --json", "bad CRC", lambda s: ["recover", s.damaged(), "--config", C, "--thorough", "--json"])
    add("recover --json", "refused", lambda s: ["recover", s.copy(F), "--config", C, "--truncate-to", 1, "--json"],
        (2,))
    add("clean --json", "dry run", lambda s: ["clean", s.copy(F), "--config", C, "--reserved-hours", 0,
                                              "--dry-run", "--json"])
    add("clean --json", "delete", lambda s: ["clean", s.copy(F), "--config", C, "--reserved-hours", 0, "--json"])
    add("rebuild --json", "differs", lambda s: ["rebuild", _without_queue(s.copy(F)), "--config", C, "--json"], (1,))
    add("rebuild --json", "applied", lambda s: ["rebuild", _without_queue(s.copy(F)), "--config", C, "--apply",
                                                "--json"])
    add("rebuild --json", "queues only", lambda s: ["rebuild", s.copy(F), "--config", C, "--queues", "--json"])
    add("append --json", "one message", lambda s: ["append", s.copy(F), "--config", C, "--topic", "T", "--body",
                                                   "hi", "--json"])
    add("append --json", "new store", lambda s: ["append", s.tmp("new"), "--config", C, "--topic", "T", "--body",
                                                 "hi", "--json"])
    add("append --json", "batch", lambda s: ["append", s.tmp("new"), "--config", C, "--batch",
                                             ROOT / "fixtures" / "rows.jsonl", "--json"])
    add("import --json", "producer rows", lambda s: ["import", s.tmp("new"), ROOT / "fixtures" / "rows.jsonl",
                                                     "--config", C, "--json"])
    add("import --json", "export", lambda s: ["import", s.tmp("new"), s.export_file(), "--config", C, "--json"])
    add("import --json", "repack", lambda s: ["import", s.tmp("new"), s.export_file(), "--config", C, "--repack",
                                              "--json"])
    add("import --json", "skip existing", lambda s: ["import", s.copy(F), s.export_file(), "--config", C,
                                                     "--skip-existing", "--json"])
    add("spark-load --json", "in process", lambda s: ["spark-load", ROOT / "fixtures" / "rows.jsonl", "--store",
                                                      s.tmp("new"), "--config", C, "--json"])
    return out


def _ha_pair(s: Stores, name: str) -> list:
    """`diff` of a master and slave the real brokers wrote (read-only)."""
    master, slave = s.golden_root / "ha" / name / "master", s.golden_root / "ha" / name / "slave"
    return ["diff", master / "store", slave / "store", "--config", master / "broker.conf", "--config-b",
            slave / "broker.conf", "--json"]


def _without_queue(store: Path) -> Path:
    shutil.rmtree(store / "consumequeue" / "OrderTopic" / "1")
    return store


def _without_segment(store: Path) -> Path:
    (store / "commitlog" / f"{65536:020d}").unlink()
    return store


CASES = _cases()


BENCH_CASES = [  # the smallest sizes; those that time fresh processes take a few seconds all the same
    Case("bench scan --json", "fixture", lambda s: ["bench", "scan", F, "--config", C, "--repeat", 1, "--json"]),
    Case("bench append --json", "1 message", lambda s: ["bench", "append", "--messages", 1, "--json"]),
    Case("bench import --json", "1 row", lambda s: ["bench", "import", "--messages", 1, "--json"]),
    Case("bench export --json", "fixture", lambda s: ["bench", "export", F, "--config", C, "--format", "jsonl",
                                                      "--json"]),
    Case("bench verify --json", "fixture", lambda s: ["bench", "verify", F, "--config", C, "--json"]),
    Case("bench render --json", "fixture", lambda s: ["bench", "render", F, "--config", C, "--repeat", 1, "--json"]),
    Case("bench consumers --json", "1 group", lambda s: ["bench", "consumers", F, "--config", C, "--groups", 1,
                                                         "--repeat", 1, "--json"]),
    Case("bench replicas --json", "fixture", lambda s: ["bench", "replicas", F, "--config", C, "--repeat", 1,
                                                        "--json"]),
    Case("bench replicate --json", "1 message", lambda s: ["bench", "replicate", "--messages", 1, "--sync-messages",
                                                           1, "--json"]),
    Case("bench start --json", "1 run", lambda s: ["bench", "start", F, "--config", C, "--runs", 1, "--json"]),
    Case("bench rebuild --json", "fixture", lambda s: ["bench", "rebuild", F, "--config", C, "--repeat", 1,
                                                       "--json"]),
    Case("bench doctor --json", "fixture", lambda s: ["bench", "doctor", F, "--config", C, "--json"]),
    Case("bench crash --json", "1 round", lambda s: ["bench", "crash", "--rounds", 1, "--seed", 1, "--json"]),
    Case("bench recover --json", "10 messages", lambda s: ["bench", "recover", "--messages", 10, "--lookups", 10,
                                                           "--json"]),
    Case("bench scale --json", "1 MB", lambda s: ["bench", "scale", s.tmp("scale"), "--gib", 0.001, "--chunks", 1,
                                                  "--lookups", 1, "--json"]),
]
REPORT_CASES = [
    Case("report --json", "fixture", lambda s: ["report", F, "--config", C, "--out", s.tmp("r.html"), "--json"]),
    Case("report --json", "verified, bad CRC", lambda s: ["report", s.damaged(), "--config", C, "--verify", "--out",
                                                          s.tmp("r.html"), "--json"]),
    Case("bench report --json", "fixture", lambda s: ["bench", "report", F, "--config", C, "--repeat", 1, "--json"]),
]
SPARK_CASES = [
    Case("spark-export --json", "fixture", lambda s: ["spark-export", F, "--config", C, "--out", s.tmp("out"),
                                                      "--json"]),
    Case("bench spark-export --json", "fixture", lambda s: ["bench", "spark-export", F, "--config", C, "--master",
                                                            "local[2]", "--json"]),
    Case("bench spark-load --json", "1 row", lambda s: ["bench", "spark-load", "--messages", 1, "--master",
                                                        "local[2]", "--json"]),
]
SPARK_PARAMS = [pytest.param(c, id=c.id, marks=[pytest.mark.bench] if c.command.startswith("bench") else [])
                for c in SPARK_CASES]
HA_COMMANDS = ("ha serve --append", "ha follow --jsonl")  # test_ha_lines_have_a_field_the_doc_lacks


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker(parse(DOC, COMMAND_PATHS))


@pytest.fixture(scope="module")
def stores(tmp_path_factory, golden_basic) -> Stores:
    return Stores(tmp_path_factory.mktemp("json-schema"), golden_basic.parent)


def outputs(command: str, stdout: str) -> list:
    """The JSON values a command printed: the one document, or each line."""
    if command.endswith("--json"):
        return [json.loads(stdout)]
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def assert_documented(checker: Checker, command: str, stdout: str) -> None:
    values = outputs(command, stdout)
    assert values, f"{command}: printed nothing"
    problems = one_per_field([p for value in values for p in checker.check(command, value)])
    assert not problems, "the output does not match docs/json-schema.md:\n" + "\n".join(problems)


def run_case(case: Case, stores: Stores, checker: Checker) -> None:
    argv = case.argv(stores)
    code, out, err = run_inprocess(argv)
    assert code in case.codes, f"{case.id}: rmqtool {' '.join(map(str, argv))} exited {code}: {err}"
    assert_documented(checker, case.command, out)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_json_output_has_a_field_the_doc_lacks_or_lacks_one_it_lists(case: Case, stores, checker):
    run_case(case, stores, checker)


@pytest.mark.parametrize("case", REPORT_CASES, ids=[c.id for c in REPORT_CASES])
def test_report_json_has_a_field_the_doc_lacks_or_lacks_one_it_lists(case: Case, stores, checker):
    run_case(case, stores, checker)


@pytest.mark.bench
@pytest.mark.parametrize("case", BENCH_CASES, ids=[c.id for c in BENCH_CASES])
def test_bench_json_has_a_field_the_doc_lacks_or_lacks_one_it_lists(case: Case, stores, checker):
    run_case(case, stores, checker)


@pytest.mark.parametrize("case", SPARK_PARAMS)
def test_spark_json_has_a_field_the_doc_lacks_or_lacks_one_it_lists(case: Case, stores, checker, spark,
                                                                     monkeypatch):
    """In this process, on the session the Spark tests share: the bench's child processes (a fresh Spark
    each, half a minute) run their script here instead, on that session."""
    if case.command.startswith("bench"):
        monkeypatch.setattr(subprocess, "run", _children_in_process(subprocess.run))
    run_case(case, stores, checker)


def _children_in_process(real_run):
    """`subprocess.run` that runs `python -c SCRIPT ARGS` in this process (stdout captured), others as usual."""
    def run(args, *a, **kw):
        if list(args[:2]) != [sys.executable, "-c"]:
            return real_run(args, *a, **kw)
        out, argv = io.StringIO(), sys.argv
        sys.argv = ["-c", *map(str, args[3:])]
        try:
            with redirect_stdout(out):
                exec(compile(args[2], "<bench child>", "exec"), {"__name__": "__main__"})
        finally:
            sys.argv = argv
        return subprocess.CompletedProcess(args, 0, out.getvalue(), "")
    return run


def test_ha_lines_have_a_field_the_doc_lacks_or_lack_one_it_lists(stores, checker, tmp_path):
    """`ha serve --append` (a status line per row) feeding `ha follow --until-caught-up --jsonl`, each a process."""
    conf = tmp_path / "ha.conf"
    conf.write_text(CONF.read_text() + "haSendHeartbeatInterval=100\nhaHousekeepingInterval=1500\n")
    rows = ROOT / "fixtures" / "rows.jsonl"
    serve = subprocess.Popen([RMQTOOL, "ha", "serve", stores.copy(FIXTURE), "--port", "0", "--config", conf,
                              "--append", rows], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = re.search(r"127\.0\.0\.1:(\d+)", serve.stderr.readline()).group(1)
        puts = [serve.stdout.readline() for _ in rows.read_text().splitlines()]
        follow = subprocess.run([RMQTOOL, "ha", "follow", stores.tmp("slave"), "--master", f"127.0.0.1:{port}",
                                 "--config", conf, "--until-caught-up", "--jsonl"], capture_output=True, text=True,
                                timeout=RUN_GUARD_S)
    finally:
        serve.send_signal(signal.SIGINT)
        serve.communicate(timeout=RUN_GUARD_S)
    assert follow.returncode == 0, follow.stderr
    assert_documented(checker, "ha serve --append", "".join(puts))
    assert_documented(checker, "ha follow --jsonl", follow.stdout)


def _key(command: str) -> tuple[str, str]:
    """`query --time --json` -> ("query", "--json"): the command and its output option."""
    words = command.split()
    return " ".join(w for w in words if not w.startswith("--")), words[-1]


def test_a_command_with_json_output_is_not_in_the_doc_or_not_run_against_it(checker):
    """Every command of the click tree with --json or --jsonl (and `ha serve --append`) has a section of the
    doc naming it, and a case above that runs it; every command a heading names is run."""
    run = {c.command for c in (*CASES, *BENCH_CASES, *REPORT_CASES, *SPARK_CASES)} | set(HA_COMMANDS)
    named = {c for s in checker.sections.values() for c in s.commands}
    commands = json_commands()
    assert not [c for c in commands if not checker.sections_of(c)], "commands no heading of docs/json-schema.md names"
    assert sorted({_key(c) for c in commands} - {_key(c) for c in run}) == [], "commands no test case runs"
    assert sorted(named - run) == [], "commands the doc's headings name that no test case runs"


def test_doc_names_a_type_no_section_defines(checker):
    assert sorted(references(checker.sections) - set(checker.sections)) == []


def test_checker_passes_an_undocumented_field_a_missing_one_or_a_wrong_type(tmp_path):
    """The checker itself: each kind of drift is one line naming the command, the field and the doc."""
    doc = tmp_path / "doc.md"
    doc.write_text("## thing (`hash --json`)\n\n| field | type | meaning |\n|---|---|---|\n"
                   "| `a` | int | |\n| (`b`) | string or null | |\n| `c` | list | |\n| `c[].d` | bool | |\n"
                   "| `e` | object of int | |\n")
    check = Checker(parse(doc, COMMAND_PATHS)).check
    assert check("hash --json", {"a": 1, "c": [{"d": True}], "e": {"x": 1}}) == []
    assert check("hash --json", {"a": 1, "b": None, "c": [], "e": {}}) == []
    assert check("hash --json", {"a": 1, "c": [{"d": True, "z": 0}], "e": {}, "y": 2}) == [
        "hash --json: `c[].z` is not in the doc (section thing): (0)",
        "hash --json: `y` is not in the doc (section thing): (2)"]
    assert check("hash --json", {"c": [], "e": {}}) == [
        "hash --json: `a` is missing; the doc (section thing) lists it as int (in parentheses if it may be absent)"]
    assert check("hash --json", {"a": "1", "b": 5, "c": [{"d": 1}], "e": {"x": True}}) == [
        "hash --json: `a` is a string ('1'), the doc (section thing) says int",
        "hash --json: `b` is an int (5), the doc (section thing) says string or null",
        "hash --json: `c[0].d` is an int (1), the doc (section thing) says bool",
        "hash --json: `e.x` is a bool (True), the doc (section thing) says int"]
    assert check("diff --json", {}) == ["diff --json: no section of docs/json-schema.md names `diff --json` in its "
                                        "heading"]
