"""``mqtool bench flush``, ``mqtool stats`` and ``mqtool diff`` from the command line:
options, exit codes, JSON shapes, tables, and the files bench leaves (none, unless --keep)."""

from __future__ import annotations

import json
import shutil
import sys

from mqtool.cli.app import run
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"
SMALL = ["--messages", "150", "--producers", "2", "--size", "64", "--commitlog-file-size", "65536"]


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --- bench flush ---------------------------------------------------------------------------------


def test_bench_json_shape_and_cleanup(tmp_path, capsys):
    where = tmp_path / "disk"
    modes = ("-m", "rocketmq-sync", "-m", "kafka-count:log.flush.interval.messages=10")
    code, out, err = mqtool(capsys, "bench", "flush", *SMALL, "--dir", where, *modes, "--validate", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["messages"] == 150 and doc["io"] == "mmap" and not doc["interrupted"]
    sync, count = doc["modes"]
    assert sync["mode"] == "rocketmq-sync" and count["params"] == {
        "log.flush.interval.messages": 10,
        "log.flush.scheduler.interval.ms": 0,
        "log.flush.interval.ms": 0,
    }
    for m in doc["modes"]:
        assert m["messages"] == 150 and m["validation"]["ok"]
        assert set(m["latency_ms"]) == {"p50", "p99", "p999", "max", "mean"}
        assert set(m["durability_window"]) == {"max_bytes", "max_messages", "max_ms"}
        assert m["fsyncs"] > 0 and m["fsync_avg_ms"] is not None and m["latency_cdf"][-1][1] == 1.0
    assert sync["durability_window"]["max_bytes"] == 0
    assert count["durability_window"]["max_messages"] <= 10  # at most 9 per producer flush, 2 producers
    assert not where.exists()


def test_bench_table_with_chart_and_keep(tmp_path, capsys):
    code, out, err = mqtool(capsys, "bench", "flush", *SMALL, "--dir", tmp_path / "d", "-m", "none", "-m", "metaq-group-commit", "--io", "write", "--keep")
    assert code == 0, err
    assert "none" in out and "metaq-group-commit" in out and "durability window" in out
    assert "append latency CDF" in out and "A none" in out and "B metaq-group-commit" in out
    assert "stores kept in" in err
    (run_dir,) = (tmp_path / "d").iterdir()
    for store in sorted(run_dir.iterdir()):
        code, out, _ = mqtool(capsys, "validate", store)
        assert code == 0, out
    code, out, _ = mqtool(capsys, "bench", "flush", *SMALL, "--dir", tmp_path / "d", "-m", "none", "--no-chart")
    assert code == 2  # not empty any more
    code, out, _ = mqtool(capsys, "bench", "flush", *SMALL, "--dir", tmp_path / "d", "-m", "none", "--no-chart", "--force")
    assert code == 0 and "CDF" not in out
    assert [p.name for p in (tmp_path / "d").iterdir()] == [run_dir.name]


def test_bench_usage_errors(tmp_path, capsys):
    base = ["bench", "flush", "--dir", tmp_path / "x"]
    assert mqtool(capsys, *base, "-m", "nope")[0] == 2
    assert mqtool(capsys, *base, "-m", "rocketmq-async:flushIntervalCommitLog=soon")[0] == 2
    assert mqtool(capsys, *base, "--duration", "1", "--messages", "5")[0] == 2
    assert mqtool(capsys, *base, "--io", "direct")[0] == 2
    code, out, err = mqtool(capsys, "bench", "flush", "--help")
    assert code == 0
    for name in ("rocketmq-sync", "rocketmq-async-wakeup", "rocketmq-transient", "metaq-group-commit", "metaq-threshold", "jafka-count", "kafka-interval", "none"):
        assert name in out
    assert not (tmp_path / "x").exists()


def test_bench_plot_png_or_exit_4(tmp_path, capsys, monkeypatch):
    args = ["bench", "flush", *SMALL, "--dir", tmp_path / "d", "-m", "none", "-m", "rocketmq-sync", "--plot", tmp_path / "bench.png"]
    try:
        import matplotlib  # noqa: F401

        code, out, err = mqtool(capsys, *args)
        assert code == 0, err
        assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        pass
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were not installed
    code, out, err = mqtool(capsys, *args[:-1], tmp_path / "other.png")
    assert code == 4 and "mqtool[plot]" in err
    assert not (tmp_path / "d").exists()  # refused before writing anything


# --- stats ---------------------------------------------------------------------------------------


def test_stats_json_and_table(tmp_path, capsys):
    code, out, err = mqtool(capsys, "stats", STORE, "--json", "--top", "3")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["layout"] == "rocketmq" and doc["totals"]["messages"] == 245 and len(doc["largest"]) == 3
    assert {"units", "topics", "largest", "disk", "cardinality", "problems"} <= set(doc)
    assert doc["disk"]["threshold"] == 0.75 and doc["disk"]["forecast"]
    code, out, err = mqtool(capsys, "stats", STORE, "--threshold", "90")
    assert code == 0 and "per queue" in out and "TopicTest/1" in out and "forecast:" in out and "90%" in out

    damaged = tmp_path / "store"
    shutil.copytree(STORE, damaged)
    seg = sorted((damaged / "commitlog").iterdir())[2]
    data = bytearray(seg.read_bytes())
    data[300] ^= 0x01
    seg.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "stats", damaged, "--json")
    assert code == 1 and "CRC" in err and json.loads(out)["problems"]
    assert mqtool(capsys, "stats", tmp_path / "missing")[0] == 3


