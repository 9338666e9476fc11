"""Refused producer rows and `append` values: one line on stderr, exit 2, and no store changed or made."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import CONF, fixture_copy, run, tree_digest

GOOD = '{"topic": "T", "bodyText": "ok"}'


def assert_refused(tmp_path: Path, command: str, line: bytes | None, want: str, *args) -> None:
    """`rmqtool COMMAND STORE [FILE] ARGS` with FILE holding a good line then `line`: exit 2, stderr
    is the one line `want` (FILE stands for the file's path), and no store changed or made."""
    src = tmp_path / "rows.jsonl"
    if line is not None:
        src.write_bytes(GOOD.encode() + b"\n" + line + b"\n")
    for store in (tmp_path / "new", fixture_copy(tmp_path)):
        before = tree_digest(store) if store.exists() else None
        inputs = [str(src)] if command == "import" else ["--batch", str(src)] if line is not None else []
        out = run(command, str(store), *inputs, "--config", str(CONF), *args)
        assert (out.returncode, out.stderr) == (2, f"rmqtool: error: {want.replace('FILE', str(src))}\n")
        assert (tree_digest(store) if store.exists() else None) == before


def nothing(where: str, field: str, reason: str) -> str:
    return f"{where}: {field}: {reason}; nothing was written"
