"""Every `rmqtool` command the README and docs/*.md show in a code block, and the sample output beside it.

A ```console block is a transcript of real runs: `$ ` (or `host$ `) starts a command, the lines up to the next
prompt are what it printed (`...` elides lines), and `$ echo $?` with the number after it is the exit code of the
command before. Any other block lists commands only. A command's expected exit code is 0 unless `echo $?`, a
trailing `# exit N` comment or a first output line `rmqtool: error:` (2) says otherwise.

Each document's placeholders (`~/store`, `/tmp/store`, `N` ...) stand for a real store here: `places` builds
them (golden stores copied, the fixture store damaged as the text says). `python tests/docsamples.py` lists every
command, one `file:line: command` a line; `--write` runs every console sample and writes what it printed into
its document (the first HEAD and last TAIL lines of a longer output, `...` between).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = re.compile(r"^[\w-]*\$\s+")


@dataclass
class Sample:
    """One documented command line: where it is, its argv after `rmqtool`, and what its sample shows."""

    doc: str  # the file, relative to the repository
    line: int  # 1-based line of the command
    text: str  # the line as written (continuations joined)
    argv: list[str]  # after `rmqtool`
    console: bool  # in a ```console block: `output` is a real run's
    host: str = ""  # the prompt's host (`master$ `), if any
    output: list[str] = field(default_factory=list)
    exit_code: int = 0
    stdout_dropped: bool = False  # `>/dev/null`: the sample shows stderr only
    tail: int | None = None  # `| tail -N`: the sample shows the last N lines of stdout


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _blocks(text: str):
    """(info string, [(line number, line)]) of every fenced block, `\\` continuations joined."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        info, body, i = lines[i][3:].strip(), [], i + 1
        while i < len(lines) and not lines[i].startswith("```"):
            start, line = i + 1, lines[i]
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1].rstrip() + " " + lines[i].strip()
            body.append((start, line))
            i += 1
        yield info, body
        i += 1


def _commands(line: str) -> tuple[list[list[str]], str]:
    """The argv (after `rmqtool`) of each rmqtool command of a shell line, and its comment."""
    words = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    words.whitespace_split = True
    words.commenters = ""
    tokens = list(words)
    comment = ""
    if "#" in tokens:
        comment = " ".join(tokens[tokens.index("#") + 1:])
        tokens = tokens[:tokens.index("#")]
    commands, current = [], []
    for tok in [*tokens, "&&"]:
        if tok in ("&&", "|", ";", "||"):
            if current and (current[0] == "rmqtool" or current[0].endswith("/rmqtool")):
                commands.append(current[1:])
            current = []
        else:
            current.append(tok)
    return commands, comment


def samples(root: Path = ROOT) -> list[Sample]:
    """Every rmqtool command of every code block of the README and docs/*.md, in document order."""
    found: list[Sample] = []
    for path in documents(root):
        doc = str(path.relative_to(root))
        for info, body in _blocks(path.read_text()):
            console = info == "console"
            current: list[Sample] = []  # the samples of the last command line: its output lines go to them
            exit_of: Sample | None = None  # the sample whose exit code the line after `$ echo $?` gives
            for number, line in body:
                prompted = PROMPT.match(line)
                if console and not prompted:
                    if exit_of and line.strip().isdigit():
                        exit_of.exit_code, exit_of = int(line), None
                    elif current and line.strip():
                        current[-1].output.append(line)
                    continue
                shell = line[prompted.end():] if prompted else line
                exit_of, current = (current[-1] if current and shell.strip() == "echo $?" else None), []
                if not re.search(r"(^|[\s|&;/])rmqtool\s", shell):
                    continue
                argvs, comment = _commands(shell)
                for argv in argvs:
                    s = Sample(doc, number, shell, _strip_redirections(argv), console,
                               prompted.group(0).strip()[:-1] if prompted else "")
                    s.stdout_dropped = ">/dev/null" in argv
                    tail = re.search(r"\|\s*tail -(\d+)", shell)
                    s.tail = int(tail.group(1)) if tail else None
                    exit_comment = re.match(r"exit (\d+)", comment)
                    if exit_comment:
                        s.exit_code = int(exit_comment.group(1))
                    current.append(s)
                    found.append(s)
    for s in found:
        if s.output and s.output[0].startswith("rmqtool: error:") and s.exit_code == 0:
            s.exit_code = 2
    return found