# --- diff ------------------------------------------------------------------------------------------


def test_diff_exit_codes(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(STORE, a)
    shutil.copytree(STORE, b)
    code, out, _ = mqtool(capsys, "diff", a, b)
    assert code == 0 and "identical" in out
    last = sorted((b / "commitlog").iterdir())[-1]
    last.unlink()  # the slave has not received the last file yet
    code, out, _ = mqtool(capsys, "diff", a, b)
    assert code == 0 and "B is a clean prefix of A" in out and "only in A:" in out
    code, out, _ = mqtool(capsys, "diff", a, b, "--json")
    doc = json.loads(out)
    assert doc["verdict"] == "b-prefix" and doc["ok"] and doc["logs"][0]["only_in_a"]["records"] > 0
    seg = sorted((b / "commitlog").iterdir())[1]
    data = bytearray(seg.read_bytes())
    data[1000] ^= 0x40
    seg.write_bytes(bytes(data))
    code, out, _ = mqtool(capsys, "diff", a, b, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "diverged"
    assert doc["logs"][0]["divergence"]["byte_offset"] == 16384 + 1000
    code, out, _ = mqtool(capsys, "diff", a, b)
    assert code == 1 and "first divergence" in out
    kafka = tmp_path / "kafka" / "t-0"
    kafka.mkdir(parents=True)
    (kafka / "00000000000000000000.log").write_bytes(b"")
    code, _, err = mqtool(capsys, "diff", a, kafka)
    assert code == 3 and "layout" in err


def test_diff_damaged_slave_is_not_a_clean_prefix(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(STORE, a)
    shutil.copytree(STORE, b)
    last = sorted((b / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    data[1242 + 88 + 2] ^= 0x01  # a body byte of the last file's fourth record (at 1242)
    last.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "diff", a, b, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "diverged" and not doc["ok"]
    (log,) = doc["logs"]
    assert (log["divergence"]["b"]["file"], log["divergence"]["b"]["position"]) == (str(last), 1242)
    assert [(d["side"], d["file"], d["position"]) for d in log["damage"]] == [("B", str(last), 1242)]
    assert f"{last}:1250: body CRC mismatch" in err
    code, out, _ = mqtool(capsys, "diff", a, b)
    assert code == 1 and "DIVERGED" in out and "is a clean prefix" not in out and "damaged B" in out
    # B damaged only past A's end: DAMAGED, exit 1
    for seg in sorted((a / "commitlog").iterdir())[-2:]:
        seg.unlink()
    code, out, _ = mqtool(capsys, "diff", a, b)
    assert code == 1 and "DAMAGED" in out and "is a clean prefix" not in out
    code, out, _ = mqtool(capsys, "diff", a, b, "--json")
    assert code == 1 and json.loads(out)["verdict"] == "damaged"
