"""`brokerIdentity` and `brokerIdentity-temp` are read as the 5.x broker reads them: `#`-separated, the id a
Java long, loaded only when every field is there and not empty."""

from __future__ import annotations

from rmqtool.structures.epoch import identity


def _read(tmp_path, text, name=identity.FILE):
    (tmp_path / name).write_text(text)
    return identity.read(tmp_path / name)


def test_an_identity_as_the_broker_writes_it_is_loaded(tmp_path):
    found = _read(tmp_path, "DefaultCluster#broker-a#2")
    assert (found.clusterName, found.brokerName, found.brokerId, found.loaded) == ("DefaultCluster", "broker-a", 2,
                                                                                   True)


def test_a_line_end_after_the_id_makes_it_unreadable(tmp_path):
    found = _read(tmp_path, "DefaultCluster#broker-a#2\n")
    assert (found.brokerName, found.brokerId, found.problem) == ("broker-a", None,
                                                                 "brokerId '2\\n' is not a Java long")


def test_an_identity_without_its_id_is_not_loaded(tmp_path):
    found = _read(tmp_path, "DefaultCluster#broker-a#")
    assert (found.brokerName, found.loaded, found.problem) == ("broker-a", False, "no brokerId: 2 '#'-separated "
                                                                                  "part(s)")


def test_an_empty_cluster_name_is_not_loaded(tmp_path):
    assert _read(tmp_path, "#broker-a#2").problem == "clusterName empty"


def test_the_temp_file_needs_its_check_code(tmp_path):
    found = _read(tmp_path, "c#b#3#a1b2", identity.TEMP_FILE)
    assert (found.brokerId, found.registerCheckCode, found.loaded) == (3, "a1b2", True)
    assert _read(tmp_path, "c#b#3", identity.TEMP_FILE).problem == "no registerCheckCode: 3 '#'-separated part(s)"


def test_a_store_without_the_files_has_no_identity(tmp_path):
    assert identity.read_store(tmp_path) == (None, None)