def _strip_redirections(argv: list[str]) -> list[str]:
    return [a for a in argv if not a.startswith((">", "2>"))]


_BOX = re.compile("[\u2500-\u257f]")
_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?Z?|\d{8}T\d{6}Z")
_DURATION = re.compile(r"(?<![\w.])\d+(\.\d+)?\s?(ms|s|min|h)\b")
_HEX = re.compile(r"\b[0-9A-F]{16,}\b")
_NUMBER = re.compile(r"(?<![\w])[-+]?\d+(\.\d+)?")


def skeleton(line: str) -> str:
    """A printed line with what differs between runs of the same case made generic: times (ISO or compact)
    `<time>`, durations `<dur>`, paths (a word with a `/`) `<path>`, msgIds and other long hex `<hex>`, numbers
    `N`, and table rules and runs of spaces (padding) one space."""
    line = _BOX.sub(" ", line)
    line = _TIME.sub("<time>", line)
    line = " ".join("<path>" if "/" in w and not w.startswith("(") else w for w in line.split())
    line = re.sub(r"\(\S*/\S*", "(<path>", line)
    line = _HEX.sub("<hex>", line)
    line = _DURATION.sub("<dur>", line)
    return _NUMBER.sub("N", line).strip()



# Checked for parsing only (the options exist and take their values), never run: they need a network peer
# (ha), Spark (spark-load, spark-export) or minutes to hours (bench: generated stores of up to 10 GiB).
PARSE_ONLY = ("ha", "bench", "spark-load", "spark-export")
COLUMNS = "100"  # the width samples are printed at
HEAD, TAIL = 14, 3


def _copy(src: Path, dst: Path) -> Path:
    from cli_helpers import writable_copy

    return writable_copy(src, dst)


def _consumer_store(golden: Path, dst: Path) -> Path:
    """golden/basic with consumer offsets of two groups: one past a queue's max, one on a topic gone."""
    from cli_helpers import consumer_store

    return consumer_store(golden / "basic", dst)


def _fixture(dst: Path, damage: str | None = None) -> Path:
    """A copy of the fixture store with one of damage.KNOWN_DAMAGE done to it."""
    from damage import KNOWN_DAMAGE

    store = _copy(ROOT / "fixtures" / "store", dst)
    if damage:
        KNOWN_DAMAGE[damage](store)
    return store


def _crashed(dst: Path) -> Path:
    from tail_damage import crash_with_damaged_tail

    store = _copy(ROOT / "fixtures" / "store", dst)
    crash_with_damaged_tail(store)
    return store


def _aged(dst: Path) -> Path:
    """The fixture store with every file last written in 2023 (clean goes by the files' times, as the broker)."""
    store = _copy(ROOT / "fixtures" / "store", dst)
    old = 1_700_000_000
    for p in store.rglob("*"):
        os.utime(p, (old, old))
    return store


def _in_golden(golden: Path, dst: Path) -> Path:
    """`dst`, a path under a `golden` folder that links to the golden stores (read-only: they are never copied)."""
    link = dst.parents[len(dst.parts) - dst.parts.index("golden") - 2]
    if not link.exists():
        link.symlink_to(golden)
    return dst


