"""Compressed bodies: each codec a producer writes reads back decompressed, export keeps the stored
bytes (import is byte-exact), --decompress writes plain records, and a body that does not inflate
is a warning, never a crash."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from rmqtool.files.paths import offset_name
from rmqtool.structures.commitlog import compression, message, sysflag
from rmqtool.structures.commitlog.crc import body_crc

RMQTOOL = str(Path(sys.executable).with_name("rmqtool"))
CONF = str(Path(__file__).resolve().parents[3] / "fixtures" / "broker.conf")
TEXT = "compressed body " * 40
CODEC_FLAGS = {"zlib": 0x301, "lz4": 0x101, "zstd": 0x201}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RMQTOOL, *args], capture_output=True, text=True)


def lines(out: subprocess.CompletedProcess) -> list[dict]:
    assert out.returncode in (0, 1), out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One message per codec, then one plain message."""
    root = tmp_path_factory.mktemp("c") / "s"
    for codec in ("zlib", "lz4", "zstd"):
        out = run("append", str(root), "--config", CONF, "--topic", "Z", "--body", TEXT, "--compress", codec,
                  "--tags", codec)
        assert out.returncode == 0, out.stderr
    assert run("append", str(root), "--config", CONF, "--topic", "Z", "--body", "plain").returncode == 0
    return root


@pytest.mark.parametrize("codec", ["zlib", "lz4", "zstd"])
def test_compressed_body_reads_back_decompressed(store, codec):
    rows = lines(run("decode", "commitlog", str(store), "--config", CONF, "--jsonl", "--body", "text"))
    (row,) = [r for r in rows if r["properties"].get("TAGS") == codec]
    assert row["body"] == TEXT and row["compression"] == codec
    assert row["sysFlag"] == CODEC_FLAGS[codec]
    stored = base64.b64decode(next(r for r in lines(run("decode", "commitlog", str(store), "--config", CONF,
                                                           "--jsonl", "--body", "stored"))
                                   if r["msgId"] == row["msgId"])["body"])
    assert stored != TEXT.encode() and compression.decompress(stored, codec).body == TEXT.encode()
    assert row["bodyCRC"] == body_crc(stored)  # bodyCRC covers the stored bytes


def test_plain_body_has_no_compression(store):
    rows = lines(run("decode", "commitlog", str(store), "--config", CONF, "--jsonl", "--body", "text"))
    assert rows[-1]["body"] == "plain" and rows[-1]["compression"] is None


def test_legacy_zlib_flag_without_codec_bits_is_zlib(tmp_path, store):
    """A 4.x producer set COMPRESSED alone: the record is rewritten so, and still reads back."""
    seg = tmp_path / "commitlog" / offset_name(0)
    seg.parent.mkdir()
    buf = bytearray((store / "commitlog" / offset_name(0)).read_bytes())
    first = message.decode(buf, 0)
    assert isinstance(first, message.Message) and first.sys_flag == CODEC_FLAGS["zlib"]
    buf[message.SYS_FLAG_OFFSET : message.SYS_FLAG_OFFSET + 4] = sysflag.COMPRESSED.to_bytes(4, "big")
    seg.write_bytes(bytes(buf))
    rows = lines(run("decode", "commitlog", str(seg), "--jsonl", "--body", "text", "--count", "1"))
    assert rows[0]["body"] == TEXT and rows[0]["compression"] == "zlib" and rows[0]["sysFlag"] == 1


def test_export_keeps_stored_bytes_and_import_is_byte_identical(tmp_path, store):
    out = tmp_path / "e.jsonl"
    assert run("export", str(store), "--config", CONF, "--out", str(out)).returncode == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["compression"] for r in rows] == ["zlib", "lz4", "zstd", None]
    copy = tmp_path / "copy"
    done = run("import", str(copy), str(out), "--config", CONF)
    assert done.returncode == 0, done.stderr
    for rel in ("commitlog/" + offset_name(0), "consumequeue/Z/0/" + offset_name(0)):
        assert (copy / rel).read_bytes() == (store / rel).read_bytes(), rel


def test_export_decompress_writes_plain_records(tmp_path, store):
    out = tmp_path / "plain.jsonl"
    assert run("export", str(store), "--config", CONF, "--out", str(out), "--decompress").returncode == 0
    stored = lines(run("decode", "commitlog", str(store), "--config", CONF, "--jsonl", "--body", "stored"))
    for row, was in zip([json.loads(line) for line in out.read_text().splitlines()], stored, strict=True):
        body = base64.b64decode(row["body"])
        assert row["compression"] is None and not row["sysFlag"] & (sysflag.COMPRESSED | sysflag.COMPRESSION_TYPE_MASK)
        assert body == (TEXT.encode() if was["compression"] else b"plain")
        assert row["bodyCRC"] == zlib.crc32(body) & 0x7FFFFFFF
        assert row["storeSize"] == was["storeSize"] - len(base64.b64decode(was["body"])) + len(body)


@pytest.mark.parametrize("codec", ["zlib", "lz4", "zstd"])
def test_a_body_that_does_not_inflate_is_a_warning_not_a_crash(tmp_path, store, codec):
    seg = tmp_path / "commitlog" / offset_name(0)
    seg.parent.mkdir()
    buf = bytearray((store / "commitlog" / offset_name(0)).read_bytes())
    pos = 0
    while True:  # find the codec's record
        rec = message.decode(buf, pos)
        assert isinstance(rec, message.Message)
        if rec.properties.get("TAGS") == codec:
            break
        pos += rec.store_size
    body_at = pos + message.header_len(rec.sys_flag)
    broken = bytes(len(rec.body) // 2) + rec.body[len(rec.body) // 2 :]  # the frame header zeroed
    buf[body_at : body_at + len(broken)] = broken
    buf[pos + message.BODY_CRC_OFFSET : pos + message.BODY_CRC_OFFSET + 4] = body_crc(broken).to_bytes(4, "big")
    seg.write_bytes(bytes(buf))
    out = run("decode", "commitlog", str(seg), "--jsonl", "--body", "text")
    assert out.returncode == 0, out.stderr  # a warning is not corruption
    rows = lines(out)
    at = next(k for k, r in enumerate(rows) if r.get("kind") == compression.NOT_DECOMPRESSIBLE)
    assert rows[at]["severity"] == "warning" and rows[at]["offset"] == pos and rows[at]["bytes"] == rec.store_size
    assert rows[at + 1]["commitLogOffset"] == pos and rows[at + 1]["compression"] == codec
    assert rows[at + 1]["body"] == broken.decode("utf-8", "replace")  # shown from its stored bytes
    assert "Traceback" not in out.stderr
