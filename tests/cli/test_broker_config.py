"""--config broker.conf on the commands that need file sizes, IndexFile geometry or the disk
threshold (issue 19 item 9): the file's values are used, flags win, a bad value is refused
naming its key."""

from __future__ import annotations

import json

import pytest

from mqtool.cli.app import run
from mqtool.store.broker_config import read_broker_settings
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"


def conf(tmp_path, text: str):
    path = tmp_path / f"broker-{len(list(tmp_path.iterdir()))}.conf"
    path.write_text(text)
    return path


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_settings_are_read_as_the_broker_names_them(tmp_path):
    path = conf(
        tmp_path,
        "brokerName=b\nmapedFileSizeCommitLog=16384\nmappedFileSizeConsumeQueue=1010\nmaxHashSlotNum=500\nmaxIndexNum=3000\n"
        "diskMaxUsedSpaceRatio=0.6\nstorePathRootDir=/data/store\n",
    )
    s = read_broker_settings(path)
    assert (s.commitlog_file_size, s.cq_file_size, s.index_hash_slot_num, s.index_num, s.disk_max_used_ratio, s.store_root) == (
        16384, 1000, 500, 3000, 60, "/data/store",
    )  # fmt: skip


@pytest.mark.parametrize(("text", "enabled"), [("true", True), ("TRUE", True), ("false", False), ("no", False)])
def test_message_index_enable_is_read_as_boolean_parse_boolean(tmp_path, text, enabled):
    assert read_broker_settings(conf(tmp_path, f"messageIndexEnable={text}\n")).message_index_enable is enabled
    assert read_broker_settings(conf(tmp_path, "brokerName=b\n")).message_index_enable is None


def test_validate_judges_file_sizes_by_the_config(capsys, tmp_path):
    assert mqtool(capsys, "validate", STORE, "--config", conf(tmp_path, "mappedFileSizeCommitLog=16384\n"))[0] == 0
    code, out, _ = mqtool(capsys, "validate", STORE, "--config", conf(tmp_path, "mappedFileSizeCommitLog=32768\n"), "--json")
    assert code == 1 and "RMQ-FILE-SIZE" in {f["code"] for f in json.loads(out)["findings"]}
    # a flag wins over the file
    assert mqtool(capsys, "validate", STORE, "--config", conf(tmp_path, "mappedFileSizeCommitLog=32768\n"), "--commitlog-file-size", "16384")[0] == 0


def test_stats_threshold_from_the_config(capsys, tmp_path):
    _, out, _ = mqtool(capsys, "stats", STORE, "--config", conf(tmp_path, "diskMaxUsedSpaceRatio=60\n"), "--json")
    assert json.loads(out)["disk"]["threshold"] == 0.6
    _, out, _ = mqtool(capsys, "stats", STORE, "--config", conf(tmp_path, "diskMaxUsedSpaceRatio=60\n"), "--threshold", "90", "--json")
    assert json.loads(out)["disk"]["threshold"] == 0.9


def test_query_and_recover_take_it(capsys, tmp_path):
    path = conf(tmp_path, "mappedFileSizeCommitLog=16384\nmaxHashSlotNum=5000000\nmaxIndexNum=20000000\n")
    code, out, _ = mqtool(capsys, "query", STORE, "--msg-id", "C0A8000A00002A9F0000000000000449", "--config", path, "--json")
    assert code == 0 and len(json.loads(out)) == 1
    # the fixture's IndexFiles have a small geometry: a broker.conf naming the default one is
    # a store whose IndexFiles the broker would not load as they are
    assert mqtool(capsys, "recover", STORE, "--config", conf(tmp_path, "mappedFileSizeCommitLog=16384\n"))[0] == 0
    code, out, _ = mqtool(capsys, "recover", STORE, "--config", path, "--json")
    assert code == 1


def test_a_bad_value_is_refused_naming_the_key(capsys, tmp_path):
    code, _, err = mqtool(capsys, "validate", STORE, "--config", conf(tmp_path, "maxIndexNum=-5\n"))
    assert code == 1 and "maxIndexNum" in err and "broker-0.conf" in err