def places(doc: str, golden: Path) -> dict:
    """A document's placeholders -> a function building, at the path it is given, what stands for them here
    (or a dict of those by the prompt's host, where one name is a different store on each host). A relative
    placeholder is built at that path in the folder the commands run in, so they print it as written."""
    ha = golden / "ha"
    sync_master, sync_slave = ha / "sync" / "master" / "store", ha / "sync" / "slave" / "store"
    conf = ROOT / "fixtures" / "broker.conf"
    table = {
        "docs/commands.md": {"~/store": lambda d: _consumer_store(golden, d)},
        "docs/consumers.md": {"~/store": lambda d: _consumer_store(golden, d)},
        "docs/doctor.md": {"/tmp/store": lambda d: _fixture(d, "crc-mid")},
        "docs/recovery.md": {"store": _crashed, "damaged": lambda d: _fixture(d, "crc-mid")},
        "docs/report.md": {"~/store": lambda d: _consumer_store(golden, d)},
        "docs/replicas.md": {"golden/ha/sync/master/store": lambda d: _in_golden(golden, d),
                             "golden/ha/sync/slave/store": lambda d: _in_golden(golden, d),
                             "store": {"master": lambda d: _copy(sync_master, d),
                                       "slave": lambda d: _copy(sync_slave, d)},
                             "master-store": lambda d: _copy(ha / "ahead" / "master" / "store", d),
                             "slave-store": lambda d: _copy(ha / "ahead" / "slave" / "store", d),
                             "~/store": lambda d: _copy(golden / "basic" / "store", d)},
        "docs/replication.md": {"/data/master": lambda d: sync_master, "/data/slave": lambda d: sync_slave,
                                "broker.conf": lambda d: conf, "N": lambda d: "324301"},
        "docs/spark-load.md": {"rows.jsonl": lambda d: ROOT / "fixtures" / "rows.jsonl",
                               "more-rows/": lambda d: ROOT / "fixtures", "broker.conf": lambda d: conf},
        "docs/scale.md": {"small5k.conf": lambda d: conf, "small64.conf": lambda d: conf},
    }
    return table.get(doc, {})


# (document, command) -> the placeholders it takes from a store of its own: the text means another state of
# the store by the same name at that point
OWN_STORE = {("docs/doctor.md", "verify"): {"/tmp/store": lambda d: _fixture(d, "queue-tail-zeroed")},
             ("docs/recovery.md", "clean"): {"store": _aged}}


class Runner:
    """Runs one document's commands in order, each placeholder built once (a store the text changes stays
    changed for the commands after it)."""

    def __init__(self, doc: str, golden: Path, tmp: Path):
        self.places, self.tmp, self.doc = places(doc, golden), tmp, doc
        self.built: dict = {}
        self.own: dict = {}

    def cwd(self, host: str = "") -> Path:
        """The folder a command runs in: one per prompt host (`master$ `), as on two machines."""
        at = self.tmp / host if host else self.tmp
        at.mkdir(exist_ok=True)
        return at

    def _at(self, word: str, host: str = "", own: bool = False) -> Path:
        """Where a placeholder is built: at its own relative path in the run folder, else by its name there."""
        if word.startswith("~/"):
            word = "home-" + word[2:]
        at = self.cwd(host) / (word.lstrip("/").replace("/", "-") if word.startswith("/") else word)
        return at.with_name(at.name + "-own") if own else at

    def _word(self, word: str, built: Path | str, host: str) -> str:
        """`built` as the command is given it: the placeholder itself when it was built at that relative path."""
        return word if Path(str(built)) == self.cwd(host) / word and word[0] not in "/~" else str(built)

    def argv(self, sample: Sample) -> list[str]:
        own = OWN_STORE.get((sample.doc, sample.argv[0]), {})
        out = []
        for word in sample.argv:
            if word.startswith("fixtures/"):
                out.append(str(ROOT / word))
            elif word in own:
                key = (sample.doc, sample.argv[0], word)
                if key not in self.own:
                    self.own[key] = own[word](self._at(word, own=True))
                out.append(str(self.own[key]))
            elif word in self.places:
                value = self.places[word]
                key = word
                if isinstance(value, dict):
                    value, key = value[sample.host], (word, sample.host)
                if key not in self.built:
                    self.built[key] = value(self._at(word, sample.host))
                out.append(self._word(word, self.built[key], sample.host))
            elif word.startswith("/tmp/"):
                out.append(str(self.tmp / word.removeprefix("/tmp/").replace("/", "-")))
            else:
                out.append(word)
        return out

    def run(self, sample: Sample) -> subprocess.CompletedProcess | None:
        """The command run as written (None for PARSE_ONLY ones: parsed, and a bad option raises)."""
        argv = self.argv(sample)
        if sample.argv[0] in PARSE_ONLY:
            parse(argv)
            return None
        import sys

        rmqtool = str(Path(sys.executable).with_name("rmqtool"))
        env = {**os.environ, "COLUMNS": COLUMNS, "TERM": "dumb", "NO_COLOR": "1", "PAGER": ""}
        return subprocess.run([rmqtool, *argv], capture_output=True, text=True, cwd=self.cwd(sample.host), env=env,
                              timeout=900)


