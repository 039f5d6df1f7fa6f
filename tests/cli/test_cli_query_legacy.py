"""``mqtool query --offset`` on Jafka and MetaQ data dirs equals the dump's row at that offset."""

from __future__ import annotations

import json

import pytest

from mqtool.cli.app import run
from tests.conftest import FIXTURES


def cli(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("layout,store,topic", [("jafka", "jafka-data", "orders"), ("metaq", "metaq-data", "trade")])
def test_query_offset_matches_dump(capsys, layout, store, topic):
    code, out, _ = cli(capsys, "dump", layout, FIXTURES / store, "--topic", topic, "--partition", "0", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines() if json.loads(line).get("depth", 0) == 0]
    target = rows[len(rows) // 2]
    code, out, err = cli(capsys, "query", FIXTURES / store, "--topic", topic, "--partition", "0", "--offset", target["offset"], "--jsonl")
    assert code == 0, err
    hit = json.loads(out.splitlines()[0])
    assert hit["found_via"] == "offset"
    assert {k: v for k, v in hit.items() if k != "found_via"} == target


def test_query_offset_not_a_message_start(capsys):
    code, out, err = cli(capsys, "query", FIXTURES / "jafka-data", "--topic", "orders", "--partition", "0", "--offset", "60")
    assert code == 1 and out == ""
    assert "not the start of a valid message" in err and "previous message at 59" in err


def test_query_legacy_rejects_other_options(capsys):
    code, _, err = cli(capsys, "query", FIXTURES / "jafka-data", "--key", "x")
    assert code == 2


@pytest.mark.parametrize(
    "layout,store,topic,columns",
    [("jafka", "jafka-data", "orders", ["0", "orders-0", "message", "55", "none", "ok"]), ("metaq", "metaq-data", "trade", ["0", "trade-1"])],
)
def test_query_table_shows_partition_and_crc_like_dump(capsys, layout, store, topic, columns):
    """The table has the dump's table columns filled in (it showed PARTITION - and CRC - while the
    JSON had partition 0 and a valid CRC)."""
    partition = columns[1].rsplit("-", 1)[1]
    code, out, err = cli(capsys, "query", FIXTURES / store, "--topic", topic, "--partition", partition, "--offset", "0")
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert row.split()[: len(columns)] == columns and " ok " in row
    code, dumped, _ = cli(capsys, "dump", layout, FIXTURES / store, "--topic", topic, "--partition", partition, "--limit", "1")
    assert dumped.splitlines()[:2] == [header, row]
