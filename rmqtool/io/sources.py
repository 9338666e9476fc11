"""Input files as Arrow record batches: Parquet, JSONL (one object per line) and CSV.

A `Source` knows its format (Parquet by its magic bytes, CSV by a `.csv` name, JSONL
otherwise; `-` is JSONL on standard input) and where a row of it sits, for error messages:
`FILE:LINE` in JSONL (blank lines are skipped, as the reader skips them), `FILE: row N`
in Parquet and CSV. JSONL is read by Arrow's JSON reader with the known fields typed, each block
checked first (`io/jsonlcheck.py`: one object per line, UTF-8, nesting); a block Arrow cannot
type (a queueId that is text, keys that are a string on one line and a list on another) is read
line by line, where a value of the wrong type (`io/schema.misfit`) is refused and a list or
object is kept as JSON text.
"""

from __future__ import annotations

import bisect
import io
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

from rmqtool.errors import RmqError
from rmqtool.io import geometry
from rmqtool.io.jsonlcheck import check_block
from rmqtool.io.schema import misfit

PARQUET_MAGIC = b"PAR1"
FORMATS = ("jsonl", "parquet", "csv")
_JSON_BLOCK = 16 << 20  # JSONL read a block at a time
_PEEK_BLOCK = 1 << 20  # the first line (the columns) read a block at a time
_JSON_PART = 1 << 20  # parsed in parts of this size on every core
# The longest row line read: the broker's default maxMessageSize (4 MiB) written as bodyText of \u escapes is
# 24 MiB; a longer line holds no message a broker stores, and is refused as it is read, never held whole.
MAX_ROW_LINE = 64 << 20
_WHOLE_ROW_GROUP = 32 << 20  # Parquet row groups up to this size are read whole


class BadRow(RmqError):
    """A row of the input that cannot be read as a row: `WHERE: [field: ]reason`."""


class _Twice(ValueError):
    pass