def parse(argv: list[str]) -> None:
    """Parse `argv` as the CLI does, without running the command: an unknown option or a bad value raises."""
    import click
    import typer

    from rmqtool.cli.app import app

    cmd: click.Command = typer.main.get_command(app)
    ctx = None
    while isinstance(cmd, click.Group) and argv and argv[0] in cmd.commands:
        ctx = click.Context(cmd, info_name=argv[0], parent=ctx)
        cmd, argv = cmd.commands[argv[0]], argv[1:]
    cmd.make_context(cmd.name, list(argv), parent=ctx)


def shown(sample: Sample, out: subprocess.CompletedProcess) -> list[str]:
    """What a terminal shows of a run as the sample's line asks: stdout (or its tail), then stderr."""
    stdout = [] if sample.stdout_dropped else out.stdout.splitlines()
    if sample.tail is not None:
        stdout = stdout[-sample.tail:]
    return [line.rstrip() for line in stdout + out.stderr.splitlines()]


def mismatch(sample: Sample, lines: list[str]) -> str | None:
    """Why `lines` (a real run) does not have the sample's shape, None when it does: the sample's first line is
    the run's first, and each further line is one of the run's, in order, alike as skeletons (`...` skips)."""
    real = [skeleton(line) for line in lines]
    real = [line for line in real if line]
    expected = [skeleton(line) for line in sample.output]
    expected = [line for line in expected if line]
    if expected and expected[0] != "..." and (not real or real[0] != expected[0]):
        return f"first line {real[:1]} is not {expected[0]!r}"
    at = 0
    for line in expected:
        if line == "...":
            continue
        while at < len(real) and real[at] != line:
            at += 1
        if at == len(real):
            return f"no line {line!r} (in order) in {real}"
        at += 1
    return None


def _as_written(line: str, runner: Runner, tmp: Path) -> str:
    """A printed line with the paths that stood for placeholders given back as the document writes them."""
    names = {str(v): (k if isinstance(k, str) else k[0]) for k, v in runner.built.items()}
    names.update({str(v): k[2] for k, v in runner.own.items()})
    for path in sorted(names, key=len, reverse=True):
        line = line.replace(path, names[path])
    return line.replace(str(ROOT) + "/", "").replace(str(tmp), "/tmp").replace(str(tmp.resolve()), "/tmp")


def _write(golden: Path) -> None:
    """Run every console sample and put what it printed in its document."""
    import tempfile

    for path in documents():
        doc = str(path.relative_to(ROOT))
        todo = [s for s in samples() if s.doc == doc]
        if not any(s.console for s in todo):
            continue
        lines = path.read_text().split("\n")
        with tempfile.TemporaryDirectory() as tmp:
            runner = Runner(doc, golden, Path(tmp))
            news = []
            for s in todo:
                out = runner.run(s)
                if s.console and out is not None:
                    got = shown(s, out)
                    got = [_as_written(g, runner, Path(tmp)) for g in got]
                    if len(got) > HEAD + TAIL + 1:
                        got = [*got[:HEAD], "...", *got[-TAIL:]]
                    news.append((s.line, got))
        for line, got in reversed(news):
            end = line
            while end < len(lines) and not PROMPT.match(lines[end]) and not lines[end].startswith("```"):
                end += 1
            lines[line:end] = got
        path.write_text("\n".join(lines))


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--write"]:
        _write(Path(os.environ.get("RMQTOOL_GOLDEN", ROOT.parent / "shared" / "golden")))
    else:
        for s in samples():
            mark = f" (exit {s.exit_code})" if s.exit_code else ""
            print(f"{s.doc}:{s.line}: rmqtool {shlex.join(s.argv)}{mark}")
