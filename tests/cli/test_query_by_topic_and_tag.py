"""query by time window and tag (mqadmin printMsg -b -e, queryMsgByKey with a tag) and dump
commitlog --tag, against the full dump filtered in Python."""

from __future__ import annotations

import json

import pytest

from mqtool.cli.app import run
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"


def rows(capsys, *args: object) -> tuple[int, list[dict]]:
    code = run([str(a) for a in args])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def everything() -> list[dict]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert run(["dump", "commitlog", str(STORE), "--jsonl"]) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def ident(r: dict) -> tuple:
    return (r["topic"], r["queue_id"], r["queue_offset"], r["commitlog_offset"])


@pytest.mark.parametrize("tag", ["TagA", "TagB", "TagC", "TagTx", "nope"])
def test_dump_tag(capsys, everything, tag):
    code, got = rows(capsys, "dump", "commitlog", STORE, "--tag", tag, "--jsonl")
    assert code == 0
    assert [ident(r) for r in got] == [ident(r) for r in everything if r["tags"] == tag]


@pytest.mark.parametrize("topic,tag", [("OrderTopic", "TagB"), ("TopicTest", "TagA"), ("TopicTest", None), ("AuditLog", "nope")])
def test_query_topic_window_and_tag(capsys, everything, topic, tag):
    times = sorted(r["store_timestamp"] for r in everything if r["topic"] == topic)
    begin, end = times[len(times) // 4], times[3 * len(times) // 4]
    args = ["query", STORE, "--topic", topic, "--begin", begin, "--end", end, "--jsonl", *(["--tag", tag] if tag else [])]
    code, got = rows(capsys, *args)
    want = [r for r in everything if r["topic"] == topic and begin <= r["store_timestamp"] <= end and (tag is None or r["tags"] == tag)]
    assert code == (0 if want else 1)
    assert sorted(ident(r) for r in got) == sorted(ident(r) for r in want)
    assert all(r["found_via"] == "consumequeue" for r in got)


def test_query_key_with_tag(capsys, everything):
    key = next(k for r in everything for k in r["keys"] if r["tags"] == "TagB")
    code, got = rows(capsys, "query", STORE, "--key", key, "--tag", "TagB", "--jsonl")
    assert code == 0
    assert sorted(ident(r) for r in got) == sorted(ident(r) for r in everything if key in r["keys"] and r["tags"] == "TagB")
    code, got = rows(capsys, "query", STORE, "--key", key, "--tag", "no-such-tag", "--jsonl")
    assert code == 1 and got == []


def test_tag_with_a_single_record_query_is_a_usage_error(capsys):
    assert run(["query", str(STORE), "--msg-id", "C0A8000A00002A9F0000000000000449", "--tag", "TagA"]) == 2