def file_format(path: str | Path) -> str:
    """The format of an input file: Parquet by its magic bytes, CSV by a `.csv` name, JSONL otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(PARQUET_MAGIC))
    except OSError as e:
        raise RmqError(f"cannot read {path}: {e.strerror}") from None
    if head == PARQUET_MAGIC:
        return "parquet"
    return "csv" if str(path).lower().endswith(".csv") else "jsonl"


class Source:
    """One input file (or `-`) and its format."""

    def __init__(self, path: str | Path, fmt: str | None = None, *, lines: bytes | None = None,
                 first_line: int = 1) -> None:
        """`lines`: JSONL rows already read (a live pipe's), named `path` and numbered from `first_line` in
        what is said of them."""
        self.name = str(path)
        self.stdin = self.name == "-" or lines is not None
        self._data: bytes | None = lines
        self._line_base = first_line - 1
        if self.stdin:
            if self._data is None:
                self._data = sys.stdin.buffer.read()
        elif Path(path).is_dir():
            raise RmqError(f"{path} is a folder: give one input file")
        elif not Path(path).is_file():
            raise RmqError(f"cannot read {path}: no such file")
        self.fmt = fmt or self._detect()
        if self.fmt not in FORMATS:
            raise RmqError(f"unknown input format {self.fmt!r}: use {', '.join(FORMATS)}")

    def _detect(self) -> str:
        return "jsonl" if self.stdin else file_format(self.name)

    @property
    def geometry(self) -> dict | None:
        """The exported store's geometry the file carries (`io.geometry`), None when it carries none."""
        return None if self.stdin else geometry.read(self.name, self.fmt)

    def _open(self):
        return io.BytesIO(self._data) if self.stdin else open(self.name, "rb")

    def where(self, row: int) -> str:
        """Where row `row` (from 0) of the input sits."""
        if self.fmt != "jsonl":
            return f"{self.name}: row {row + 1}"
        seen = -1
        with self._open() as f:
            for line_no, line in enumerate(f, self._line_base + 1):
                if line.strip():
                    seen += 1
                    if seen == row:
                        return f"{self.name}:{line_no}"
        return f"{self.name}: row {row + 1}"

    def columns(self) -> set[str]:
        """Names of the columns present (JSONL: the first object's)."""
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            return set(pq.ParquetFile(self.name).schema_arrow.names)
        with self._open() as f:
            line = _first_line(f)
        if line is None:  # none, or one too long to be a row: batches() refuses it, reading no more of it
            return set()
        if self.fmt == "csv":
            return set(line.decode("utf-8", "replace").strip().split(","))
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # batches() names what is wrong with it
            return set()
        return set(obj) if isinstance(obj, dict) else set()

    def batches(self, types: dict[str, pa.DataType], rows: int) -> Iterator[pa.RecordBatch]:
        """The rows in order, about `rows` at a time, with the columns of `types` that are present
        (JSONL: those typed as given, plus any other field Arrow infers)."""
        try:
            if self.fmt == "parquet":
                yield from self._parquet(types, rows)
            elif self.fmt == "csv":
                yield from self._csv(types, rows)
            else:
                yield from self._jsonl(types, rows)
        except OSError as e:
            raise RmqError(f"cannot read {self.name}: {e}") from None

    def _parquet(self, types, rows):
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(self.name)
            present = [n for n in pf.schema_arrow.names if n in types]
            for group in range(pf.num_row_groups):
                meta = pf.metadata.row_group(group)
                if meta.total_byte_size > _WHOLE_ROW_GROUP:  # large: stream it, batches of bounded size
                    fit = max(1, _WHOLE_ROW_GROUP * meta.num_rows // (4 * meta.total_byte_size))
                    yield from pf.iter_batches(min(rows, fit), row_groups=[group], columns=present)
                else:  # a whole row group reads faster than its batches
                    yield from pf.read_row_group(group, columns=present).to_batches(rows)
        except pa.ArrowException as e:
            raise RmqError(f"{self.name}: not a readable Parquet file ({e})") from None

    def _csv(self, types, rows):
        import pyarrow.csv as pc

        ints = {n: t for n, t in types.items() if t is not None and pa.types.is_integer(t)}
        strings = {n: pa.string() for n in types if n not in ints}
        try:
            reader = pc.open_csv(self.name, read_options=pc.ReadOptions(block_size=_JSON_BLOCK),
                                 parse_options=pc.ParseOptions(escape_char=False, double_quote=True,
                                                               newlines_in_values=True),
                                 convert_options=pc.ConvertOptions(column_types={**strings, **ints},
                                                                   include_columns=None))
            for batch in reader:
                keep = [n for n in batch.schema.names if n in types]
                yield pa.RecordBatch.from_arrays([batch.column(n) for n in keep], names=keep)
        except pa.ArrowException as e:
            raise RmqError(f"{self.name}: not readable as CSV with a header row ({e})") from None

    def _jsonl(self, types, rows):
        """Blocks of whole lines, each parsed by Arrow on every core; a block Arrow cannot type is
        parsed line by line. Memory stays at a block whatever the file's size."""
        import pyarrow.json as pj

        explicit = pa.schema([(n, t) for n, t in types.items() if t is not None])
        unexpected = "infer" if len(explicit) < len(types) else "ignore"  # infer only fields typed None
        parse = pj.ParseOptions(explicit_schema=explicit, unexpected_field_behavior=unexpected)
        no_null = "properties" if "properties" in types else None
        for at, block in self._blocks():
            bad = check_block(block, no_null)
            if bad is not None:
                offset, reason, field = bad
                before = self._lines_before(at)
                self._by_line(bytes(block[:offset]), before, types)  # a fault of an earlier line is named first
                line_no = before + block[:offset].tobytes().count(b"\n") + 1
                raise BadRow(f"{self.name}:{line_no}: {'' if field is None else f'{field}: '}{reason}")
            try:
                table = pj.read_json(pa.py_buffer(block), read_options=pj.ReadOptions(block_size=_JSON_PART),
                                     parse_options=parse)
            except pa.ArrowInvalid:
                table = pa.Table.from_batches([self._by_line(bytes(block), self._lines_before(at), types)])
            keep = [n for n in table.schema.names if n in types]
            yield from table.select(keep).combine_chunks().to_batches(rows)  # one batch, not one per part

    def _blocks(self) -> Iterator[tuple[int, memoryview]]:
        """(byte offset, block) of the input in blocks of about _JSON_BLOCK bytes that end at a line's end."""
        with self._open() as f:
            at = 0
            while True:
                data = f.read(_JSON_BLOCK)
                if not data:
                    return
                cut = data.rfind(b"\n") + 1 if len(data) == _JSON_BLOCK else len(data)
                if not cut:  # one line longer than a block: read on to its end
                    data = self._long_line(f, data, at)
                    cut = len(data)
                yield at, memoryview(data)[:cut]
                at += cut
                f.seek(at)

    def _long_line(self, f, start: bytes, at: int) -> bytes:
        """The line at `at` that `start` (a block of it) begins, read to its end; a fault in `start`, or a
        line longer than MAX_ROW_LINE, is refused before the rest is read."""
        bad = check_block(start)  # from the line's start: a fault found in a prefix is one of the line
        if bad is not None:
            raise BadRow(f"{self.name}:{self._lines_before(at) + 1}: {'' if bad[2] is None else f'{bad[2]}: '}"
                         f"{bad[1]}")
        parts, size = [start], len(start)
        while more := f.read(_JSON_BLOCK):  # read, not readline: a bounded readline is slow on a long line
            end = more.find(b"\n") + 1
            parts.append(more[:end] if end else more)
            size += len(parts[-1])
            if size > MAX_ROW_LINE:
                raise BadRow(f"{self.name}:{self._lines_before(at) + 1}: a line longer than {MAX_ROW_LINE >> 20} "
                             "MiB (no row of a message the broker stores is); the rest of it was not read")
            if end:
                break
        return b"".join(parts)

    def _lines_before(self, offset: int) -> int:
        with self._open() as f:
            return self._line_base + f.read(offset).count(b"\n")

    def _by_line(self, block: bytes, lines_before: int, types) -> pa.RecordBatch:
        """A block's rows parsed by Python: values kept where they fit their type, as JSON text (lists,
        objects) or plain text (anything else) where they do not, for the rules to name."""
        columns: dict[str, list] = {n: [] for n in types}
        for line_no, raw in enumerate(block.split(b"\n"), lines_before + 1):
            if not raw.strip():
                continue
            try:  # UTF-8, nesting and being an object were checked with the block
                obj = json.loads(raw, object_pairs_hook=_unique)
            except _Twice as e:
                raise BadRow(f"{self.name}:{line_no}: {e}: given twice") from None
            except ValueError as e:
                raise BadRow(f"{self.name}:{line_no}: malformed JSON ({e})") from None
            for name, values in columns.items():
                value = obj.get(name)
                why = misfit(name, value, types[name])
                if why is not None:
                    raise BadRow(f"{self.name}:{line_no}: {name}: {why}")
                values.append(json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value)
        return _loose_batch(columns, types)


def _first_line(f) -> bytes | None:
    """The first line of `f` that is not blank, read a block at a time; None when there is none or it is
    longer than MAX_ROW_LINE (the rest of it is not read)."""
    line = bytearray()
    while block := f.read(_PEEK_BLOCK):
        start = 0
        while (end := block.find(b"\n", start)) >= 0:
            line += block[start:end]
            if line.strip():
                return bytes(line)
            line.clear()
            start = end + 1
        line += block[start:]
        if len(line) > MAX_ROW_LINE:
            return None
    return bytes(line) if line.strip() else None


class TableSource:
    """Rows already in memory (an Arrow table, or batches made on the fly with the columns `names`),
    read as a `Source` is."""

    fmt = "arrow"

    def __init__(self, batches, names: Iterable[str] | None = None, name: str = "rows") -> None:
        self._batches = batches
        self._names = set(names) if names is not None else set(batches.schema.names)
        self.name = name

    def where(self, row: int) -> str:
        return f"{self.name}: row {row + 1}"

    def columns(self) -> set[str]:
        return self._names

    geometry = None  # rows in memory carry no store's geometry

    def batches(self, types: dict[str, pa.DataType], rows: int) -> Iterator[pa.RecordBatch]:
        source = self._batches.to_batches(rows) if isinstance(self._batches, pa.Table) else self._batches
        for batch in source:
            keep = [n for n in batch.schema.names if n in types]
            yield pa.RecordBatch.from_arrays([batch.column(n) for n in keep], names=keep)


def _unique(pairs: list[tuple[str, object]]) -> dict:
    """An object's pairs as a dict; a name given twice is refused (Arrow's reader refuses it too)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        names = [k for k, _ in pairs]
        raise _Twice(next(k for i, k in enumerate(names) if k in names[:i]))
    return out


def _loose_batch(columns: dict[str, list], types: dict[str, pa.DataType | None]) -> pa.RecordBatch:
    """The values (each of its field's type: `misfit` passed them) as columns of their types; a field typed
    None (keys, properties) as text, its lists and objects as JSON."""
    arrays = [pa.array(values, types[name] or pa.string()) for name, values in columns.items()]
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


def input_files(inputs: Iterable[Path]) -> list[str]:
    """The input files in load order: as given, a folder's files by name (a Spark output folder's
    `_SUCCESS` and hidden checksum files left out)."""
    out: list[str] = []
    for p in inputs:
        if p.is_dir():
            out += sorted(str(f.resolve()) for f in p.iterdir()
                          if f.is_file() and not f.name.startswith(("_", ".")))
        elif p.is_file():
            out.append(str(p.resolve()))
        else:
            raise RmqError(f"cannot read {p}: no such file or folder")
    if not out:
        raise RmqError("no input files")
    return out


class SourceFiles:
    """Several input files read as one source, rows numbered across the files. With
    `producer_rows`, an export's columns are not taken as records as stored (spark-load's rule)."""

    def __init__(self, files: list[str], fmt: str | None = None, producer_rows: bool = False) -> None:
        self.sources = [Source(f, fmt) for f in files]
        self.name = ", ".join(files)
        self.producer_rows = producer_rows
        self._starts: list[int] = []  # first row of each file begun

    def columns(self) -> set[str]:
        return set() if self.producer_rows else self.sources[0].columns()

    @property
    def geometry(self) -> dict | None:
        """The first file's geometry (the parts of one export carry the same)."""
        return None if self.producer_rows else self.sources[0].geometry

    def batches(self, types: dict[str, pa.DataType], rows: int) -> Iterator[pa.RecordBatch]:
        base = 0
        for source in self.sources:
            self._starts.append(base)
            for batch in source.batches(types, rows):
                base += batch.num_rows
                yield batch

    def where(self, row: int) -> str:
        k = max(bisect.bisect_right(self._starts, row) - 1, 0)
        return self.sources[k].where(row - self._starts[k]) if self._starts else f"row {row + 1}"


def open_input(path: str | Path) -> Source | SourceFiles:
    """One input file, `-`, or a folder of files (a spark-export's Parquet parts) read in name order."""
    if str(path) != "-" and Path(path).is_dir():
        return SourceFiles(input_files([Path(path)]))
    return Source(path)
