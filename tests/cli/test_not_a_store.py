"""Files that are not what a command reads are refused before they are read: exit 2, one line naming
what the file is not, and nothing created or changed."""

import hashlib
import shutil

import pytest
from cli_helpers import CONF, FIXTURE, ROOT, fixture_copy, run

PASSWD = (b"root:x:0:0:root:/root:/bin/bash\n"
          b"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
          b"bin:x:2:2:bin:/bin:/usr/sbin/nologin\n")
ROWS = str(ROOT / "fixtures" / "rows.jsonl")


@pytest.fixture
def passwd(tmp_path):
    p = tmp_path / "passwd"
    p.write_bytes(PASSWD)
    return p


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


COMMANDS = [
    ["decode", "commitlog", "{f}"],
    ["decode", "consumequeue", "{f}"],
    ["decode", "consumequeue", "{f}", "--topic", "A", "--queue", "0"],
    ["decode", "index", "{f}"],
    ["decode", "checkpoint", "{f}"],
    ["decode", "timerlog", "{f}"],
    ["info", "{f}"],
    ["inspect", "{f}", "--phy-offset", "0"],
    ["query", "{f}", "--msg-id", "C633640700002A9F0000000000000000"],
    ["verify", "{f}"],
    ["salvage", "{f}", "--out", "{out}"],
    ["export", "{f}", "--out", "{out}"],
    ["recover", "{f}", "--dry-run"],
    ["clean", "{f}", "--dry-run"],
    ["append", "{f}", "--topic", "T", "--body", "x"],
    ["import", "{f}", ROWS],
    ["spark-export", "{f}", "--out", "{out}"],
    ["spark-load", ROWS, "--store", "{f}"],
    ["bench", "scan", "{f}"],
    ["bench", "verify", "{f}"],
    ["bench", "export", "{f}"],
    ["bench", "render", "{f}"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]) + (" --store" if "--store" in a else ""))
def test_a_text_file_is_refused_by_every_command_as_not_what_it_reads(passwd, tmp_path, args):
    out_path = tmp_path / "out"
    before = _digest(passwd)
    out = run(*(a.format(f=passwd, out=out_path) for a in args))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "not a" in out.stderr, out.stderr
    assert _digest(passwd) == before and not out_path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["passwd"]


@pytest.mark.parametrize(("kind", "args"), [
    ("commitlog segment", ["decode", "commitlog"]),
    ("consume-queue file", ["decode", "consumequeue"]),
    ("index file", ["decode", "index"]),
    ("checkpoint", ["decode", "checkpoint"]),
])
def test_the_refusal_names_the_kind_of_file_expected(passwd, kind, args):
    out = run(*args, str(passwd))
    assert out.returncode == 2 and f"{passwd}: not a{'n' if kind[0] in 'aeiou' else ''} {kind} (" in out.stderr


def test_text_whose_size_is_whole_queue_entries_is_still_not_a_queue_file(tmp_path):
    f = tmp_path / "twenty"
    f.write_bytes(b"root:x:0:0:root:/roo" * 3)  # 60 bytes: three entries' worth
    out = run("decode", "consumequeue", str(f))
    assert out.returncode == 2 and "not a consume-queue file (its first entry" in out.stderr


def test_real_files_of_each_kind_are_accepted():
    store = FIXTURE
    cq = sorted((store / "consumequeue" / "OrderTopic" / "0").iterdir())[0]
    idx = sorted((store / "index").iterdir())[0]
    for args in (["decode", "commitlog", str(store / "commitlog" / f"{0:020d}"), "--count", "1"],
                 ["decode", "consumequeue", str(cq)], ["decode", "index", str(idx), "--config", CONF],
                 ["decode", "checkpoint", str(store / "checkpoint")]):
        out = run(*args)
        assert out.returncode == 0, (args, out.stderr)


@pytest.fixture
def store(tmp_path):
    return fixture_copy(tmp_path)


@pytest.mark.parametrize(("setting", "says"), [
    ("mappedFileSizeCommitLog=1073741824", "the config says mappedFileSizeCommitLog=1073741824, but the commitlog "
                                           "segments are 65536 bytes"),
    ("mapedFileSizeCommitLog=1048576", "the config says mappedFileSizeCommitLog=1048576, but the commitlog "
                                       "segments are 65536 bytes"),
    ("mappedFileSizeConsumeQueue=6000000", "the config says mappedFileSizeConsumeQueue=6000000, but the "
                                           "consume-queue files are 4000 bytes"),
    ("maxHashSlotNum=5000000\nmaxIndexNum=20000000", "the config says maxHashSlotNum=5000000, maxIndexNum=20000000 "
                                                     "(420000040-byte files), but the index files are 5416 bytes"),
])
@pytest.mark.parametrize("command", [["verify"], ["decode", "commitlog"], ["query", "--phy-offset", "0"],
                                     ["export", "--out", "-"], ["info"]])
def test_a_config_that_contradicts_the_files_is_refused_not_reported_as_corruption(store, tmp_path, setting, says,
                                                                                    command):
    conf = tmp_path / "broker.conf"
    conf.write_text(setting + "\n")
    args = [*command[:2], str(store), *command[2:]] if command[0] == "decode" else [command[0], str(store),
                                                                                   *command[1:]]
    out = run(*args, "--config", str(conf))
    assert out.returncode == 2, (out.returncode, out.stderr[-300:])
    assert out.stderr == f"rmqtool: error: {says}: pass the broker.conf the store was written with\n"


def test_older_key_spelling_is_read_as_the_setting(store, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text((ROOT / "fixtures" / "broker.conf").read_text().replace("mappedFileSizeCommitLog",
                                                                             "mapedFileSizeCommitLog"))
    out = run("verify", str(store), "--config", str(conf))
    assert out.returncode == 0 and out.stderr == ""


def test_an_unknown_key_is_one_warning_with_the_likely_spelling(store, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text((ROOT / "fixtures" / "broker.conf").read_text() + "maxHashSlotNun=64\nbrokerName=b1\n")
    out = run("verify", str(store), "--config", str(conf))
    assert out.returncode == 0
    assert out.stderr == (f"rmqtool: warning: {conf}: 'maxHashSlotNun' is not a broker setting; ignored "
                          "(did you mean maxHashSlotNum?)\n")


@pytest.mark.parametrize("content", [b"\x7fELF\x02\x01\x01\x00" + bytes(64), PASSWD])
def test_a_file_that_is_not_a_broker_conf_is_refused(store, tmp_path, content):
    conf = tmp_path / "broker.conf"
    conf.write_bytes(content)
    out = run("verify", str(store), "--config", str(conf))
    assert out.returncode == 2 and out.stderr.startswith(f"rmqtool: error: {conf}: not a broker.conf (")


def test_a_command_that_reads_the_settings_twice_warns_once(store, tmp_path):
    """doctor, recover and verify read the store's settings in more than one step: one warning each."""
    conf = tmp_path / "broker.conf"
    conf.write_text((ROOT / "fixtures" / "broker.conf").read_text() + "maxHashSlotNun=64\n")
    shutil.rmtree(store / "index")  # a problem, so that verify and recover go on to name the doctor
    for command in ("verify", "recover", "doctor"):
        out = run(command, str(store), "--config", str(conf))
        assert out.stderr.count("'maxHashSlotNun' is not a broker setting") == 1, (command, out.stderr)


MISSING_ROOT = [["info"], ["verify"], ["query", "--phy-offset", "0"], ["inspect", "--phy-offset", "0"], ["hash"],
                ["consumers"], ["recover", "--dry-run"], ["recover"], ["clean", "--dry-run"], ["doctor"],
                ["rebuild"], ["export", "--out", "{out}"], ["salvage", "--out", "{out}"]]


@pytest.mark.parametrize("args", MISSING_ROOT, ids=lambda a: " ".join(a[:2]))
def test_a_missing_store_path_is_no_such_file_not_a_folder_without_a_log(tmp_path, args):
    missing = tmp_path / "missing"
    out = run(args[0], missing, *(a.format(out=tmp_path / "out") for a in args[1:]))
    assert out.returncode == 2, out.stderr
    assert out.stderr == f"rmqtool: error: {missing}: no such file or directory\n"
    assert not missing.exists()
